// The OpenAPI document: valid OpenAPI 3, generated from the running service's own route table (a route
// without documentation fails here), request bodies from the schemas ajv validates with.
import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';
import { Validator } from '@seriousme/openapi-schema-validator';
import { Ajv } from 'ajv';
import { REQUEST_SCHEMAS } from '../../src/http/schemas.js';
import { buildOpenApiDocument } from '../../src/api/openapi/document.js';
import { toOpenApiSchema } from '../../src/api/openapi/json-schema.js';
import { TIME_SPAN_PATTERN } from '../../src/config/timespan.js';
import { nullsReadAsAbsent } from '../../src/http/null-as-absent.js';
import { CATEGORY_BODY } from '../../src/settings/schemas.js';
import { call } from '../support/http.js';
import { startService, type TestService } from '../support/service.js';

/* eslint-disable @typescript-eslint/no-explicit-any */
type Doc = any;

async function assertValidOpenApi(doc: Doc): Promise<void> {
  const validator = new Validator();
  const result = await validator.validate(structuredClone(doc));
  assert.equal(result.valid, true, `not valid OpenAPI: ${JSON.stringify(result.errors, null, 2)}`);
  assert.equal(validator.version, '3.0');
}

/** Every `$ref` in the document, with where it was found. */
function refs(node: unknown, at = '#', out: Array<[string, string]> = []): Array<[string, string]> {
  if (Array.isArray(node)) node.forEach((v, i) => refs(v, `${at}/${i}`, out));
  else if (node && typeof node === 'object') {
    for (const [k, v] of Object.entries(node)) {
      if (k === '$ref' && typeof v === 'string') out.push([at, v]);
      else refs(v, `${at}/${k}`, out);
    }
  }
  return out;
}

describe('JSON Schema to OpenAPI 3.0', () => {
  const cases: Array<[string, Record<string, unknown>, Record<string, unknown>]> = [
    ['nullable type', { type: ['number', 'null'], minimum: 0 }, { type: 'number', nullable: true, minimum: 0 }],
    ['null first', { type: ['null', 'string'] }, { type: 'string', nullable: true }],
    ['plain type kept', { type: 'string', maxLength: 3, default: '' }, { type: 'string', maxLength: 3, default: '' }],
    ['$schema and $id dropped', { $schema: 'http://json-schema.org/draft-07/schema#', $id: 'x', type: 'object' }, { type: 'object' }],
    ['const to enum', { const: 'opus' }, { enum: ['opus'] }],
    ['examples to example', { type: 'integer', examples: [16000, 8000] }, { type: 'integer', example: 16000 }],
    ['numeric exclusive bound', { type: 'number', exclusiveMinimum: 0 }, { type: 'number', minimum: 0, exclusiveMinimum: true }],
    [
      'nested properties, items, additionalProperties',
      { type: 'object', properties: { a: { type: 'array', items: { type: ['integer', 'null'] } } }, additionalProperties: { type: ['string', 'null'] } },
      { type: 'object', properties: { a: { type: 'array', items: { type: 'integer', nullable: true } } }, additionalProperties: { type: 'string', nullable: true } },
    ],
    ['combinators', { anyOf: [{ type: ['boolean', 'null'] }, { const: 1 }] }, { anyOf: [{ type: 'boolean', nullable: true }, { enum: [1] }] }],
    ['x- extensions kept', { type: 'string', 'x-expected': 'must be a span' }, { type: 'string', 'x-expected': 'must be a span' }],
    [
      'a time span kept, its form shown as the pattern parseTimeSpan reads',
      { type: 'string', 'x-timespan': { minimum: '00:00:01', maximum: '01:00:00' } },
      { type: 'string', 'x-timespan': { minimum: '00:00:01', maximum: '01:00:00' }, pattern: TIME_SPAN_PATTERN },
    ],
  ];
  for (const [name, input, expected] of cases) {
    test(name, () => {
      const before = structuredClone(input);
      assert.deepEqual(toOpenApiSchema(input), expected);
      assert.deepEqual(input, before, 'the input schema (compiled by ajv) must not change');
    });
  }

  const refused: Array<[string, Record<string, unknown>]> = [
    ['two real types', { type: ['string', 'number'] }],
    ['only null', { type: 'null' }],
    ['tuple items', { type: 'array', items: [{ type: 'string' }] }],
    ['if/then', { if: { type: 'string' }, then: { minLength: 1 } }],
    ['patternProperties deep inside', { type: 'object', properties: { a: { type: 'object', patternProperties: { '^x': {} } } } }],
  ];
  for (const [name, input] of refused) {
    test(`refuses ${name}`, () => assert.throws(() => toOpenApiSchema(input, 'Sample'), /Sample/));
  }

  test('every request schema converts', () => {
    for (const [name, schema] of Object.entries(REQUEST_SCHEMAS)) assert.doesNotThrow(() => toOpenApiSchema(schema, name), name);
  });

  // The service compiles them lazily without ajv's meta-schema check (start-up time): this is that check.
  test('every request schema is valid against the JSON Schema meta-schema and compiles', () => {
    const ajv = new Ajv({ strict: false });
    for (const [name, schema] of Object.entries(REQUEST_SCHEMAS)) {
      assert.equal(ajv.validateSchema(schema), true, `${name}: ${ajv.errorsText(ajv.errors)}`);
      assert.equal(typeof ajv.compile(schema), 'function', name);
    }
  });
});

describe('OpenAPI document of the running service', () => {
  let service: TestService;
  let doc: Doc;

  before(async () => {
    service = await startService();
    const res = await call(service.url, 'GET', '/swagger/v1/swagger.json');
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^application\/json/);
    doc = res.json;
  });

  test('validates as OpenAPI 3.0', async () => {
    assert.equal(doc.openapi, '3.0.3');
    await assertValidOpenApi(doc);
  });

  test('every route the router serves is documented, and nothing else', () => {
    const routes = service.app.router.routes;
    const undocumented = routes.filter((r) => r.documented === false);
    // Only the documentation itself may stay out of it.
    assert.ok(undocumented.length > 0);
    for (const r of undocumented) assert.match(r.path, /^\/swagger(\/|$)/, `${r.method} ${r.path} is left out of the document`);
    const expected = routes.filter((r) => r.documented !== false).map((r) => `${r.method} ${r.path} ${r.operationId}`);
    const actual: string[] = [];
    for (const [path, item] of Object.entries<Record<string, any>>(doc.paths)) {
      for (const [method, op] of Object.entries<any>(item)) actual.push(`${method.toUpperCase()} ${path} ${op.operationId}`);
    }
    assert.deepEqual(actual.sort(), expected.sort());
    // The ones the interface names, so an empty table cannot pass.
    for (const id of ['registerDevice', 'updateDeviceStatus', 'listDevices', 'startVoiceSession', 'getConfigCategory', 'health']) {
      assert.ok(expected.some((e) => e.endsWith(` ${id}`)), id);
    }
  });

  test('path parameters match the templates', () => {
    for (const r of service.app.router.routes.filter((x) => x.documented !== false)) {
      const op = doc.paths[r.path][r.method.toLowerCase()];
      const names = [...r.path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]);
      assert.deepEqual((op.parameters ?? []).map((p: any) => [p.name, p.in, p.required]), names.map((n) => [n, 'path', true]), r.operationId);
    }
  });

  test('request bodies are the converted REQUEST_SCHEMAS', () => {
    const withBody = service.app.router.routes.filter((r) => r.body !== undefined);
    assert.ok(withBody.length >= 6);
    for (const r of withBody) {
      const op = doc.paths[r.path][r.method.toLowerCase()];
      // The examples beside the schema are examples.test.ts's subject.
      const { example: _example, examples: _examples, ...media } = op.requestBody.content['application/json'];
      assert.deepEqual({ ...op.requestBody, content: { 'application/json': media } }, { required: true, content: { 'application/json': { schema: { $ref: `#/components/schemas/${r.body}` } } } });
      // With the nulls read as absent allowed (request-schemas.test.ts sends them); the category update
      // also names the category schemas its handler applies.
      const { anyOf, ...documented } = doc.components.schemas[r.body!];
      assert.deepEqual(documented, toOpenApiSchema(nullsReadAsAbsent(REQUEST_SCHEMAS[r.body!]!)), r.body);
      assert.deepEqual(anyOf, r.body === 'ConfigCategoryUpdate' ? Object.values(CATEGORY_BODY).map((name) => ({ $ref: `#/components/schemas/${name}` })) : undefined, r.body);
    }
    // The JSON Schema forms OpenAPI 3.0 lacks, as a reader sees them.
    const status = doc.components.schemas.DeviceStatusRequest.properties;
    assert.deepEqual(status.batteryLevel, { type: 'number', nullable: true, minimum: 0, maximum: 100, description: 'Battery charge in percent.' });
    assert.equal(status.temperature.type, 'number');
    assert.equal(status.temperature.nullable, true);
    assert.equal(JSON.stringify(doc).includes('$schema'), false);
  });

  test('every $ref resolves', () => {
    const all = refs(doc);
    assert.ok(all.length > 20);
    for (const [at, target] of all) {
      const m = /^#\/components\/schemas\/(.+)$/.exec(target);
      assert.ok(m && doc.components.schemas[m[1]!], `${at}: ${target} does not resolve`);
    }
  });

  test('responses: JSON, problem+json and the plain-text API-key 401', () => {
    const register = doc.paths['/api/device/register'].post;
    assert.deepEqual(register.responses['200'].content['application/json'].schema, { $ref: '#/components/schemas/TokenGrant' });
    assert.deepEqual(register.responses['400'].content['application/problem+json'].schema, { $ref: '#/components/schemas/ValidationProblemDetails' });
    // This server has no ApiKeys: no key is checked (documented-statuses.test.ts follows each setting).
    assert.equal(register.responses['401'], undefined);
    const withKeys = buildOpenApiDocument(service.app.router.routes, { version: '1', apiKeysEnabled: true, hub: service.loaded.config.Hub }) as Doc;
    assert.deepEqual(withKeys.paths['/api/device/register'].post.responses['401'].content, { 'text/plain': { schema: { type: 'string', example: 'Invalid API Key' } } });
    // The voice routes then have both 401s: a bad key (text) and a bad token (problem).
    const start = withKeys.paths['/api/voice/start'].post.responses['401'];
    assert.deepEqual(Object.keys(start.content).sort(), ['application/problem+json', 'text/plain']);
    assert.equal(start.description, 'X-API-Key missing or not accepted (plain text); or Missing, malformed, expired, revoked or forged token');
    // The HTTP layer's own answers to any body.
    assert.ok(register.responses['413'] && register.responses['415']);
    assert.deepEqual(Object.keys(doc.paths['/health'].get.responses), ['200', '413', '503'], 'a route without a body still has the body limit');
    // /health answers the status word alone to a client that prefers text/plain.
    assert.deepEqual(doc.paths['/health'].get.responses['200'].content['text/plain'].schema, { type: 'string', enum: ['Healthy', 'Degraded'] });
    assert.deepEqual(doc.paths['/health'].get.responses['503'].content['text/plain'].schema, { type: 'string', enum: ['Unhealthy'] });
    // The answers of a full data directory, of voice switched off and of a reconnecting upstream link.
    assert.match(doc.paths['/api/voice/stop'].post.responses['503'].description, /final record could not be written/);
    assert.match(doc.paths['/api/voice/message'].post.responses['503'].description, /disabled.*reconnecting/);
    // What the HTTP layer answers on any route, listed once in the description.
    assert.match(doc.info.description, /414 for a request target over 8192 bytes and 431 for header fields\s+over 32768 bytes/);
    assert.match(doc.info.description, /the Node 24 builds' HTTP layer answers 431 itself, with no\s+problem body, to any request head over 4096 bytes/);
  });

  test('security follows route.auth, and says which token', () => {
    const schemes = doc.components.securitySchemes;
    assert.deepEqual(schemes.bearer, { ...schemes.bearer, type: 'http', scheme: 'bearer', bearerFormat: 'JWT' });
    assert.deepEqual(schemes.apiKey, { ...schemes.apiKey, type: 'apiKey', in: 'header', name: 'X-API-Key' });
    const op = (path: string, method: string): any => doc.paths[path][method];
    assert.deepEqual(op('/api/device/list', 'get').security, [{ bearer: [] }]);
    assert.match(op('/api/device/list', 'get').description, /admin token/);
    assert.match(op('/api/device/list', 'get').description, /voice-hub token admin/);
    assert.deepEqual(op('/api/device/{deviceId}/status', 'put').security, [{ bearer: [] }]);
    assert.match(op('/api/device/{deviceId}/status', 'put').description, /device token/);
    // The test service has no ApiKeys: registration is open, and the document says so.
    assert.equal(op('/api/device/register', 'post').security, undefined);
    assert.match(op('/api/device/register', 'post').description, /only when `ApiKeys` is configured/);
    assert.deepEqual(op('/api/voice/start', 'post').security, [{ bearer: [] }]);
    assert.equal(op('/health', 'get').security, undefined);
  });

  test('with ApiKeys configured, X-API-Key is required together with the token', async () => {
    const withKeys = buildOpenApiDocument(service.app.router.routes, { version: '1.2.3', apiKeysEnabled: true, hub: service.loaded.config.Hub }) as Doc;
    await assertValidOpenApi(withKeys);
    assert.equal(withKeys.info.version, '1.2.3');
    assert.deepEqual(withKeys.paths['/api/device/register'].post.security, [{ apiKey: [] }]);
    assert.deepEqual(withKeys.paths['/api/voice/start'].post.security, [{ apiKey: [], bearer: [] }]);
    assert.match(withKeys.info.description, /ApiKeys is configured/);
    const noToken = buildOpenApiDocument(service.app.router.routes, { version: '1', apiKeysEnabled: false, requireDeviceToken: false, hub: service.loaded.config.Hub }) as Doc;
    assert.equal(noToken.paths['/api/voice/start'].post.security, undefined);
  });

  test('the description says whether this server offers stateful reconnect, as negotiate does', () => {
    assert.match(doc.info.description, /\*\*on this server it is offered to clients that ask for it\*\*/);
    assert.doesNotMatch(doc.info.description, /no stateful reconnect/);
    const off = buildOpenApiDocument(service.app.router.routes, { version: '1', apiKeysEnabled: false, statefulReconnect: false, hub: service.loaded.config.Hub }) as Doc;
    assert.match(off.info.description, /\*\*on this server it is off: negotiate never offers it\*\*/);
  });

  test("the description quotes this server's hub settings, not their defaults", async () => {
    assert.match(doc.info.description, /pings after `Hub\.KeepAliveInterval` \(15 s\)/);
    const tuned = await startService({
      flags: { 'Hub.KeepAliveInterval': '00:00:05', 'Hub.ClientTimeout': '00:01:00', 'Hub.MaximumReceiveMessageSize': 32768, 'Hub.DisconnectTimeout': '00:00:02.5000000' },
    });
    const text: string = (await call(tuned.url, 'GET', '/swagger/v1/swagger.json')).json.info.description;
    assert.ok(text.includes('The server pings after `Hub.KeepAliveInterval` (5 s) without traffic.'), text);
    assert.ok(text.includes('sends\nnothing for `Hub.ClientTimeout` (60 s) is closed with an error; as in ASP.NET Core the timeout starts with the\n' +
      "client's first ping, so one that never pings is kept while it listens."), text);
    assert.ok(text.includes('`Hub.MaximumReceiveMessageSize` (32768 bytes) closes the connection'), text);
    assert.ok(text.includes('waits `Hub.DisconnectTimeout` (2.5 s) for its client'), text);
    assert.doesNotMatch(text, /:5000\//, 'no port the server may not listen on');
  });

  test('the description explains the hub and the admin token', () => {
    const text: string = doc.info.description;
    for (const word of ['/voice-hub/negotiate', 'WebSockets', 'messagepack', 'json', 'JoinSession', 'SendAudioData', 'voice-hub token admin']) {
      assert.ok(text.includes(word), word);
    }
    for (const event of ['SessionJoined', 'Error', 'AudioProcessed', 'AudioResponse', 'AudioData', 'TextResponse', 'SessionEnded']) {
      assert.match(text, new RegExp(`\\| \`${event}\` \\|`), `event ${event} has no row`);
    }
    for (const schema of ['HubAudioProcessed', 'HubAudioData', 'HubTextResponse', 'HubSessionEnded']) assert.ok(doc.components.schemas[schema], schema);
    assert.deepEqual(
      doc.tags.map((t: any) => t.name),
      [...new Set(service.app.router.routes.filter((r) => r.documented !== false).map((r) => r.tag))],
    );
  });

  test('served with a validator, revalidated, identical on every request', async () => {
    const a = await call(service.url, 'GET', '/swagger/v1/swagger.json', { headers: { 'accept-encoding': 'identity' } });
    const b = await call(service.url, 'GET', '/swagger/v1/swagger.json', { headers: { 'accept-encoding': 'identity' } });
    assert.equal(a.text, b.text);
    assert.deepEqual(a.json, doc);
    assert.equal(a.headers.get('cache-control'), 'no-cache');
    const etag = a.headers.get('etag');
    assert.ok(etag);
    const again = await call(service.url, 'GET', '/swagger/v1/swagger.json', { headers: { 'accept-encoding': 'identity', 'if-none-match': etag } });
    assert.equal(again.status, 304);
    assert.equal(again.text, '');
  });
});
