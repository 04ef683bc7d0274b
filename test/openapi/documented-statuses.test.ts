// The OpenAPI document lists the statuses each operation can answer on this server, and no other: the
// 401 and 403 of authentication follow `ApiKeys` and `VoiceService.RequireDeviceToken` and the checks a
// route makes. Each server below shows every such status it documents happening, and the requests that
// would draw an undocumented one answered otherwise.
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { call, type HttpResult } from '../support/http.js';
import { answered, assertProblem } from '../support/problem.js';
import { adminToken, registerDevice } from '../support/tokens.js';
import { startSession, startVoiceRig } from '../support/voice.js';
import type { TestService } from '../support/service.js';

/* eslint-disable @typescript-eslint/no-explicit-any */
const KEY = 'documented-key';
const BODY = [400, 413, 415];
const statuses = (codes: number[]): string[] => [...codes].sort((a, b) => a - b).map(String);

async function documentOf(svc: TestService): Promise<any> {
  const res = await call(svc.url, 'GET', '/swagger/v1/swagger.json');
  assert.equal(res.status, 200);
  return res.json;
}

const op = (doc: any, path: string, method = 'post'): any => doc.paths[path][method];
const codes = (doc: any, path: string, method = 'post'): string[] => Object.keys(op(doc, path, method).responses);
const typesOf401 = (doc: any, path: string): string[] => Object.keys(op(doc, path).responses['401'].content).sort();

function assertApiKey401(res: HttpResult): void {
  assert.equal(res.status, 401, res.text);
  assert.equal(res.headers.get('content-type'), 'text/plain; charset=utf-8');
  assert.equal(res.text, 'Invalid API Key');
}

describe('without ApiKeys, with device tokens required (as shipped)', () => {
  let svc: TestService;
  let doc: any;
  let a: { id: string; token: string };
  let b: { id: string; token: string };
  let session: string;
  before(async () => {
    ({ svc } = await startVoiceRig());
    doc = await documentOf(svc);
    a = await registerDevice(svc);
    b = await registerDevice(svc);
    session = (await startSession(svc, a.id, a.token)).sessionId;
  });

  it('registerDevice documents no 401, and registration needs no key', async () => {
    assert.deepEqual(codes(doc, '/api/device/register'), statuses([200, ...BODY, 403, 409, 503]));
    const res = await call(svc.url, 'POST', '/api/device/register', { body: { deviceId: 'no-key', deviceName: 'n', deviceType: 't' } });
    assert.equal(res.status, 200, res.text);
  });

  it('the voice operations document a problem 401 and the 403 of another device, and answer both', async () => {
    assert.deepEqual(codes(doc, '/api/voice/start'), statuses([200, ...BODY, 401, 403, 404, 409, 502, 503]));
    assert.deepEqual(codes(doc, '/api/voice/stop'), statuses([200, ...BODY, 401, 403, 404, 503]));
    assert.deepEqual(codes(doc, '/api/voice/message'), statuses([200, ...BODY, 401, 403, 404, 409, 503]));
    const bodies: Record<string, Record<string, unknown>> = {
      '/api/voice/start': { deviceId: a.id },
      '/api/voice/stop': { sessionId: session },
      '/api/voice/message': { sessionId: session, text: 'hello' },
    };
    // Message before stop: a stopped session would answer 409.
    for (const path of ['/api/voice/start', '/api/voice/message', '/api/voice/stop']) {
      assert.deepEqual(typesOf401(doc, path), ['application/problem+json'], path);
      assert.equal(op(doc, path).responses['403'].description, 'Token of another device', path);
      assertProblem(answered(await call(svc.url, 'POST', path, { body: bodies[path] })), 401, { detail: 'A bearer token is required.' });
      assertProblem(answered(await call(svc.url, 'POST', path, { body: bodies[path], token: b.token })), 403, { detail: 'The token belongs to another device.' });
    }
  });

  it('start documents an unknown device, stop and message an unknown session, as they answer', async () => {
    const admin = await adminToken(svc);
    assert.equal(op(doc, '/api/voice/start').responses['404'].description, 'Unknown device, or the device was deleted while the session started');
    assertProblem(answered(await call(svc.url, 'POST', '/api/voice/start', { body: { deviceId: 'nobody' }, token: admin })), 404, {
      detail: "device 'nobody' does not exist",
    });
    for (const [path, extra] of [['/api/voice/stop', {}], ['/api/voice/message', { text: 'hi' }]] as const) {
      assert.equal(op(doc, path).responses['404'].description, 'Unknown session', path);
      assertProblem(answered(await call(svc.url, 'POST', path, { body: { sessionId: 'nothing', ...extra }, token: admin })), 404, {
        detail: "session 'nothing' does not exist",
      });
    }
  });

  it('getConfigCategory names no device, and any device token reads any category', async () => {
    const get = op(doc, '/api/config/{category}', 'get');
    assert.deepEqual(codes(doc, '/api/config/{category}', 'get'), statuses([200, 400, 401, 404, 413]));
    assert.equal(get.description, '**Needs** `Authorization: Bearer` with a device token or an admin token.');
    assert.match(op(doc, '/api/device/{deviceId}/status', 'put').description, /A device token must be that of the device `\{deviceId\}` names\./);
    assert.equal((await call(svc.url, 'GET', '/api/config/voice', { token: b.token })).status, 200);
  });
});

describe('a path answered to any method', () => {
  it('says so in the description, and answers another method as GET, not 405', async () => {
    const { svc } = await startVoiceRig();
    const doc = await documentOf(svc);
    assert.deepEqual(Object.keys(doc.paths['/health']), ['get', 'head']);
    assert.equal(op(doc, '/health', 'get').description, 'No authentication.\n\nEvery method that no other operation of this path names (`POST`, `PUT`, ...) is answered as `GET`: this path has no 405.');
    assert.equal(op(doc, '/health', 'head').description, 'No authentication.');
    for (const method of ['POST', 'PUT', 'DELETE', 'PATCH']) {
      const res = await call(svc.url, method, '/health');
      assert.equal(res.status, 200, method);
      assert.equal(res.json.status, 'Healthy', method);
    }
    // Every other path keeps its 405.
    assert.doesNotMatch(op(doc, '/api/device/list', 'get').description, /no 405/);
    assert.equal((await call(svc.url, 'POST', '/api/device/list')).status, 405);
  });
});

describe('operations with a path parameter', () => {
  it('document the 400 of a parameter that is not valid percent-encoding, and answer it', async () => {
    const { svc } = await startVoiceRig();
    const doc = await documentOf(svc);
    const admin = await adminToken(svc);
    const BAD_PATH = 'The request path is not valid percent-encoding.';
    const operations: Array<[string, string, string]> = [
      ['delete', '/api/device/{deviceId}', '/api/device/%ZZ'],
      ['post', '/api/device/{deviceId}/token', '/api/device/%ZZ/token'],
      ['put', '/api/device/{deviceId}/status', '/api/device/%ED%A0%80/status'],
      ['get', '/api/config/{category}', '/api/config/%ZZ'],
      ['put', '/api/config/{category}', '/api/config/%ZZ'],
    ];
    for (const [method, template, path] of operations) {
      assert.ok(codes(doc, template, method).includes('400'), `${method} ${template}: ${codes(doc, template, method).join(', ')}`);
      assert.match(op(doc, template, method).responses['400'].description, /The request path is not valid percent-encoding/, `${method} ${template}`);
      const body = method === 'put' ? (template.endsWith('status') ? { status: 'online' } : {}) : undefined;
      assertProblem(answered(await call(svc.url, method.toUpperCase(), path, { token: admin, body })), 400, { detail: BAD_PATH });
    }
    // A body's 400 keeps its richer schema beside it.
    assert.deepEqual(op(doc, '/api/config/{category}', 'put').responses['400'].content['application/problem+json'].schema, { $ref: '#/components/schemas/ValidationProblemDetails' });
  });
});

describe('with ApiKeys, without device tokens for voice', () => {
  let svc: TestService;
  let doc: any;
  let a: { id: string; token: string };
  let b: { id: string; token: string };
  before(async () => {
    ({ svc } = await startVoiceRig({ env: { ApiKeys__0: KEY }, flags: { 'VoiceService.RequireDeviceToken': false } }));
    doc = await documentOf(svc);
    a = await registerDevice(svc, {}, { 'x-api-key': KEY });
    b = await registerDevice(svc, {}, { 'x-api-key': KEY });
  });

  it('registerDevice documents the plain-text 401 and answers it', async () => {
    assert.deepEqual(codes(doc, '/api/device/register'), statuses([200, ...BODY, 401, 403, 409, 503]));
    assert.deepEqual(typesOf401(doc, '/api/device/register'), ['text/plain']);
    assertApiKey401(await call(svc.url, 'POST', '/api/device/register', { body: { deviceId: 'no-key', deviceName: 'n', deviceType: 't' } }));
  });

  it('the voice operations document only the plain-text 401, and check no token', async () => {
    assert.deepEqual(codes(doc, '/api/voice/start'), statuses([200, ...BODY, 401, 404, 409, 502, 503]));
    assert.deepEqual(codes(doc, '/api/voice/stop'), statuses([200, ...BODY, 401, 404, 503]));
    assert.deepEqual(codes(doc, '/api/voice/message'), statuses([200, ...BODY, 401, 404, 409, 503]));
    for (const path of ['/api/voice/start', '/api/voice/stop', '/api/voice/message']) {
      assert.deepEqual(typesOf401(doc, path), ['text/plain'], path);
      assertApiKey401(await call(svc.url, 'POST', path, { body: {} }));
    }
    const key = { 'x-api-key': KEY };
    // No token, a forged one, another device's: none is looked at.
    const start = await call(svc.url, 'POST', '/api/voice/start', { body: { deviceId: a.id }, headers: key });
    assert.equal(start.status, 200, start.text);
    const sessionId = start.json.sessionId as string;
    const message = await call(svc.url, 'POST', '/api/voice/message', { body: { sessionId, text: 'hi' }, headers: { ...key, authorization: 'Bearer forged' } });
    assert.equal(message.status, 200, message.text);
    const stop = await call(svc.url, 'POST', '/api/voice/stop', { body: { sessionId }, headers: key, token: b.token });
    assert.equal(stop.status, 200, stop.text);
  });
});

describe('without ApiKeys, without device tokens for voice', () => {
  it('the voice operations document no 401 and no 403, and answer neither', async () => {
    const { svc } = await startVoiceRig({ flags: { 'VoiceService.RequireDeviceToken': false } });
    const doc = await documentOf(svc);
    assert.deepEqual(codes(doc, '/api/voice/start'), statuses([200, ...BODY, 404, 409, 502, 503]));
    assert.deepEqual(codes(doc, '/api/voice/stop'), statuses([200, ...BODY, 404, 503]));
    assert.deepEqual(codes(doc, '/api/voice/message'), statuses([200, ...BODY, 404, 409, 503]));
    const a = await registerDevice(svc);
    const start = await call(svc.url, 'POST', '/api/voice/start', { body: { deviceId: a.id }, headers: { authorization: 'Bearer forged' } });
    assert.equal(start.status, 200, start.text);
    const stop = await call(svc.url, 'POST', '/api/voice/stop', { body: { sessionId: start.json.sessionId } });
    assert.equal(stop.status, 200, stop.text);
  });
});
