// The HTTP API on every endpoint: the routes over the domain, the API document built from them, one router
// and one request pipeline behind every listener and behind `inject`.
import { configRoutes } from '../api/routes/config.js';
import { deviceRoutes } from '../api/routes/devices.js';
import { healthRoutes } from '../api/routes/health.js';
import { swaggerRoutes } from '../api/routes/swagger.js';
import { voiceRoutes } from '../api/routes/voice.js';
import { buildOpenApiDocument } from '../api/openapi/document.js';
import type { VerifyToken } from '../auth/verify.js';
import type { AppConfig } from '../config/types.js';
import type { DeviceRegistry } from '../devices/registry.js';
import type { HealthCheck } from '../health/checks.js';
import { createInject, type Inject } from '../http/inject.js';
import { httpPipeline } from '../http/pipeline.js';
import { Router, type Route } from '../http/router.js';
import { mountHttpApi } from '../http/server.js';
import { InFlightRequests } from '../http/in-flight.js';
import type { Logger } from '../log/logger.js';
import type { ConfigCategories } from '../settings/categories.js';
import { builtVersion } from '../version.js';
import type { VoiceSessionService } from '../voice/sessions.js';
import type { Endpoints } from './endpoints.js';

export interface HttpDeps {
  endpoints: Endpoints;
  registry: DeviceRegistry;
  sessions: VoiceSessionService;
  categories: ConfigCategories;
  checks: Record<string, HealthCheck>;
  verifyToken: VerifyToken;
  logger: Logger;
  bundleDir: string | undefined;
}

export interface HttpApi {
  readonly router: Router;
  /** Runs a request through the HTTP API in this process, as the listeners do, without a socket. */
  readonly inject: Inject;
  /** Requests of the listeners not answered yet: a shutdown waits for them. */
  readonly inFlight: InFlightRequests;
}

export function createHttp(config: AppConfig, deps: HttpDeps): HttpApi {
  const routes: Route[] = [
    ...deviceRoutes(deps.registry),
    ...voiceRoutes(deps.sessions, deps.endpoints.listeningAddress),
    ...configRoutes(deps.categories),
    ...healthRoutes(deps.checks),
  ];
  // The document describes every route, its own included; it is built when first asked for.
  routes.push(
    ...swaggerRoutes(
      () =>
        buildOpenApiDocument(routes, {
          version: builtVersion(),
          apiKeysEnabled: config.ApiKeys.length > 0,
          requireDeviceToken: config.VoiceService.RequireDeviceToken,
          statefulReconnect: config.Hub.AllowStatefulReconnects,
          hub: config.Hub,
        }),
      { bundleDir: deps.bundleDir },
    ),
  );
  const router = new Router(routes);
  const pipeline = httpPipeline({
    router,
    maxBodyBytes: config.Server.MaxBodyBytes,
    auth: {
      apiKeys: config.ApiKeys,
      verifyToken: deps.verifyToken,
      isTokenCurrent: (p) => deps.registry.isTokenCurrent(p),
      requireDeviceTokenForVoice: config.VoiceService.RequireDeviceToken,
    },
    logger: deps.logger.child('Http'),
    accessLog: deps.logger.child('Microsoft.AspNetCore'),
    gate: deps.endpoints.gate,
    cors: deps.endpoints.cors,
  });
  const inFlight = new InFlightRequests();
  for (const { app, secure } of deps.endpoints.apps) mountHttpApi(app, pipeline, secure, inFlight);
  return { router, inject: createInject(pipeline), inFlight };
}
