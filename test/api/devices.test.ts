// Device endpoints against the real service: success paths and every error row that applies.
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { call } from '../support/http.js';
import { startService, type TestService } from '../support/service.js';
import { adminToken, registerDevice } from '../support/tokens.js';

const PROBLEM = 'application/problem+json';
/** The refusal of a device id outside its pattern, as ajv words it. */
const ID_PATTERN_TEXT = String.raw`must match pattern "^(?!\.\.?$)[^\u0000-\u001f\u007f-\u009f]*$"`;

function assertProblem(res: { status: number; headers: Headers; json: any }, status: number, detail?: RegExp | string): void {
  assert.equal(res.status, status);
  assert.equal(res.headers.get('content-type'), PROBLEM);
  assert.equal(res.json.status, status);
  assert.equal(typeof res.json.title, 'string');
  assert.match(res.json.type, /^https:\/\/tools\.ietf\.org\/html\/rfc9110#section-15\./);
  assert.match(res.json.traceId, /^00-[0-9a-f]{32}-[0-9a-f]{16}-00$/);
  if (typeof detail === 'string') assert.equal(res.json.detail, detail);
  else if (detail) assert.match(res.json.detail, detail);
}

describe('device registration', () => {
  let svc: TestService;
  before(async () => {
    svc = await startService({ flags: { 'DeviceManagement.MaxDevices': 3 } });
  });

  it('registers a device: token, expiry from TokenExpiration, online, lastSeen now', async () => {
    const before = Date.now();
    const res = await call(svc.url, 'POST', '/api/device/register', {
      body: { deviceId: 'kitchen-1', deviceName: 'Kitchen', deviceType: 'speaker', capabilities: ['audio'], location: 'kitchen' },
    });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'application/json; charset=utf-8');
    assert.deepEqual(Object.keys(res.json).sort(), ['deviceInfo', 'deviceToken', 'expiresAt']);
    assert.match(res.json.deviceToken, /^[\w-]+\.[\w-]+\.[\w-]+$/);
    const info = res.json.deviceInfo;
    assert.deepEqual(Object.keys(info).sort(), ['id', 'lastSeen', 'name', 'status']);
    assert.equal(info.id, 'kitchen-1');
    assert.equal(info.name, 'Kitchen');
    assert.equal(info.status, 'online');
    const seen = Date.parse(info.lastSeen);
    assert.ok(seen >= before - 1000 && seen <= Date.now() + 1000, `lastSeen ${info.lastSeen}`);
    assert.match(res.json.expiresAt, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    const ttl = Date.parse(res.json.expiresAt) - seen;
    assert.ok(Math.abs(ttl - 24 * 3600_000) < 5000, `token lifetime ${ttl} ms`);
  });

  it('refuses a second registration of the same deviceId with 409', async () => {
    const body = { deviceId: 'dup-1', deviceName: 'A', deviceType: 'speaker' };
    assert.equal((await call(svc.url, 'POST', '/api/device/register', { body })).status, 200);
    const res = await call(svc.url, 'POST', '/api/device/register', { body });
    assertProblem(res, 409, "device 'dup-1' already exists");
  });

  it('refuses registration beyond MaxDevices with 409 and frees a slot on delete', async () => {
    const admin = await adminToken(svc);
    await registerDevice(svc, { deviceId: 'max-3' }).catch(() => undefined);
    const res = await call(svc.url, 'POST', '/api/device/register', { body: { deviceId: 'max-4', deviceName: 'x', deviceType: 'y' } });
    assertProblem(res, 409, 'The maximum number of devices (3) is registered.');
    assert.equal((await call(svc.url, 'DELETE', '/api/device/max-3', { token: admin })).status, 200);
    assert.equal((await call(svc.url, 'POST', '/api/device/register', { body: { deviceId: 'max-4', deviceName: 'x', deviceType: 'y' } })).status, 200);
  });

  it('answers validation problems with the fields at fault', async () => {
    const res = await call(svc.url, 'POST', '/api/device/register', { body: { deviceId: '', deviceName: 5, capabilities: 'audio' } });
    assertProblem(res, 400);
    assert.equal(res.json.title, 'One or more validation errors occurred.');
    assert.deepEqual(res.json.errors, {
      deviceId: ['must NOT have fewer than 1 characters'],
      deviceName: ['must be string'],
      deviceType: ['The deviceType field is required.'],
      capabilities: ['must be array'],
    });
  });

  it('refuses ids with a control character, C0, DEL or C1 (U+0085 is a line break to many log readers)', async () => {
    for (const deviceId of ['a\u0000', 'a\u001fb', 'a\u007f', '\u0080', 'a\u0085b', 'a\u009f']) {
      const res = await call(svc.url, 'POST', '/api/device/register', { body: { deviceId, deviceName: 'x', deviceType: 'y' } });
      assertProblem(res, 400, 'The request body is invalid.');
      assert.deepEqual(res.json.errors, { deviceId: [ID_PATTERN_TEXT] }, JSON.stringify(deviceId));
    }
  });

  it("refuses the ids '.' and '..', which a URL cannot carry (clients remove dot segments); '...' and '.a' are ids", async () => {
    for (const deviceId of ['.', '..']) {
      const res = await call(svc.url, 'POST', '/api/device/register', { body: { deviceId, deviceName: 'x', deviceType: 'y' } });
      assertProblem(res, 400, 'The request body is invalid.');
      assert.equal(res.json.title, 'One or more validation errors occurred.');
      assert.deepEqual(res.json.errors, { deviceId: [ID_PATTERN_TEXT] });
    }
    const own = await startService();
    try {
      for (const deviceId of ['...', '.a']) {
        const res = await call(own.url, 'POST', '/api/device/register', { body: { deviceId, deviceName: 'x', deviceType: 'y' } });
        assert.equal(res.status, 200, res.text);
        assert.equal((await call(own.url, 'DELETE', `/api/device/${encodeURIComponent(deviceId)}`, { token: await adminToken(own) })).status, 200);
      }
    } finally {
      await own.stop();
    }
  });
});

describe('registration switches and API keys', () => {
  it('answers 403 when AllowDeviceRegistration is false', async () => {
    const svc = await startService({ file: { DeviceManagement: { AllowDeviceRegistration: false } } });
    const res = await call(svc.url, 'POST', '/api/device/register', { body: { deviceId: 'a', deviceName: 'a', deviceType: 'a' } });
    assertProblem(res, 403, 'Device registration is disabled.');
  });

  it('requires X-API-Key when ApiKeys is non-empty: plain-text 401', async () => {
    const svc = await startService({ env: { ApiKeys__0: 'first-key-123', ApiKeys__1: 'second-key-456' } });
    const body = { deviceId: 'k1', deviceName: 'a', deviceType: 'a' };
    for (const headers of [{}, { 'x-api-key': 'wrong' }, { 'x-api-key': 'first-key-12' }] as Record<string, string>[]) {
      const res = await call(svc.url, 'POST', '/api/device/register', { body, headers });
      assert.equal(res.status, 401);
      assert.equal(res.headers.get('content-type'), 'text/plain; charset=utf-8');
      assert.equal(res.text, 'Invalid API Key');
    }
    const ok = await call(svc.url, 'POST', '/api/device/register', { body, headers: { 'x-api-key': 'second-key-456' } });
    assert.equal(ok.status, 200);
  });
});

describe('status, list, delete and token refresh', () => {
  let svc: TestService;
  let admin: string;
  before(async () => {
    svc = await startService();
    admin = await adminToken(svc);
  });

  it('updates status and metrics with the device token and sets lastSeen', async () => {
    const dev = await registerDevice(svc);
    await new Promise((r) => setTimeout(r, 20));
    const res = await call(svc.url, 'PUT', `/api/device/${dev.id}/status`, {
      token: dev.token,
      body: { status: 'busy', batteryLevel: 87.5, temperature: 41.2, memoryUsage: 63, cpuUsage: 12.5 },
    });
    assert.equal(res.status, 200);
    assert.equal(res.json.id, dev.id);
    assert.equal(res.json.status, 'busy');
    assert.deepEqual(res.json.metrics, { batteryLevel: 87.5, temperature: 41.2, memoryUsage: 63, cpuUsage: 12.5 });
    assert.ok(Date.parse(res.json.lastSeen) > Date.parse(dev.body.deviceInfo.lastSeen));
    const list = await call(svc.url, 'GET', '/api/device/list', { token: admin });
    const listed = list.json.devices.find((d: any) => d.id === dev.id);
    assert.deepEqual(listed, res.json);
  });

  it('refuses status updates without a token, with a bad header, for another device, or unknown device', async () => {
    const a = await registerDevice(svc);
    const b = await registerDevice(svc);
    const body = { status: 'online' };
    const none = await call(svc.url, 'PUT', `/api/device/${a.id}/status`, { body });
    assertProblem(none, 401, 'A bearer token is required.');
    assert.equal(none.headers.get('www-authenticate'), 'Bearer');
    const malformed = await call(svc.url, 'PUT', `/api/device/${a.id}/status`, { body, headers: { authorization: `Basic ${a.token}` } });
    assertProblem(malformed, 401, 'The Authorization header must be "Bearer <token>".');
    const other = await call(svc.url, 'PUT', `/api/device/${a.id}/status`, { body, token: b.token });
    assertProblem(other, 403, 'The token belongs to another device.');
    const unknown = await call(svc.url, 'PUT', '/api/device/nope/status', { body, token: admin });
    assertProblem(unknown, 404, "device 'nope' does not exist");
    const bad = await call(svc.url, 'PUT', `/api/device/${a.id}/status`, { body: { status: 'on line', batteryLevel: 101 }, token: a.token });
    assertProblem(bad, 400);
    assert.deepEqual(bad.json.errors, { status: ['must match pattern "^[A-Za-z0-9_.-]{1,32}$"'], batteryLevel: ['must be <= 100'] });
  });

  it('a status PUT replaces the whole reading: a metric it does not name becomes null', async () => {
    const dev = await registerDevice(svc);
    const full = await call(svc.url, 'PUT', `/api/device/${dev.id}/status`, { body: { status: 'online', batteryLevel: 87, temperature: 41.5, memoryUsage: 63, cpuUsage: 12 }, token: dev.token });
    assert.equal(full.status, 200, full.text);
    assert.deepEqual(full.json.metrics, { batteryLevel: 87, temperature: 41.5, memoryUsage: 63, cpuUsage: 12 });
    const partial = await call(svc.url, 'PUT', `/api/device/${dev.id}/status`, { body: { status: 'busy', cpuUsage: 95 }, token: dev.token });
    assert.equal(partial.status, 200, partial.text);
    assert.deepEqual(partial.json.metrics, { batteryLevel: null, temperature: null, memoryUsage: null, cpuUsage: 95 });
  });

  it('lists devices for admins only', async () => {
    const dev = await registerDevice(svc);
    const res = await call(svc.url, 'GET', '/api/device/list', { token: admin });
    assert.equal(res.status, 200);
    assert.equal(res.json.totalCount, res.json.devices.length);
    const d = res.json.devices.find((x: any) => x.id === dev.id);
    assert.deepEqual(Object.keys(d).sort(), ['id', 'lastSeen', 'location', 'metrics', 'name', 'status', 'type']);
    assert.equal(d.type, 'speaker');
    assert.equal(d.location, 'kitchen');
    assert.deepEqual(d.metrics, { batteryLevel: null, temperature: null, memoryUsage: null, cpuUsage: null });
    assertProblem(await call(svc.url, 'GET', '/api/device/list', { token: dev.token }), 403, 'This operation needs an admin token.');
    assertProblem(await call(svc.url, 'GET', '/api/device/list'), 401, 'A bearer token is required.');
  });

  it('refreshes a token; the new one works', async () => {
    const dev = await registerDevice(svc);
    const res = await call(svc.url, 'POST', `/api/device/${dev.id}/token`, { token: dev.token });
    assert.equal(res.status, 200);
    assert.notEqual(res.json.deviceToken, dev.token);
    assert.equal(res.json.deviceInfo.id, dev.id);
    const use = await call(svc.url, 'PUT', `/api/device/${dev.id}/status`, { token: res.json.deviceToken, body: { status: 'online' } });
    assert.equal(use.status, 200);
    const other = await registerDevice(svc);
    assertProblem(await call(svc.url, 'POST', `/api/device/${dev.id}/token`, { token: other.token }), 403);
    assert.equal((await call(svc.url, 'POST', `/api/device/${dev.id}/token`, { token: admin })).status, 200);
  });

  it('deletes a device: its tokens die, even after re-registration under the same id', async () => {
    const dev = await registerDevice(svc);
    assertProblem(await call(svc.url, 'DELETE', `/api/device/${dev.id}`, { token: dev.token }), 403);
    const del = await call(svc.url, 'DELETE', `/api/device/${dev.id}`, { token: admin });
    assert.equal(del.status, 200);
    assert.equal(del.json.id, dev.id);
    assertProblem(await call(svc.url, 'DELETE', `/api/device/${dev.id}`, { token: admin }), 404, `device '${dev.id}' does not exist`);
    const stale = await call(svc.url, 'PUT', `/api/device/${dev.id}/status`, { token: dev.token, body: { status: 'online' } });
    assertProblem(stale, 401, 'The token has been revoked.');
    const again = await registerDevice(svc, { deviceId: dev.id });
    const stillStale = await call(svc.url, 'PUT', `/api/device/${dev.id}/status`, { token: dev.token, body: { status: 'online' } });
    assertProblem(stillStale, 401, 'The token has been revoked.');
    const fresh = await call(svc.url, 'PUT', `/api/device/${dev.id}/status`, { token: again.token, body: { status: 'online' } });
    assert.equal(fresh.status, 200);
  });
});
