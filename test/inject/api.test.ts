// The main HTTP endpoints through inject(): the service's own pipeline (framing, routing, auth, body
// checks, handlers, problems) in this process, no socket in between. Exact statuses and bodies.
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import type { InjectResponse } from '../../src/http/inject.js';
import { assertProblem } from '../support/problem.js';
import { startService, type TestService } from '../support/service.js';
import { adminToken } from '../support/tokens.js';

const JSON_TYPE = 'application/json; charset=utf-8';
const bearer = (token: string): Record<string, string> => ({ authorization: `Bearer ${token}` });

describe('HTTP API through inject', () => {
  let svc: TestService;
  let admin: string;
  before(async () => {
    svc = await startService({ flags: { 'DeviceManagement.MaxDevices': 3, 'Server.MaxBodyBytes': 1024 } });
    admin = await adminToken(svc);
  });
  const inject = (...args: Parameters<TestService['app']['inject']>): Promise<InjectResponse> => svc.app.inject(...args);
  const register = async (deviceId: string): Promise<string> => {
    const res = await inject({ method: 'POST', url: '/api/device/register', body: { deviceId, deviceName: `Name ${deviceId}`, deviceType: 'speaker' } });
    assert.equal(res.status, 200, res.body);
    return (res.json() as { deviceToken: string }).deviceToken;
  };

  it('registers a device and answers its token grant', async () => {
    const res = await inject({
      method: 'POST',
      url: '/api/device/register',
      body: { deviceId: 'inj-1', deviceName: 'Kitchen', deviceType: 'speaker', capabilities: ['audio'], location: 'kitchen' },
    });
    assert.equal(res.status, 200);
    assert.equal(res.headers['content-type'], JSON_TYPE);
    assert.equal(res.headers['x-content-type-options'], 'nosniff');
    const grant = res.json() as { deviceToken: string; expiresAt: string; deviceInfo: { lastSeen: string } };
    assert.match(grant.deviceToken, /^[\w-]+\.[\w-]+\.[\w-]+$/);
    assert.deepEqual(grant.deviceInfo, { id: 'inj-1', name: 'Kitchen', status: 'online', lastSeen: grant.deviceInfo.lastSeen });
    assert.ok(Date.parse(grant.expiresAt) > Date.parse(grant.deviceInfo.lastSeen));
    assertProblem(await inject({ method: 'POST', url: '/api/device/register', body: { deviceId: 'inj-1', deviceName: 'x', deviceType: 'y' } }), 409, {
      detail: "device 'inj-1' already exists",
    });
  });

  it('answers validation problems for a bad registration', async () => {
    const res = await inject({ method: 'POST', url: '/api/device/register', body: { deviceId: '', deviceName: 5 } });
    assertProblem(res, 400, {
      title: 'One or more validation errors occurred.',
      detail: 'The request body is invalid.',
      errors: {
        deviceId: ['must NOT have fewer than 1 characters'],
        deviceName: ['must be string'],
        deviceType: ['The deviceType field is required.'],
      },
    });
    assertProblem(await inject({ method: 'POST', url: '/api/device/register', headers: { 'content-type': 'application/json' }, body: '{"deviceId":' }), 400, {
      title: 'One or more validation errors occurred.',
      detail: 'The request body is not valid JSON.',
      errors: { $: ['Unexpected end of JSON input'] },
    });
  });

  it('updates a status, lists devices and deletes one', async () => {
    const token = await register('inj-2');
    const status = await inject({ method: 'PUT', url: '/api/device/inj-2/status', headers: bearer(token), body: { status: 'busy', batteryLevel: 80 } });
    assert.equal(status.status, 200, status.body);
    const view = status.json() as { lastSeen: string };
    assert.deepEqual(view, {
      id: 'inj-2',
      name: 'Name inj-2',
      type: 'speaker',
      status: 'busy',
      location: '',
      lastSeen: view.lastSeen,
      metrics: { batteryLevel: 80, temperature: null, memoryUsage: null, cpuUsage: null },
    });
    const list = await inject({ method: 'GET', url: '/api/device/list', headers: bearer(admin) });
    assert.equal(list.status, 200);
    const listed = list.json() as { devices: Array<{ id: string }>; totalCount: number };
    assert.equal(listed.totalCount, listed.devices.length);
    assert.ok(listed.devices.some((d) => d.id === 'inj-2'));

    assertProblem(await inject({ method: 'DELETE', url: '/api/device/inj-2', headers: bearer(token) }), 403, { detail: 'This operation needs an admin token.' });
    const deleted = await inject({ method: 'DELETE', url: '/api/device/inj-2', headers: bearer(admin) });
    assert.equal(deleted.status, 200);
    assert.equal((deleted.json() as { id: string }).id, 'inj-2');
    assertProblem(await inject({ method: 'DELETE', url: '/api/device/inj-2', headers: bearer(admin) }), 404, { detail: "device 'inj-2' does not exist" });
    // The deleted device's token died with it.
    assertProblem(await inject({ method: 'PUT', url: '/api/device/inj-2/status', headers: bearer(token), body: { status: 'online' } }), 401, {
      detail: 'The token has been revoked.',
    });
  });

  it('refreshes a token for its own device only', async () => {
    const token = await register('inj-3');
    const other = await register('inj-4');
    const res = await inject({ method: 'POST', url: '/api/device/inj-3/token', headers: bearer(token) });
    assert.equal(res.status, 200, res.body);
    assert.deepEqual(Object.keys(res.json() as object).sort(), ['deviceInfo', 'deviceToken', 'expiresAt']);
    assertProblem(await inject({ method: 'POST', url: '/api/device/inj-3/token', headers: bearer(other) }), 403, { detail: 'The token belongs to another device.' });
    const unauth = await inject({ method: 'POST', url: '/api/device/inj-3/token' });
    assertProblem(unauth, 401, { detail: 'A bearer token is required.' });
    assert.equal(unauth.headers['www-authenticate'], 'Bearer');
    for (const id of ['inj-3', 'inj-4']) assert.equal((await inject({ method: 'DELETE', url: `/api/device/${id}`, headers: bearer(admin) })).status, 200);
  });

  it('refuses to start a voice session without a token, for an unknown device or with a bad body', async () => {
    assertProblem(await inject({ method: 'POST', url: '/api/voice/start', body: { deviceId: 'nobody' } }), 401, { detail: 'A bearer token is required.' });
    const auth = { headers: bearer(admin) };
    assertProblem(await inject({ method: 'POST', url: '/api/voice/start', ...auth, body: { deviceId: 'nobody' } }), 404, { detail: "device 'nobody' does not exist" });
    assertProblem(await inject({ method: 'POST', url: '/api/voice/start', ...auth, body: {} }), 400, {
      title: 'One or more validation errors occurred.',
      detail: 'The request body is invalid.',
      errors: { deviceId: ['The deviceId field is required.'] },
    });
    assertProblem(await inject({ method: 'POST', url: '/api/voice/stop', ...auth, body: { sessionId: 'none' } }), 404, { detail: "session 'none' does not exist" });
  });

  it('reads and writes a configuration category', async () => {
    const device = await register('inj-5');
    const get = await inject({ method: 'GET', url: '/api/config/voice', headers: bearer(device) });
    assert.equal(get.status, 200);
    assert.deepEqual(get.json(), { enableVoice: true, audioSampleRate: 16000, audioChannels: 1, enableNoiseReduction: false, wakeWords: [] });
    assertProblem(await inject({ method: 'PUT', url: '/api/config/voice', headers: bearer(device), body: { wakeWords: [] } }), 403, {
      detail: 'This operation needs an admin token.',
    });
    const put = await inject({ method: 'PUT', url: '/api/config/voice', headers: bearer(admin), body: { wakeWords: ['hey hub'] } });
    assert.equal(put.status, 200);
    assert.deepEqual(put.json(), { enableVoice: true, audioSampleRate: 16000, audioChannels: 1, enableNoiseReduction: false, wakeWords: ['hey hub'] });
    assertProblem(await inject({ method: 'PUT', url: '/api/config/voice', headers: bearer(admin), body: { audioSampleRate: 44100 } }), 400, {
      title: 'One or more validation errors occurred.',
      detail: 'The request body is invalid.',
      errors: { audioSampleRate: ['must be one of 8000, 12000, 16000, 24000, 48000, null'] },
    });
    assertProblem(await inject({ method: 'GET', url: '/api/config/lights', headers: bearer(admin) }), 404, { detail: "configuration category 'lights' does not exist" });
    assert.equal((await inject({ method: 'DELETE', url: '/api/device/inj-5', headers: bearer(admin) })).status, 200);
  });

  it('reports health with one entry per check', async () => {
    const res = await inject({ method: 'GET', url: '/health' });
    assert.ok(res.status === 200 || res.status === 503, `status ${res.status}`);
    // ASP.NET Core's HealthCheckMiddleware: Pragma and Expires for HTTP/1.0 caches, on both answers.
    // Vary: the answer is the report or the status word by Accept (RFC 9110 section 12.5.5).
    const notCached = (h: Record<string, unknown>): unknown[] => [h['cache-control'], h.pragma, h.expires, h.vary];
    assert.deepEqual(notCached(res.headers), ['no-store, no-cache', 'no-cache', 'Thu, 01 Jan 1970 00:00:00 GMT', 'Accept']);
    const report = res.json() as { status: string; entries: Record<string, { status: string }> };
    assert.equal(res.status, report.status === 'Unhealthy' ? 503 : 200);
    assert.deepEqual(Object.keys(report.entries).sort(), ['database', 'mqtt', 'voice-service']);
    assert.equal(report.entries.database!.status, 'Healthy');
    const text = await inject({ method: 'GET', url: '/health', headers: { accept: 'text/plain' } });
    assert.equal(text.body, report.status);
    assert.deepEqual(notCached(text.headers), ['no-store, no-cache', 'no-cache', 'Thu, 01 Jan 1970 00:00:00 GMT', 'Accept']);
  });

  it('routes as the listener does: dot segments removed, /health for every method; a target without a leading slash is no route', async () => {
    for (const url of ['/api/../health', '/%2E/health?x=1', '/health/.']) {
      const res = await inject({ method: 'GET', url, headers: { accept: 'text/plain' } });
      assert.ok(['Healthy', 'Degraded', 'Unhealthy'].includes(res.body), `${url}: ${res.status} ${res.body}`);
    }
    const post = await inject({ method: 'POST', url: '/health', headers: { accept: 'text/plain' } });
    assert.ok(['Healthy', 'Degraded', 'Unhealthy'].includes(post.body), post.body);
    assertProblem(await inject({ method: 'GET', url: '/api/x/../nothing' }), 404, { detail: 'No route matches GET /api/nothing.' });
    assertProblem(await inject({ method: 'GET', url: 'health/../x' }), 404, { detail: 'No route matches GET health/../x.' });
  });

  it('answers the transport problems: 404, 405, 413, 415, 400 framing', async () => {
    assertProblem(await inject({ method: 'GET', url: '/api/nothing' }), 404, { detail: 'No route matches GET /api/nothing.' });
    const wrong = await inject({ method: 'PATCH', url: '/api/device/list' });
    assertProblem(wrong, 405, { detail: 'Method PATCH is not allowed here.' });
    // /api/device/list is also the path of DELETE /api/device/{deviceId}.
    assert.equal(wrong.headers.allow, 'DELETE, GET');
    const big = await inject({ method: 'POST', url: '/api/device/register', body: { deviceId: 'x'.repeat(2000) } });
    assertProblem(big, 413, { detail: 'The request body is larger than the limit of 1024 bytes.' });
    assert.equal(big.closed, true);
    assertProblem(await inject({ method: 'POST', url: '/api/device/register', headers: { 'content-type': 'text/plain' }, body: '{}' }), 415, {
      detail: 'The request body must be JSON (Content-Type: application/json).',
    });
    const twoLengths = await inject({ method: 'GET', url: '/health', headers: { 'content-length': ['0', '0'] } });
    assertProblem(twoLengths, 400, { detail: 'The request carries more than one Content-Length header.' });
    assert.equal(twoLengths.closed, true);
  });
});
