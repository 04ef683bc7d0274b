// The OpenAPI 3.0.3 document, generated from the route table (src/http/router.ts) and the very JSON
// Schemas that validate request bodies (src/http/schemas.ts), so what is documented is what runs.
// Served at /swagger/v1/swagger.json (src/api/routes/swagger.ts).
import { bearerChecked, INVALID_API_KEY } from '../../http/auth.js';
import type { AuthRequirement, ResponseDoc, Route } from '../../http/router.js';
import { JSON_MEDIA_RANGES } from '../../http/json-media-type.js';
import { nullsReadAsAbsent } from '../../http/null-as-absent.js';
import { REQUEST_SCHEMAS } from '../../http/schemas.js';
import { CATEGORY_BODY, CATEGORY_VALUE_SCHEMAS } from '../../settings/schemas.js';
import { PROBLEM, RESPONSE_SCHEMAS, ref } from './components.js';
import { CATEGORY_EXAMPLES, PARAMETER_EXAMPLES, REQUEST_EXAMPLES } from './examples.js';
import { apiDescription, type HubFigures } from './description.js';
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
  /** The hub settings the description quotes: the server's `Hub` configuration. */
  hub: HubFigures;
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

/**
 * All component schemas: the response schemas and every request schema in its OpenAPI 3.0 form, with
 * the nulls validation reads as absent (null-as-absent.ts) allowed, so a body the document calls
 * invalid is not one the service takes.
 */
export function componentSchemas(): Record<string, Json> {
  const out = new Map<string, Json>(Object.entries(RESPONSE_SCHEMAS).map(([name, s]) => [name, structuredClone(s)]));
  // The categories' values, answered by GET and PUT /api/config/{category}: made from the same keys as
  // their write schemas (settings/schemas.ts), so in JSON Schema to convert as those are.
  for (const [name, schema] of Object.entries(CATEGORY_VALUE_SCHEMAS)) out.set(name, toOpenApiSchema(schema, name));
  for (const [name, schema] of Object.entries(REQUEST_SCHEMAS)) {
    if (out.has(name)) throw new Error(`schema name ${name} is both a request and a response schema`);
    out.set(name, toOpenApiSchema(nullsReadAsAbsent(schema), name));
  }
  // The category update's own schema takes any object: the handler applies the category's schema once
  // {category} is known (CATEGORY_BODY). OpenAPI 3.0 cannot make a body's schema depend on a path
  // parameter, so the document says the nearest truth: one of those schemas, each of which refuses
  // what none of the categories has.
  const update = out.get('ConfigCategoryUpdate')!;
  out.set('ConfigCategoryUpdate', { ...update, anyOf: Object.values(CATEGORY_BODY).map((name) => ref(name)) });
  return Object.fromEntries(out);
}

/** What of the configuration decides which checks a route makes on this server. */
interface AuthSettings {
  apiKeysEnabled: boolean;
  requireDeviceToken: boolean;
}

export function buildOpenApiDocument(routes: readonly Route[], opts: OpenApiOptions): Json {
  const settings = {
    apiKeysEnabled: opts.apiKeysEnabled,
    requireDeviceToken: opts.requireDeviceToken ?? true,
    statefulReconnect: opts.statefulReconnect ?? true,
    hub: opts.hub,
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

function operation(route: Route, settings: AuthSettings): Json {
  const params = [...route.path.matchAll(/\{([^{}]+)\}/g)].map((m) => m[1]!);
  const security = securityOf(route.auth, settings);
  return {
    tags: [route.tag],
    summary: route.summary,
    description: [authText(route.auth, settings), ...(route.anyMethod ? [ANY_METHOD_TEXT(route.method)] : [])].join('\n\n'),
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
    ...(route.body ? { requestBody: { required: true, content: requestContent(route.body) } } : {}),
    responses: responses(route, settings),
    ...(security ? { security } : {}),
  };
}

/** The body's schema and examples under each media type the pipeline reads as JSON, as Swashbuckle lists them. */
function requestContent(schemaName: string): Json {
  return Object.fromEntries(JSON_MEDIA_RANGES.map((range) => [range, { schema: ref(schemaName), ...bodyExamples(schemaName) }]));
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

/** Of a route that also answers the methods no other route of its path names (router.ts `anyMethod`): no 405 there. */
const ANY_METHOD_TEXT = (method: string): string =>
  `Every method that no other operation of this path names (\`POST\`, \`PUT\`, ...) is answered as \`${method}\`: this path has no 405.`;

/** The checks a route makes on this server, as the pipeline and its handler make them. */
interface Checks {
  /** X-API-Key: 401 in plain text. */
  apiKey: boolean;
  /** A bearer token: 401 as a problem. */
  bearer: boolean;
  /** An admin token: 403 for a device token. */
  admin: boolean;
  /** A device token must be of the device the path or the body names: 403 for another device's. */
  ownDevice: boolean;
}

function checksOf(auth: AuthRequirement, settings: AuthSettings): Checks {
  const bearer = bearerChecked(auth, settings.requireDeviceToken);
  return {
    apiKey: auth.apiKey === true && settings.apiKeysEnabled,
    bearer,
    admin: bearer && auth.bearer === 'admin',
    ownDevice: bearer && (auth.device !== undefined || auth.deviceInBody === true),
  };
}

/** One requirement object: every scheme in it is needed together (OpenAPI: keys of one object are ANDed). */
function securityOf(auth: AuthRequirement, settings: AuthSettings): Json[] | undefined {
  const checks = checksOf(auth, settings);
  const needs: Record<string, string[]> = {};
  if (checks.apiKey) needs.apiKey = [];
  if (checks.bearer) needs.bearer = [];
  return Object.keys(needs).length > 0 ? [needs] : undefined;
}

function authText(auth: AuthRequirement, settings: AuthSettings): string {
  const lines: string[] = [];
  if (auth.bearer === 'admin') {
    lines.push('**Needs** an admin token: `Authorization: Bearer <admin token>`, minted on the box with `voice-hub token admin`.');
  } else if (auth.bearer === 'any') {
    lines.push(
      '**Needs** `Authorization: Bearer` with a device token or an admin token.' +
        (auth.device ? ` A device token must be that of the device \`{${auth.device}}\` names.` : ''),
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
 * The route's own responses plus those the HTTP layer (src/http/pipeline.ts) gives it on this server: the
 * body's 413 on every route, its 400 and 415 where it takes one, the 400 of a path parameter's encoding,
 * and the 401 and 403 of the checks it makes (checksOf). A status both give names both causes.
 */
function responses(route: Route, settings: AuthSettings): Json {
  const docs = new Map<number, ResponseDoc[]>(Object.entries(route.responses).map(([code, doc]) => [Number(code), [doc]]));
  const add = (code: number, doc: ResponseDoc): void => {
    const list = docs.get(code);
    if (!list) docs.set(code, [doc]);
    else if (!list.some((d) => d.description === doc.description)) list.push(doc);
  };
  const checks = checksOf(route.auth, settings);
  // Every route has the body limit, one that takes no body too (it reads and drops one under it).
  add(413, { description: 'Body larger than Server.MaxBodyBytes', ...PROBLEM.any });
  if (route.body) {
    add(400, PROBLEM.validation);
    add(415, { description: `Body is not JSON: Content-Type must be ${JSON_MEDIA_RANGES.join(', ')}, in UTF-8 or UTF-16`, ...PROBLEM.any });
  }
  // A path parameter that is not valid percent-encoding (`%ZZ`, a lone surrogate's UTF-8) is a 400 on
  // every route that takes one, before any other check. Named after the body's 400, whose schema is richer.
  if (route.path.includes('{')) add(400, { description: 'The request path is not valid percent-encoding', ...PROBLEM.any });
  if (checks.apiKey) add(401, { description: 'X-API-Key missing or not accepted (plain text)', contentType: 'text/plain', schema: { type: 'string', example: INVALID_API_KEY } });
  if (checks.bearer) add(401, PROBLEM.unauthorized);
  if (checks.admin) add(403, { description: 'Not an admin token', ...PROBLEM.any });
  if (checks.ownDevice) add(403, { description: 'Token of another device', ...PROBLEM.any });

  const out: Record<string, Json> = {};
  for (const code of [...docs.keys()].sort((a, b) => a - b)) {
    const list = docs.get(code)!;
    const content: Record<string, Json> = {};
    for (const doc of list) {
      const type = doc.contentType ?? 'application/json';
      const schema = doc.schema ?? (type.startsWith('text/') ? { type: 'string' } : undefined);
      if (schema && !content[type]) content[type] = { schema };
      for (const [other, otherSchema] of Object.entries(doc.alternatives ?? {})) content[other] ??= { schema: otherSchema };
    }
    const description = list.map((d) => d.description).join('; or ');
    // An answer to HEAD has no content, whatever a GET of the same path would carry.
    const hasContent = route.method !== 'HEAD' && Object.keys(content).length > 0;
    // A header only some of the answers under one status carry (the bearer 401's challenge, not the
    // API key's) is listed, and not required: OpenAPI headers are optional unless marked so.
    const headers = Object.fromEntries(
      list.flatMap((d) => Object.entries(d.headers ?? {})).map(([name, text]) => [name, { description: text, schema: { type: 'string' } }]),
    );
    out[String(code)] = { description, ...(Object.keys(headers).length > 0 ? { headers } : {}), ...(hasContent ? { content } : {}) };
  }
  return out;
}
