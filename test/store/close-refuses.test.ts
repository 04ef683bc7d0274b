// What a second stop signal does to the store (App.closeStore): it writes what was acknowledged and,
// from that moment, refuses writes. It once only wrote: status updates that came in while the write
// ran were answered 200 and lost when the process exited (4 of 10 double signals under load).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { call } from '../support/http.js';
import { startService } from '../support/service.js';
import { adminToken, registerDevice } from '../support/tokens.js';

describe('closing the store while requests come in', () => {
  it('a status update after closeStore is 503, and the one answered 200 before it is what is stored', async () => {
    const svc = await startService({ flags: { 'Storage.FlushInterval': '00:01:00' } });
    const device = await registerDevice(svc);
    const put = (batteryLevel: number) => call(svc.url, 'PUT', `/api/device/${device.id}/status`, { token: device.token, body: { status: 'busy', batteryLevel } });
    assert.equal((await put(10)).status, 200);
    const closing = svc.closeStore();
    const late = await put(20);
    assert.equal(late.status, 503);
    assert.equal(late.json.detail, 'storage is closed');
    await closing;
    await svc.stop();

    const again = await startService({ dataDir: svc.dataDir });
    const list = await call(again.url, 'GET', '/api/device/list', { token: await adminToken(again) });
    const stored = list.json.devices.find((d: { id: string }) => d.id === device.id);
    assert.deepEqual({ status: stored.status, batteryLevel: stored.metrics.batteryLevel }, { status: 'busy', batteryLevel: 10 });
  });
});
