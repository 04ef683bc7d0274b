// Request handling at the HTTP edge: routing, media types, size limits, malformed input.
import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import { connect as netConnect } from 'node:net';
import { before, describe, it } from 'node:test';
import fc from 'fast-check';
import { VALIDATION_TITLE } from '../../src/http/problem.js';
import { call } from '../support/http.js';
import { answered, assertProblem } from '../support/problem.js';
import { startService, type TestService } from '../support/service.js';
import { adminToken, registerDevice } from '../support/tokens.js';

describe('request handling', () => {
  let svc: TestService;
  before(async () => {
    svc = await startService({ flags: { 'Server.MaxBodyBytes': 1024, 'DeviceManagement.MaxDevices': 50 } });
  });

  it('answers 404 with a problem for an unknown route', async () => {
    const res = await call(svc.url, 'GET', '/api/nothing');
    assert.equal(res.status, 404);
    assert.equal(res.headers.get('content-type'), 'application/problem+json');
    assert.equal(res.json.title, 'Not Found');
    assert.equal(res.json.detail, 'No route matches GET /api/nothing.');
  });

  it('answers 405 with Allow for a known path and wrong method', async () => {
    const res = await call(svc.url, 'GET', '/api/voice/start');
    assert.equal(res.status, 405);
    assert.equal(res.headers.get('allow'), 'POST');
    assert.equal(res.json.title, 'Method Not Allowed');
    const res2 = await call(svc.url, 'PATCH', '/api/config/voice');
    assert.equal(res2.status, 405);
    assert.equal(res2.headers.get('allow'), 'GET, PUT');
  });

  it('answers 415 for a body that is not JSON', async () => {
    for (const type of ['text/plain', 'application/x-www-form-urlencoded', undefined]) {
      const headers: Record<string, string> = type ? { 'content-type': type } : {};
      const res = await call(svc.url, 'POST', '/api/device/register', { raw: 'deviceId=x', headers });
      assert.equal(res.status, 415, `content-type ${type}`);
      assert.equal(res.json.detail, 'The request body must be JSON (Content-Type: application/json).');
    }
  });

  it('answers 400 for invalid JSON and for an empty body', async () => {
    const bad = await call(svc.url, 'POST', '/api/device/register', { raw: '{"deviceId":', headers: { 'content-type': 'application/json' } });
    assert.equal(bad.status, 400);
    assert.equal(bad.json.title, 'One or more validation errors occurred.');
    assert.equal(bad.json.detail, 'The request body is not valid JSON.');
    assert.ok(Array.isArray(bad.json.errors.$));
    const empty = await call(svc.url, 'POST', '/api/device/register', { raw: '', headers: { 'content-type': 'application/json' } });
    assert.equal(empty.status, 400);
    assert.equal(empty.json.detail, 'A request body is required.');
    const notObject = await call(svc.url, 'POST', '/api/device/register', { body: [1, 2] });
    assert.equal(notObject.status, 400);
    assert.deepEqual(notObject.json.errors, { $: ['must be object'] });
  });

  it('reads bodies as UTF-8 the way ASP.NET Core does: a byte order mark is skipped, bytes that are not UTF-8 are refused', async () => {
    const headers = { 'content-type': 'application/json' };
    const text = JSON.stringify({ deviceId: 'bom-device', deviceName: 'Küche', deviceType: 'speaker' });
    const bom = await call(svc.url, 'POST', '/api/device/register', { raw: Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(text)]), headers });
    assert.equal(bom.status, 200, bom.text);
    assert.equal(bom.json.deviceInfo.id, 'bom-device');
    assert.equal(bom.json.deviceInfo.name, 'Küche');
    // 0xFF is never UTF-8: it must not become U+FFFD in a stored name.
    const raw = Buffer.concat([Buffer.from('{"deviceId":"bad-utf8","deviceName":"K'), Buffer.from([0xff]), Buffer.from('che","deviceType":"speaker"}')]);
    const bad = await call(svc.url, 'POST', '/api/device/register', { raw, headers });
    assert.equal(bad.status, 400);
    assert.equal(bad.json.detail, 'The request body is not valid JSON.');
    assert.deepEqual(bad.json.errors, { $: ['The encoded data was not valid for encoding utf-8'] });
  });

  it('reads JSON media types and encodings as ASP.NET Core MVC does: text/json and */*+json, UTF-8 and UTF-16; any other charset is 415', async () => {
    const device = (id: string): Record<string, string> => ({ deviceId: id, deviceName: 'Küche 🎙', deviceType: 'speaker' });
    const utf16 = (value: unknown): Buffer => Buffer.from(JSON.stringify(value), 'utf16le');
    const accepted: Array<[string, string | Buffer, string]> = [
      ['text/json', JSON.stringify(device('text-json')), 'text-json'],
      ['application/merge-patch+json; charset=utf-8', JSON.stringify(device('suffix-json')), 'suffix-json'],
      ['application/json; charset=utf-16', utf16(device('utf16')), 'utf16'],
      ['application/json; Charset="UTF-16LE"', utf16(device('utf16le')), 'utf16le'],
      // A byte order mark of the encoding is skipped, as MVC's transcoding reader skips it.
      ['text/json;charset=unicode', Buffer.concat([Buffer.from([0xff, 0xfe]), utf16(device('utf16-bom'))]), 'utf16-bom'],
      // A +json suffix under text/ matches text/json; the first charset counts; one without a value is none.
      ['text/vnd.example+json', JSON.stringify(device('text-suffix')), 'text-suffix'],
      ['application/json; charset=utf-16; charset=utf-8', utf16(device('first-charset')), 'first-charset'],
      ['application/json; charset=', JSON.stringify(device('empty-charset')), 'empty-charset'],
    ];
    for (const [type, raw, id] of accepted) {
      const res = await call(svc.url, 'POST', '/api/device/register', { raw, headers: { 'content-type': type } });
      assert.equal(res.status, 200, `${type}: ${res.text}`);
      assert.deepEqual([res.json.deviceInfo.id, res.json.deviceInfo.name], [id, 'Küche 🎙'], type);
    }
    const notJson = { detail: 'The request body must be JSON (Content-Type: application/json).' };
    for (const type of ['application/json; charset=latin1', 'application/json; charset=iso-8859-1', 'application/json; charset=utf-32', 'application/json; charset=utf8', 'text/json; charset=utf-16be', 'text/plain; charset=utf-8']) {
      assertProblem(answered(await call(svc.url, 'POST', '/api/device/register', { raw: JSON.stringify(device('refused')), headers: { 'content-type': type } })), 415, notJson);
    }
    // An odd byte is no UTF-16.
    const odd = await call(svc.url, 'POST', '/api/device/register', { raw: Buffer.concat([utf16(device('odd')), Buffer.from([0x20])]), headers: { 'content-type': 'application/json; charset=utf-16' } });
    assertProblem(answered(odd), 400, {
      title: VALIDATION_TITLE,
      detail: 'The request body is not valid JSON.',
      errors: { $: ['The encoded data was not valid for encoding utf-16le'] },
    });
  });

  it('answers HEAD without a body, so the next answer on the connection starts right after its headers', async () => {
    const { port } = new URL(svc.url);
    const text = await new Promise<string>((resolve, reject) => {
      const socket = netConnect(Number(port), '127.0.0.1', () => {
        socket.write('HEAD /swagger/v1/swagger.json HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\nGET /api/nothing HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n');
      });
      let data = '';
      socket.on('data', (d: Buffer) => (data += d.toString('latin1')));
      socket.on('end', () => resolve(data));
      socket.on('error', reject);
      socket.setTimeout(10_000, () => reject(new Error('no answer')));
    });
    const [headHead, afterHead] = [text.slice(0, text.indexOf('\r\n\r\n')), text.slice(text.indexOf('\r\n\r\n') + 4)];
    assert.match(headHead, /^HTTP\/1\.1 405 Method Not Allowed\r\n/);
    const length = Number(/\r\ncontent-length: (\d+)/i.exec(headHead)?.[1]);
    assert.ok(length > 0, 'Content-Length says what a GET would get');
    assert.match(afterHead, /^HTTP\/1\.1 404 Not Found\r\n/, 'no body between the HEAD answer and the next');
    const get = await call(svc.url, 'GET', '/api/nothing', { headers: { 'x-probe': '1' } });
    assert.equal(get.status, 404);
  });

  it('answers 413 for a body over Server.MaxBodyBytes, declared or streamed', async () => {
    const big = JSON.stringify({ deviceId: 'x'.repeat(2000), deviceName: 'a', deviceType: 'b' });
    const declared = await call(svc.url, 'POST', '/api/device/register', { raw: big, headers: { 'content-type': 'application/json' } });
    assert.equal(declared.status, 413);
    assert.equal(declared.json.detail, 'The request body is larger than the limit of 1024 bytes.');
    // Chunked: no Content-Length, the limit is found while reading.
    const streamed = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = httpRequest(`${svc.url}/api/device/register`, { method: 'POST', headers: { 'content-type': 'application/json' } }, (res) => {
        let body = '';
        res.on('data', (d) => (body += d));
        res.on('end', () => resolve({ status: res.statusCode!, body }));
      });
      req.on('error', reject);
      req.write(big.slice(0, 600));
      setTimeout(() => req.end(big.slice(600)), 50);
    });
    assert.equal(streamed.status, 413);
    assert.equal(JSON.parse(streamed.body).status, 413);
  });

  it('a route that takes no body has the same limit: 413 over it, declared or streamed; a small body is ignored', async () => {
    const admin = await adminToken(svc);
    const dev = await registerDevice(svc);
    const big = 'x'.repeat(2000);
    // node:http, as fetch sends no body with a GET. Declared: one write with its length; streamed: chunked.
    const send = (method: string, path: string, headers: Record<string, string>, chunks: string[]) =>
      new Promise<{ status: number; body: string }>((resolve, reject) => {
        // Chunked said outright: node:http frames a GET's body only when told.
        const declared = chunks.length === 1 ? { 'content-length': String(Buffer.byteLength(chunks[0]!)) } : { 'transfer-encoding': 'chunked' };
        const req = httpRequest(`${svc.url}${path}`, { method, headers: { ...headers, ...declared } }, (res) => {
          let body = '';
          res.on('data', (d) => (body += d));
          res.on('end', () => resolve({ status: res.statusCode!, body }));
        });
        req.on('error', reject);
        req.write(chunks[0]);
        setTimeout(() => req.end(chunks[1]), 50);
      });
    for (const [method, path, token] of [['GET', '/health', undefined], ['GET', '/api/device/list', admin], ['POST', `/api/device/${dev.id}/token`, admin]] as const) {
      const headers: Record<string, string> = { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) };
      const declared = await send(method, path, headers, [big]);
      assert.equal(declared.status, 413, `${method} ${path}`);
      assert.equal(JSON.parse(declared.body).detail, 'The request body is larger than the limit of 1024 bytes.');
      const streamed = await send(method, path, headers, [big.slice(0, 600), big.slice(600)]);
      assert.equal(streamed.status, 413, `${method} ${path}, chunked`);
      // As without a body (/health is 503 here: no upstream listens).
      const bare = await call(svc.url, method, path, { headers });
      assert.ok([200, 503].includes(bare.status));
      const small = await send(method, path, headers, ['{"ignored":true}']);
      assert.equal(small.status, bare.status, `${method} ${path} with a small body`);
    }
  });

  it('never answers 5xx to a burst of malformed bodies', async () => {
    const admin = await adminToken(svc);
    const dev = await registerDevice(svc);
    const targets: Array<[string, string, string | undefined]> = [
      ['POST', '/api/device/register', undefined],
      ['PUT', `/api/device/${dev.id}/status`, dev.token],
      ['PUT', '/api/config/voice', admin],
      ['PUT', '/api/config/device', admin],
    ];
    const deep = (n: number): string => '['.repeat(n) + ']'.repeat(n);
    const body = fc.oneof(
      fc.uint8Array({ maxLength: 900 }).map((b) => Buffer.from(b).toString('latin1')),
      fc.json(),
      fc.integer({ min: 1, max: 500 }).map(deep),
      fc.string({ maxLength: 900 }).map((s) => JSON.stringify({ deviceId: s, deviceName: s, deviceType: s, status: s })),
      fc.anything().map((v) => { try { return JSON.stringify(v) ?? 'null'; } catch { return 'null'; } }),
      fc.constantFrom('{"status":{"$gt":1}}', '{"__proto__":{"admin":true}}', '{"deviceId":"a\\u0000b","deviceName":"x","deviceType":"y"}', 'null', '1e999', '"\\ud800"'),
    );
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...targets), body, async ([method, path, token], raw) => {
        const res = await call(svc.url, method, path, { raw, token, headers: { 'content-type': 'application/json' } });
        assert.ok(res.status < 500, `${method} ${path} with ${JSON.stringify(raw).slice(0, 200)} -> ${res.status} ${res.text}`);
        assert.ok([200, 400, 409, 413].includes(res.status), `unexpected ${res.status}`);
      }),
      { numRuns: 300 },
    );
    // Still serving.
    assert.equal((await call(svc.url, 'GET', '/api/device/list', { token: admin })).status, 200);
  });

  it('survives requests aborted mid-body', async () => {
    for (let i = 0; i < 20; i++) {
      await new Promise<void>((resolve) => {
        const req = httpRequest(`${svc.url}/api/device/register`, { method: 'POST', headers: { 'content-type': 'application/json', 'content-length': '500' } });
        req.on('error', () => resolve());
        req.write('{"deviceId":"abc');
        setTimeout(() => {
          req.destroy();
          resolve();
        }, 5);
      });
    }
    assert.equal((await call(svc.url, 'GET', '/api/nothing')).status, 404);
  });
});
