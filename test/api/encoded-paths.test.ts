// Percent-encoded path segments route as Kestrel routes them: the path is decoded before routing,
// except `%2F`, so a literal segment matches its encoded forms, an encoded slash never separates
// segments, and what is not valid percent-encoding stays a 400 where a parameter takes it.
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { call } from '../support/http.js';
import { answered, assertProblem } from '../support/problem.js';
import { exchange, keepAliveRequest, rawRequest } from '../support/raw-http.js';
import { uwsOwnStatus } from '../support/uws-addon.js';
import { startService, type TestService } from '../support/service.js';
import { adminToken, registerDevice } from '../support/tokens.js';

/** Every character of each literal segment percent-encoded, in upper- or lower-case hex. */
function encodeLiterals(template: string, lower: boolean): string {
  return template.split('/').map((seg) => (seg.startsWith('{') ? seg : [...seg].map((c) => {
    const hex = c.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0');
    return `%${lower ? hex.toLowerCase() : hex}`;
  }).join(''))).join('/');
}

describe('percent-encoded paths', () => {
  let svc: TestService;
  let admin: string;
  let device: { id: string; token: string };
  before(async () => {
    svc = await startService();
    admin = await adminToken(svc);
    device = await registerDevice(svc, { deviceId: 'enc-dev' });
  });

  /** Status of a request over a raw socket (fetch would normalise the path). */
  const statusOf = async (method: string, path: string, headers: Array<[string, string]>, body = ''): Promise<{ status: number; allow?: string }> => {
    const answer = await exchange(svc.port, [keepAliveRequest(method, path, body ? [['Content-Type', 'application/json'], ...headers] : headers, body)], { expect: 1 });
    const res = answer.responses[0];
    assert.ok(res, `${method} ${path}: no answer`);
    return { status: res.status, ...(res.headers.allow ? { allow: res.headers.allow } : {}) };
  };

  // Each route with a request it answers without changing anything lasting (or answers the same twice).
  const table: Array<{ method: string; template: string; headers: () => Array<[string, string]>; body?: string; expect: { status: number; allow?: string } }> = [
    { method: 'GET', template: '/health', headers: () => [], expect: { status: 503 } },
    { method: 'GET', template: '/swagger/v1/swagger.json', headers: () => [], expect: { status: 200 } },
    { method: 'GET', template: '/swagger/index.html', headers: () => [], expect: { status: 200 } },
    { method: 'GET', template: '/api/device/list', headers: () => [['Authorization', `Bearer ${admin}`]], expect: { status: 200 } },
    { method: 'PUT', template: '/api/device/enc-dev/status', headers: () => [['Authorization', `Bearer ${device.token}`]], body: '{"status":"online"}', expect: { status: 200 } },
    { method: 'POST', template: '/api/device/enc-dev/token', headers: () => [['Authorization', `Bearer ${admin}`]], expect: { status: 200 } },
    { method: 'DELETE', template: '/api/device/nobody', headers: () => [['Authorization', `Bearer ${admin}`]], expect: { status: 404 } },
    { method: 'POST', template: '/api/device/register', headers: () => [], body: '{"deviceId":"enc-dev","deviceName":"n","deviceType":"t"}', expect: { status: 409 } },
    { method: 'GET', template: '/api/config/voice', headers: () => [['Authorization', `Bearer ${admin}`]], expect: { status: 200 } },
    { method: 'PUT', template: '/api/config/voice', headers: () => [['Authorization', `Bearer ${admin}`]], body: '{}', expect: { status: 200 } },
    { method: 'POST', template: '/api/voice/start', headers: () => [['Authorization', `Bearer ${admin}`]], body: '{"deviceId":"nobody"}', expect: { status: 404 } },
    { method: 'POST', template: '/api/voice/stop', headers: () => [['Authorization', `Bearer ${admin}`]], body: '{"sessionId":"nobody"}', expect: { status: 404 } },
    { method: 'POST', template: '/api/voice/message', headers: () => [['Authorization', `Bearer ${admin}`]], body: '{"sessionId":"nobody","text":"x"}', expect: { status: 404 } },
    { method: 'GET', template: '/api/voice/start', headers: () => [], expect: { status: 405, allow: 'POST' } },
  ];

  for (const route of table) {
    it(`${route.method} ${route.template}: plain, encoded and mixed forms answer alike`, async () => {
      const forms = [route.template, encodeLiterals(route.template, false), encodeLiterals(route.template, true)];
      // One letter encoded inside an otherwise plain segment: `/api/%63onfig/voice`.
      forms.push(route.template.replace(/\/([a-z])/, (_, c: string) => `/%${c.charCodeAt(0).toString(16)}`));
      for (const path of forms) {
        assert.deepEqual(await statusOf(route.method, path, route.headers(), route.body), route.expect, path);
      }
    });
  }

  it('the probe\'s cases: /api/device/%6cist is the list, /api/%63onfig/voice the category', async () => {
    assert.equal((await call(svc.url, 'GET', '/api/device/%6cist', { token: admin })).status, 200);
    const config = await call(svc.url, 'GET', '/api/%63onfig/voice', { token: admin });
    assert.equal(config.status, 200, config.text);
    assert.equal(config.json.enableVoice, true);
  });

  it('%2F is never a separator: in a literal position nothing matches, in a parameter it is part of the id', async () => {
    assertProblem(answered(await call(svc.url, 'GET', '/api%2Fdevice/list', { token: admin })), 404, { detail: 'No route matches GET /api%2Fdevice/list.' });
    assertProblem(answered(await call(svc.url, 'GET', '/api/device%2flist', { token: admin })), 404, { detail: 'No route matches GET /api/device%2flist.' });
    assertProblem(answered(await call(svc.url, 'DELETE', '/api/device/a%2Fb', { token: admin })), 404, { detail: "device 'a/b' does not exist" });
  });

  it('raw bytes that are not UTF-8 in a parameter are a 400, not the device U+FFFD they decode to', async () => {
    // A device whose id is U+FFFD, the character uWS makes of every byte that is not UTF-8.
    await registerDevice(svc, { deviceId: '\uFFFD' });
    for (const bytes of [[0xe9], [0xff, 0xfe], [0xc3]]) {
      const target = Buffer.concat([Buffer.from('/api/device/'), Buffer.from(bytes), Buffer.from('/token')]);
      const request = Buffer.concat([Buffer.from('POST '), target, Buffer.from(` HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${admin}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n`)]);
      const answer = await rawRequest(svc.port, request);
      // An addon that refuses such a target itself never shows it to the service: no device is named either.
      if (uwsOwnStatus(answer.text) !== undefined) continue;
      const [head, body = ''] = answer.text.split('\r\n\r\n');
      const headers = Object.fromEntries(head!.split('\r\n').slice(1).map((line) => [line.slice(0, line.indexOf(':')).toLowerCase(), line.slice(line.indexOf(':') + 1).trim()]));
      assertProblem({ status: answer.statuses[0]!, headers, body }, 400, { detail: 'The request path is not valid percent-encoding.' });
    }
    // Raw UTF-8 is text, and names its device.
    await registerDevice(svc, { deviceId: 'é' });
    const utf8 = Buffer.from(`POST /api/device/é/token HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${admin}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n`, 'utf8');
    const served = await rawRequest(svc.port, utf8);
    if (uwsOwnStatus(served.text) === undefined) assert.deepEqual(served.statuses, [200], served.text);
  });

  it('dot segments are removed before routing, as Kestrel removes them, percent-encoded ones too', async () => {
    const admin_ = (): Array<[string, string]> => [['Authorization', `Bearer ${admin}`]];
    for (const path of ['/./health', '/api/../health', '/%2e/health', '/api/%2E%2e/health', '/api/.%2e/health', '/../../health', '/health/.', '/x/y/../../health/']) {
      assert.deepEqual(await statusOf('GET', path, []), { status: 503 }, path);
    }
    for (const path of ['/api/device/./list', '/api/x/../device/list', '/api/device/list/.', '/api//../device/list']) {
      assert.deepEqual(await statusOf('GET', path, admin_()), { status: 200 }, path);
    }
    // The id of a device path: `..` there removes the id itself, as in Kestrel, and names no device.
    assert.deepEqual(await statusOf('POST', '/api/device/enc-dev/../enc-dev/token', admin_()), { status: 200 });
    const answer = await exchange(svc.port, [keepAliveRequest('POST', '/api/device/%2e%2e/token', admin_())], { expect: 1 });
    const res = answer.responses[0]!;
    assertProblem({ status: res.status, headers: { ...res.headers }, body: res.body.toString() }, 404, { detail: 'No route matches POST /api/token.' });
    // Only whole segments: `...`, `.well-known` and `..%2F` are names.
    for (const path of ['/.../health', '/api/..%2F/health', '/.health']) assert.deepEqual(await statusOf('GET', path, []), { status: 404 }, path);
  });

  it('bad and surrogate encodings stay a 400 where a parameter takes them, and match no literal', async () => {
    const BAD = 'The request path is not valid percent-encoding.';
    assertProblem(answered(await call(svc.url, 'DELETE', '/api/device/%E0%A4%A', { token: admin })), 400, { detail: BAD });
    assertProblem(answered(await call(svc.url, 'DELETE', '/api/device/%ED%A0%80', { token: admin })), 400, { detail: BAD });
    assertProblem(answered(await call(svc.url, 'GET', '/api/%ED%A0%80/list', { token: admin })), 404, { detail: 'No route matches GET /api/%ED%A0%80/list.' });
  });
});
