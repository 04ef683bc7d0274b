// The answers of the running service are what its document says they are: each one's status is listed
// for its operation, its Content-Type is one the status lists, its body is valid against that media
// type's schema (formats included), and a header that tells the client what to do next (WWW-Authenticate,
// Allow, Location, Retry-After) is one the document lists for it. A client generated from the document,
// or a checker that validates real answers against it, is then never surprised.
import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';
import type { Ajv } from 'ajv';
import { call, type HttpResult } from '../support/http.js';
import { registerDevice } from '../support/tokens.js';
import { startSession } from '../support/voice.js';
import type { TestService } from '../support/service.js';
import { servedDocument } from './served-document.js';

/* eslint-disable @typescript-eslint/no-explicit-any */
type Doc = any;

/** Headers that tell a client what to do next: an answer that carries one must have it documented. */
const TOLD_HEADERS = ['www-authenticate', 'allow', 'location', 'retry-after'];
const DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2})$/i;

describe('answers of the running service against its document', () => {
  let svc: TestService;
  let doc: Doc;
  let ajv: Ajv;
  let admin: string;
  before(async () => {
    // The formats the answers use, as RFC 3339 and RFC 9562 write them; any other format is a name only.
    const formats = {
      'date-time': (text: string) => DATE_TIME.test(text) && !Number.isNaN(Date.parse(text)),
      uuid: /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i,
    };
    ({ svc, doc, ajv, admin } = await servedDocument({ validateFormats: true, formats }));
  });

  const inDoc = (schema: Doc): Doc => JSON.parse(JSON.stringify(schema).replaceAll('"#/components/', '"doc#/components/'));

  /** What is wrong with `res` as an answer of `method template` by the document; empty when nothing is. */
  function surprises(method: string, template: string, res: HttpResult): string[] {
    const label = `${method} ${template} ${res.status}`;
    const documented = doc.paths[template]?.[method.toLowerCase()]?.responses[String(res.status)];
    if (!documented) return [`${label}: status not documented (${res.text.slice(0, 200)})`];
    const headers = Object.keys(documented.headers ?? {}).map((name) => name.toLowerCase());
    const undocumented = TOLD_HEADERS.filter((name) => res.headers.has(name) && !headers.includes(name));
    if (undocumented.length > 0) return [`${label}: header ${undocumented.join(', ')} not documented`];
    const type = (res.headers.get('content-type') ?? '').split(';')[0]!.trim();
    if (!documented.content) return res.text === '' ? [] : [`${label}: a body where the document has none`];
    const media = documented.content[type];
    if (!media) return [`${label}: Content-Type ${type} not documented (${Object.keys(documented.content).join(', ')})`];
    const validate = ajv.compile(inDoc(media.schema));
    const body = type.endsWith('json') ? res.json : res.text;
    return validate(body) ? [] : [`${label}: ${ajv.errorsText(validate.errors)} in ${res.text.slice(0, 300)}`];
  }

  test('every operation, answered with success and with its refusals', async () => {
    const device = await registerDevice(svc, { deviceId: 'answers-dev', capabilities: ['audio'], location: 'hall' });
    const other = await registerDevice(svc, { deviceId: 'answers-other' });
    const found: string[] = [];
    const check = async (method: string, template: string, path: string, opts: Parameters<typeof call>[3] = {}): Promise<HttpResult> => {
      const res = await call(svc.url, method, path, opts);
      found.push(...surprises(method, template, res));
      return res;
    };
    const register = '/api/device/register';
    await check('POST', register, register, { body: { deviceId: 'answers-new', deviceName: 'n', deviceType: 't' } });
    await check('POST', register, register, { body: { deviceId: 'answers-new', deviceName: 'n', deviceType: 't' } });
    await check('POST', register, register, { body: { deviceId: '' } });
    await check('POST', register, register, { raw: 'x', headers: { 'content-type': 'text/plain' } });
    const status = '/api/device/{deviceId}/status';
    await check('PUT', status, `/api/device/${device.id}/status`, { token: device.token, body: { status: 'online', batteryLevel: 80 } });
    await check('PUT', status, `/api/device/${device.id}/status`, { token: other.token, body: { status: 'online' } });
    await check('PUT', status, `/api/device/${device.id}/status`, { body: { status: 'online' } });
    await check('PUT', status, `/api/device/${device.id}/status`, { token: 'forged', body: { status: 'online' } });
    await check('PUT', status, '/api/device/nobody/status', { token: admin, body: { status: 'online' } });
    await check('PUT', status, '/api/device/%ZZ/status', { token: admin, body: { status: 'online' } });
    await check('GET', '/api/device/list', '/api/device/list', { token: admin });
    await check('GET', '/api/device/list', '/api/device/list', { token: device.token });
    const token = '/api/device/{deviceId}/token';
    await check('POST', token, `/api/device/${device.id}/token`, { token: device.token });
    await check('POST', token, '/api/device/nobody/token', { token: admin });
    const config = '/api/config/{category}';
    for (const category of ['voice', 'device', 'mqtt']) {
      await check('GET', config, `/api/config/${category}`, { token: device.token });
      await check('PUT', config, `/api/config/${category}`, { token: admin, body: {} });
    }
    await check('PUT', config, '/api/config/voice', { token: admin, body: { wakeWords: ['hey hub', 'hey hub'] } });
    await check('GET', config, '/api/config/lights', { token: admin });
    const session = await startSession(svc, device.id, device.token);
    await check('POST', '/api/voice/start', '/api/voice/start', { token: admin, body: { deviceId: 'nobody' } });
    await check('POST', '/api/voice/message', '/api/voice/message', { token: device.token, body: { sessionId: session.sessionId, text: 'hi' } });
    await check('POST', '/api/voice/stop', '/api/voice/stop', { token: device.token, body: { sessionId: session.sessionId } });
    await check('POST', '/api/voice/message', '/api/voice/message', { token: device.token, body: { sessionId: session.sessionId, text: 'hi' } });
    await check('POST', '/api/voice/stop', '/api/voice/stop', { token: admin, body: { sessionId: 'nothing' } });
    await check('GET', '/health', '/health');
    await check('GET', '/health', '/health', { headers: { accept: 'text/plain' } });
    await check('HEAD', '/health', '/health');
    await check('DELETE', '/api/device/{deviceId}', `/api/device/${other.id}`, { token: admin });
    await check('DELETE', '/api/device/{deviceId}', `/api/device/${other.id}`, { token: admin });
    assert.deepEqual(found, []);
  });

  test("a category's answer is described key by key: valid against its own values schema and no other", async () => {
    const alternatives: Doc[] = doc.components.schemas.ConfigCategory.anyOf ?? [];
    assert.deepEqual(alternatives.map((s) => s.$ref), ['VoiceValues', 'DeviceValues', 'MqttValues'].map((n) => `#/components/schemas/${n}`));
    for (const category of ['voice', 'device', 'mqtt']) {
      const res = await call(svc.url, 'GET', `/api/config/${category}`, { token: admin });
      assert.equal(res.status, 200, res.text);
      const matching = alternatives.filter((schema) => ajv.compile(inDoc(schema))(res.json)).map((s) => s.$ref.split('/').pop());
      assert.deepEqual(matching, [`${category[0]!.toUpperCase()}${category.slice(1)}Values`], `${category}: ${res.text}`);
      const values = doc.components.schemas[matching[0]!];
      assert.deepEqual(values.required, Object.keys(res.json), `${category}: every key answered is required, in the order answered`);
    }
  });
});
