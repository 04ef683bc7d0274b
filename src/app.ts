// createApp(config) -> {start, stop}: explicit wiring of the daemon's parts. Nothing here touches
// process, argv or signals (that is src/main.ts), so tests run the whole service in-process.
import os from 'node:os';
import { hubSessionBridge } from './api/hub-session-bridge.js';
import { voiceHubMethods } from './api/hub-methods.js';
import { loadSigningKey } from './auth/signing-key.js';
import { TokenService } from './auth/tokens.js';
import { tokenVerifier } from './auth/verify.js';
import type { LoadedConfig } from './config/types.js';
import { DeviceRegistry } from './devices/registry.js';
import { createDatabaseCheck, createVoiceServiceCheck, type HealthCheck } from './health/checks.js';
import { attachHub, type HubListener, type VoiceHubServer } from './hub/index.js';
import { requestGate } from './http/gate.js';
import { hostMatcher, originHost } from './http/hosts.js';
import { Router, type Route } from './http/router.js';
import { configRoutes } from './http/routes/config.js';
import { deviceRoutes } from './http/routes/devices.js';
import { healthRoutes } from './http/routes/health.js';
import { swaggerRoutes } from './http/routes/swagger.js';
import { voiceRoutes } from './http/routes/voice.js';
import { createInject, type Inject } from './http/inject.js';
import { httpPipeline } from './http/pipeline.js';
import { listen, mountHttpApi, type Listening } from './http/server.js';
import { loadCaFile, loadTlsFiles, type TlsFiles } from './http/tls.js';
import { loadNativeUws } from './http/uws-native.js';
import { createLogger, type Logger } from './log/logger.js';
import { ConfiguredMqttPublisher } from './mqtt/configured.js';
import { MqttPublisher } from './mqtt/publisher.js';
import { mqttSessionEvents } from './mqtt/session-events.js';
import { buildOpenApiDocument } from './openapi/document.js';
import { builtVersion } from './version.js';
import { ConfigCategories } from './settings/categories.js';
import { SQL_WASM } from './runtime/asset-manifest.mjs';
import { assertBuildComplete, requireAsset } from './runtime/assets.js';
import { openStore } from './store/index.js';
import type { Store } from './store/types.js';
import { sessionBudgets } from './voice/budgets.js';
import { VoiceSessionService } from './voice/sessions.js';

export interface AppDeps {
  logger?: Logger;
  /** Folder of the bundle, where build.mjs puts the run-time assets (src/runtime/asset-manifest.mjs). */
  bundleDir?: string;
}

export interface RunningApp {
  readonly port: number;
  /** The HTTPS port, when a certificate is configured. */
  readonly httpsPort: number | undefined;
  readonly store: Store;
  readonly router: Router;
  readonly hub: VoiceHubServer;
  readonly sessions: VoiceSessionService;
  readonly mqtt: ConfiguredMqttPublisher;
  /** Runs a request through the HTTP API in this process, as the listeners do, without a socket. */
  readonly inject: Inject;
}

export interface App {
  start(): Promise<RunningApp>;
  /** Stops accepting, ends sessions, flushes storage. Idempotent. */
  stop(): Promise<void>;
}

interface Parts {
  listeners: Listening[];
  hub?: VoiceHubServer;
  sessions?: VoiceSessionService;
  mqtt?: ConfiguredMqttPublisher;
  store?: Store;
}

export function createApp(loaded: LoadedConfig, deps: AppDeps = {}): App {
  const { config } = loaded;
  const logger = deps.logger ?? createLogger({ levels: config.Logging.LogLevel });
  const parts: Parts = { listeners: [] };
  let stopping: Promise<void> | undefined;

  async function start(): Promise<RunningApp> {
    // Checked before anything opens: a bad certificate or CA file is a configuration problem (exit 78).
    const tls = loadTlsFiles(config.Server);
    const voiceCa = loadCaFile(config.VoiceService.CaFile);
    const native = loadNativeUws({ bundleDir: deps.bundleDir });
    logger.info(`uWebSockets.js native addon loaded from ${native.addonPath}`);
    // Every other file of the build too: one it lacks is named now, not at the first request for it.
    assertBuildComplete(deps.bundleDir);

    const store = await openStore({
      dataDir: config.Storage.DataDir,
      flushIntervalMs: config.Storage.FlushInterval,
      sessionHistory: config.Storage.SessionHistory,
      logger: logger.child('Storage'),
      wasmBinary: requireAsset(SQL_WASM, deps.bundleDir),
    });
    parts.store = store;
    try {
      return await wire(native.uws, store, tls, voiceCa);
    } catch (e) {
      await stop();
      throw e;
    }
  }

  async function wire(uws: ReturnType<typeof loadNativeUws>['uws'], store: Store, tls: TlsFiles | undefined, voiceCa: Buffer | undefined): Promise<RunningApp> {
    const tokens = new TokenService(loadSigningKey(config.Auth.SigningKey, config.Storage.DataDir));
    const categories = new ConfigCategories(loaded, store.settings);
    const registry = new DeviceRegistry({ repo: store.devices, tokens, settings: () => categories.device() });
    const verifyToken = tokenVerifier(tokens, (p) => registry.isTokenCurrent(p));

    // MQTT is optional: an empty broker address switches it off. A PUT of the category applies at once.
    const mqttLogger = logger.child('Mqtt');
    const mqtt = new ConfiguredMqttPublisher({
      create: (settings) =>
        new MqttPublisher({
          ...settings,
          password: config.Mqtt.Password,
          topicPrefix: config.Mqtt.TopicPrefix,
          homeAssistantDiscovery: config.Mqtt.HomeAssistantDiscovery,
          discoveryPrefix: config.Mqtt.DiscoveryPrefix,
          logger: mqttLogger,
        }),
      devices: () => store.devices.list(),
      logger: mqttLogger,
    });
    categories.onChange((category) => {
      if (category === 'mqtt') void mqtt.apply(categories.mqtt());
    });
    parts.mqtt = mqtt;

    // The same routes and hub on plain HTTP and, with a certificate, on HTTPS beside it.
    const listeners: HubListener[] = [{ app: uws.App(), secure: false }];
    if (tls) listeners.push({ app: uws.SSLApp({ cert_file_name: tls.certFile, key_file_name: tls.keyFile }), secure: true });
    const sessions = new VoiceSessionService({
      config: {
        serverUrl: config.VoiceService.ServerUrl,
        apiKey: config.VoiceService.ApiKey,
        connectTimeoutMs: config.VoiceService.ConnectTimeout,
        sessionIdleTimeoutMs: config.VoiceService.SessionIdleTimeout,
        enableVoice: () => categories.voice().enableVoice,
        budgets: sessionBudgets(config.VoiceService),
      },
      sessions: store.sessions,
      deviceExists: (id) => registry.exists(id),
      voiceDefaults: () => {
        const v = categories.voice();
        return { sampleRate: v.audioSampleRate, channels: v.audioChannels };
      },
      listeners: [mqttSessionEvents(mqtt)],
      logger: logger.child('Upstream'),
      ...(voiceCa ? { link: { ca: voiceCa } } : {}),
    });
    parts.sessions = sessions;
    await sessions.recordInterrupted();

    registry.addListener({
      deviceChanged: (d) => mqtt.publishDeviceState(d),
      deviceDeleted: async (id) => {
        mqtt.removeDevice(id);
        await sessions.stopAllForDevice(id);
      },
    });

    const allowedHost = hostMatcher(config.AllowedHosts);
    const serverName = ['0.0.0.0', '::'].includes(config.Server.Host) ? os.hostname() : config.Server.Host;
    let httpsPort: number | undefined;
    const gate = requestGate({
      allowedHosts: config.AllowedHosts,
      httpsRedirectPort: config.Server.HttpsRedirect ? () => httpsPort : undefined,
      fallbackHost: serverName.includes(':') ? `[${serverName}]` : serverName,
    });
    const hub: VoiceHubServer = attachHub(listeners, {
      path: '/voice-hub',
      methods: voiceHubMethods({
        verifyToken,
        getSession: (id) => sessions.get(id),
        sendAudio: (id, opus) => sessions.sendAudio(id, opus),
        hub: () => hub,
      }),
      maximumReceiveMessageSize: config.Hub.MaximumReceiveMessageSize,
      maximumFrameSize: config.Hub.MaximumFrameSize,
      messagesPerTurn: config.Hub.MessagesPerTurn,
      budgets: {
        unauthenticated: { perSecond: config.Hub.UnauthenticatedMessageRate, burst: config.Hub.UnauthenticatedMessageBurst },
        authenticated: { perSecond: config.Hub.MessageRate, burst: config.Hub.MessageBurst },
      },
      keepAliveIntervalMs: config.Hub.KeepAliveInterval,
      clientTimeoutMs: config.Hub.ClientTimeout,
      allowedOrigins: (origin) => {
        const host = originHost(origin);
        return host !== undefined && allowedHost(host);
      },
      // A connection-level token is optional (JoinSession carries the device token), but a bad one is refused.
      authenticate: (token) => (token === undefined ? undefined : verifyToken(token)),
      admit: gate,
      logger: logger.child('Hub'),
    });
    parts.hub = hub;
    sessions.addListener(hubSessionBridge(hub));

    const checks: Record<string, HealthCheck> = {
      'voice-service': createVoiceServiceCheck({
        serverUrl: config.VoiceService.ServerUrl,
        apiKey: config.VoiceService.ApiKey,
        enabled: () => categories.voice().enableVoice,
        timeoutMs: config.VoiceService.ConnectTimeout,
        ca: voiceCa,
      }),
      database: createDatabaseCheck(store, { dataDir: config.Storage.DataDir, minFreeBytes: config.Storage.MinFreeBytes }),
      mqtt: mqtt.healthCheck(),
    };

    // What websocketUrl names when a request has an empty Host: this machine and the port it came in on.
    let plainPort = config.Server.Port;
    const listeningAddress = (secure: boolean): string =>
      `${serverName.includes(':') ? `[${serverName}]` : serverName}:${secure ? httpsPort : plainPort}`;
    const routes: Route[] = [
      ...deviceRoutes(registry),
      ...voiceRoutes(sessions, listeningAddress),
      ...configRoutes(categories),
      ...healthRoutes(checks),
      ...swaggerRoutes(
        () =>
          buildOpenApiDocument(router.routes, {
            version: builtVersion(),
            apiKeysEnabled: config.ApiKeys.length > 0,
            requireDeviceToken: config.VoiceService.RequireDeviceToken,
          }),
        { bundleDir: deps.bundleDir },
      ),
    ];
    const router = new Router(routes);
    // One pipeline behind every listener and behind `inject`.
    const pipeline = httpPipeline({
      router,
      maxBodyBytes: config.Server.MaxBodyBytes,
      auth: {
        apiKeys: config.ApiKeys,
        verifyToken,
        requireDeviceTokenForVoice: config.VoiceService.RequireDeviceToken,
      },
      logger: logger.child('Http'),
      accessLog: logger.child('Microsoft.AspNetCore'),
      gate,
    });
    for (const { app, secure } of listeners) mountHttpApi(app, pipeline, secure);

    const plain = await listen(uws, listeners[0]!.app, config.Server.Host, config.Server.Port);
    parts.listeners.push(plain);
    plainPort = plain.port;
    if (tls) {
      const secure = await listen(uws, listeners[1]!.app, config.Server.Host, config.Server.HttpsPort);
      parts.listeners.push(secure);
      httpsPort = secure.port;
      logger.info(`listening on https://${config.Server.Host}:${secure.port} (certificate ${tls.subject}; ${tls.names}; valid to ${tls.validTo.toISOString()})`);
      if (tls.validTo.getTime() < Date.now()) logger.warn(`the HTTPS certificate ${tls.certFile} expired on ${tls.validTo.toISOString()}: devices will refuse it`);
    }
    mqtt.start(categories.mqtt());
    logger.info(`listening on http://${config.Server.Host}:${plain.port}`);
    return { port: plain.port, httpsPort, store, router, hub, sessions, mqtt, inject: createInject(pipeline) };
  }

  // Order matters: stop taking work, end sessions (their end records are written), then flush.
  function stop(): Promise<void> {
    stopping ??= (async () => {
      for (const listener of parts.listeners) listener.close();
      parts.hub?.closeAll({ allowReconnect: true });
      await parts.sessions?.shutdown().catch((e: unknown) => logger.warn(`ending sessions: ${String(e)}`));
      await parts.mqtt?.close().catch((e: unknown) => logger.warn(`closing MQTT: ${String(e)}`));
      await parts.store?.close();
      logger.info('stopped');
    })();
    return stopping;
  }

  return { start, stop };
}
