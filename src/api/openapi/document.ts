// The OpenAPI 3.0.3 document, generated from the route table (src/http/router.ts) and the very JSON
// Schemas that validate request bodies (src/http/schemas.ts), so what is documented is what runs.
// Served at /swagger/v1/swagger.json (src/api/routes/swagger.ts).
import { INVALID_API_KEY } from '../../http/auth.js';
import type { AuthRequirement, ResponseDoc, Route } from '../../http/router.js';
import { REQUEST_SCHEMAS } from '../../http/schemas.js';
import { CATEGORY_BODY } from '../../settings/schemas.js';
import { PROBLEM, RESPONSE_SCHEMAS, ref } from './components.js';
import { CATEGORY_EXAMPLES, PARAMETER_EXAMPLES, REQUEST_EXAMPLES } from './examples.js';
import { apiDescription } from './description.js';
import { toOpenApiSchema } from './json-schema.js';

type Json = Record<string, unknown>;

export interface OpenApiOptions {
  /** The service's version, shown as info.version. */
  version: string;
  /** `ApiKeys` is non-empty: operations marked `auth.apiKey` then require `X-API-Key`. */
  apiKeysEnabled: boolean;
  /** `VoiceService.RequireDeviceToken` (default true): the voice operations then require a bearer token. */
  requireDeviceToken?: boolean;
  /** `Hub.AllowStatefulReconnects` (default true): negotiate offers stateful reconnect to clients that ask. */
  statefulReconnect?: boolean;
}

const TAG_DESCRIPTIONS: Record<string, string> = {
  Devices: 'Registration, status and metrics, tokens, removal.',
  Voice: 'Voice sessions; the audio itself goes through the hub at /voice-hub (see the description above).',
  Configuration: 'Settings by category: voice, device, mqtt.',
  Health: 'For monitoring and field technicians (`voice-hub health` prints the same as a table).',
};

const PARAMETER_DOCS: Record<string, { description: string; schema: Json }> = {
  deviceId: { description: 'The `deviceId` the device registered with.', schema: { type: 'string', minLength: 1 } },
  category: { description: 'Configuration category.', schema: { type: 'string', enum: Object.keys(CATEGORY_BODY) } },
};

export const SECURITY_SCHEMES: Json = {
  bearer: {
    type: 'http',
    scheme: 'bearer',
    bearerFormat: 'JWT',
    description:
      'A device token (from POST /api/device/register or POST /api/device/{deviceId}/token) or an admin token ' +
      '(minted on the box: `voice-hub token admin`). Each operation says which one it needs.',
  },
  apiKey: {
    type: 'apiKey',
    in: 'header',
    name: 'X-API-Key',
    description: 'One of the configured `ApiKeys`. Applies only when `ApiKeys` is configured (non-empty); otherwise no key is needed.',
  },
};

/** All component schemas: the response schemas and every request schema in its OpenAPI 3.0 form. */
export function componentSchemas(): Record<string, Json> {
  const out = new Map<string, Json>(Object.entries(RESPONSE_SCHEMAS).map(([name, s]) => [name, structuredClone(s)]));
  for (const [name, schema] of Object.entries(REQUEST_SCHEMAS)) {
    if (out.has(name)) throw new Error(`schema name ${name} is both a request and a response schema`);
    out.set(name, toOpenApiSchema(schema, name));
  }
  return Object.fromEntries(out);
}

export function buildOpenApiDocument(routes: readonly Route[], opts: OpenApiOptions): Json {
  const settings = {
    apiKeysEnabled: opts.apiKeysEnabled,
    requireDeviceToken: opts.requireDeviceToken ?? true,
    statefulReconnect: opts.statefulReconnect ?? true,
  };
  const documented = routes.filter((r) => r.documented !== false);
  const schemas = componentSchemas();
  const paths: Record<string, Json> = {};
  const operationIds = new Set<string>();
  for (const route of documented) {
    if (operationIds.has(route.operationId)) throw new Error(`operationId ${route.operationId} is used twice`);
    operationIds.add(route.operationId);
    if (route.body && !(route.body in schemas)) throw new Error(`${route.operationId}: no request schema named ${route.body}`);
    const item = (paths[route.path] ??= {});
    const method = route.method.toLowerCase();
    if (method in item) throw new Error(`two routes for ${route.method} ${route.path}`);
    item[method] = operation(route, settings);
  }
  const tags = [...new Set(documented.map((r) => r.tag))];
  return {
    openapi: '3.0.3',
    info: {
      title: 'voice-hub',
      version: opts.version,
      description: apiDescription(settings),
      license: { name: 'MIT' },
    },
    tags: tags.map((name) => (TAG_DESCRIPTIONS[name] ? { name, description: TAG_DESCRIPTIONS[name] } : { name })),
    paths,
    components: { schemas, securitySchemes: structuredClone(SECURITY_SCHEMES) },
  };
}

function operation(route: Route, settings: { apiKeysEnabled: boolean; requireDeviceToken: boolean }): Json {
  const params = [...route.path.matchAll(/\{([^{}]+)\}/g)].map((m) => m[1]!);
  const security = securityOf(route.auth, settings);
  return {
    tags: [route.tag],
    summary: route.summary,
    description: authText(route.auth, settings),
    operationId: route.operationId,
    ...(params.length > 0
      ? {
          parameters: params.map((name) => ({
            name,
            in: 'path',
            required: true,
            description: PARAMETER_DOCS[name]?.description ?? name,
            schema: PARAMETER_DOCS[name]?.schema ?? { type: 'string' },
            ...(PARAMETER_EXAMPLES[name] !== undefined ? { example: PARAMETER_EXAMPLES[name] } : {}),
          })),
        }
      : {}),
    ...(route.body ? { requestBody: { required: true, content: { 'application/json': { schema: ref(route.body), ...bodyExamples(route.body) } } } } : {}),
    responses: responses(route),
    ...(security ? { security } : {}),
  };
}

/**
 * The media type's example: the request schema's own, or for the category update (whose schema depends
 * on {category}) one named example per category.
 */
function bodyExamples(schemaName: string): Json {
  if (REQUEST_EXAMPLES[schemaName]) return { example: structuredClone(REQUEST_EXAMPLES[schemaName]) };
  if (schemaName === 'ConfigCategoryUpdate') {
    return {
      examples: Object.fromEntries(
        Object.entries(CATEGORY_EXAMPLES).map(([category, value]) => [category, { summary: `${category} settings`, value: structuredClone(value) }]),
      ),
    };
  }
  return {};
}

/** One requirement object: every scheme in it is needed together (OpenAPI: keys of one object are ANDed). */
function securityOf(auth: AuthRequirement, settings: { apiKeysEnabled: boolean; requireDeviceToken: boolean }): Json[] | undefined {
  const needs: Record<string, string[]> = {};
  if (auth.apiKey && settings.apiKeysEnabled) needs.apiKey = [];
  if (auth.bearer === 'any' || auth.bearer === 'admin' || (auth.bearer === 'voice' && settings.requireDeviceToken)) needs.bearer = [];
  return Object.keys(needs).length > 0 ? [needs] : undefined;
}

function authText(auth: AuthRequirement, settings: { apiKeysEnabled: boolean; requireDeviceToken: boolean }): string {
  const lines: string[] = [];
  if (auth.bearer === 'admin') {
    lines.push('**Needs** an admin token: `Authorization: Bearer <admin token>`, minted on the box with `voice-hub token admin`.');
  } else if (auth.bearer === 'any') {
    lines.push(
      '**Needs** `Authorization: Bearer` with a device token or an admin token. Where the path names a device, ' +
        'a device token must be that device\'s own.',
    );
  } else if (auth.bearer === 'voice') {
    lines.push(
      "**Needs** the device token of the session's device (or an admin token) as `Authorization: Bearer` while " +
        '`VoiceService.RequireDeviceToken` is true (the default; ' +
        `on this server it is ${settings.requireDeviceToken ? 'on' : 'off, so no token is needed'}).`,
    );
  }
  if (auth.apiKey) {
    lines.push(
      '**X-API-Key**: one of the configured `ApiKeys`; applies only when `ApiKeys` is configured (non-empty). ' +
        `A missing or unknown key is answered 401 with the plain-text body \`${INVALID_API_KEY}\`. ` +
        `On this server ApiKeys is ${settings.apiKeysEnabled ? 'configured, so the key is required' : 'empty, so no key is needed'}.`,
    );
  }
  if (lines.length === 0) lines.push('No authentication.');
  return lines.join('\n\n');
}

/**
 * The route's own responses plus those the HTTP layer (src/http/server.ts) gives any route with a body
 * or an auth requirement, when the route does not list them itself.
 */
function responses(route: Route): Json {
  const docs = new Map<number, ResponseDoc>(Object.entries(route.responses).map(([code, doc]) => [Number(code), doc]));
  const add = (code: number, doc: ResponseDoc): void => {
    if (!docs.has(code)) docs.set(code, doc);
  };
  if (route.body) {
    add(400, PROBLEM.validation);
    add(413, { description: 'Body larger than Server.MaxBodyBytes', ...PROBLEM.any });
    add(415, { description: 'Body is not JSON (Content-Type must be application/json)', ...PROBLEM.any });
  }
  if (route.auth.bearer === 'any' || route.auth.bearer === 'admin' || route.auth.bearer === 'voice') add(401, PROBLEM.unauthorized);
  if (route.auth.bearer === 'admin') add(403, { description: 'Not an admin token', ...PROBLEM.any });
  if (route.auth.device) add(403, { description: 'Token of another device', ...PROBLEM.any });
  if (route.auth.apiKey) add(401, { description: 'X-API-Key missing or not accepted (plain text)', contentType: 'text/plain' });

  const apiKey401 = { schema: { type: 'string', example: INVALID_API_KEY } };
  const out: Record<string, Json> = {};
  for (const code of [...docs.keys()].sort((a, b) => a - b)) {
    const doc = docs.get(code)!;
    const content: Record<string, Json> = {};
    const type = doc.contentType ?? 'application/json';
    const schema = doc.schema ?? (type.startsWith('text/') ? { type: 'string' } : undefined);
    if (schema) content[type] = { schema };
    for (const [other, otherSchema] of Object.entries(doc.alternatives ?? {})) content[other] = { schema: otherSchema };
    let description = doc.description;
    // The API-key check answers plain text, whatever else the route's 401 covers (as the interface requires).
    if (code === 401 && route.auth.apiKey) {
      if (!content['text/plain']) description += '; or X-API-Key missing or not accepted (plain text)';
      content['text/plain'] = apiKey401;
    }
    out[String(code)] = { description, ...(Object.keys(content).length > 0 ? { content } : {}) };
  }
  return out;
}
