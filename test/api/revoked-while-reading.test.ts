// A request whose token was current when it was checked, but whose body arrived only after its device
// was deleted and registered again under the same id (a new device, with a token generation of its
// own). The deleted device's token must not act on the new device: refresh its token, replace its
// status or start its session. Answered as the same request coming a moment later is: 401, revoked.
import assert from 'node:assert/strict';
import http from 'node:http';
import { describe, it } from 'node:test';
import { call } from '../support/http.js';
import { answered, assertProblem } from '../support/problem.js';
import { startService } from '../support/service.js';
import { adminToken, registerDevice } from '../support/tokens.js';

const REVOKED = 'The token has been revoked.';

/** Sends the headers and the body's first byte now; the rest when `finish` is called. */
function withheldBody(port: number, method: string, path: string, token: string, body: string) {
  const req = http.request({ host: '127.0.0.1', port, method, path, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } });
  const answer = new Promise<{ status: number; headers: Headers; text: string }>((resolve, reject) => {
    req.on('error', reject);
    req.on('response', (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode!, headers: new Headers(res.headers as Record<string, string>), text }));
    });
  });
  req.write(body.slice(0, 1));
  return { finish: () => { req.end(body.slice(1)); return answer; } };
}

describe('a token revoked while its request body was still arriving', () => {
  it('token refresh, status update and session start are 401 revoked; the new device is untouched', async () => {
    const svc = await startService({ flags: { 'DeviceManagement.MaxDevices': 5, 'VoiceService.RequireDeviceToken': true } });
    const admin = await adminToken(svc);
    const old = await registerDevice(svc, { deviceId: 'kitchen' });
    const pending = [
      withheldBody(svc.port, 'POST', '/api/device/kitchen/token', old.token, '{}'),
      withheldBody(svc.port, 'PUT', '/api/device/kitchen/status', old.token, '{"status":"hijacked","batteryLevel":1}'),
      withheldBody(svc.port, 'POST', '/api/voice/start', old.token, '{"deviceId":"kitchen","userId":"u"}'),
    ];
    // The token checks of all three have run (they do not wait for the body).
    await new Promise((resolve) => setTimeout(resolve, 200));
    assert.equal((await call(svc.url, 'DELETE', '/api/device/kitchen', { token: admin })).status, 200);
    const fresh = await registerDevice(svc, { deviceId: 'kitchen' });

    for (const p of pending) {
      const res = await p.finish();
      assertProblem(answered(res), 401, { detail: REVOKED });
      assert.equal(res.headers.get('www-authenticate'), `Bearer error="invalid_token", error_description="${REVOKED}"`);
    }
    const list = await call(svc.url, 'GET', '/api/device/list', { token: admin });
    assert.deepEqual(list.json.devices.map((d: { id: string; status: string; metrics: unknown }) => [d.id, d.status, d.metrics]), [
      ['kitchen', 'online', { batteryLevel: null, temperature: null, memoryUsage: null, cpuUsage: null }],
    ]);
    assert.deepEqual(svc.app.sessions.list(), []);
    // The new device's own token works.
    assert.equal((await call(svc.url, 'POST', '/api/device/kitchen/token', { token: fresh.token })).status, 200);
  });
});
