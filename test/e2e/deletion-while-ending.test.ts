// A session that ends while its device's deletion is being written (a stop, its idle timeout, its
// upstream giving up, its device's grace period): whether its final record is written depends on how the
// deletion ends, which is not known until the disk has answered. A deletion the disk refuses (503) gives
// the device back with its sessions' records as they were before it; the ended session's record was
// skipped as a deleted device's, so it stayed Active: a stop answered 200 with `state: Active`, a message
// 409 "not active (Active)", JoinSession sent SessionJoined for a session that had ended, and the restart
// ended it a second time. A slow disk (an SD card's fsync) makes the deletion's write take a while: here
// each write of the database waits 300 ms first, and the data dir is replaced by a file for the deletion's
// write alone, so that it fails as a vanished mount does (ENOTDIR).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { call } from '../support/http.js';
import { answered, assertProblem } from '../support/problem.js';
import { startService } from '../support/service.js';
import { slowDisk } from '../support/slow-disk.js';
import { adminToken, registerDevice } from '../support/tokens.js';
import { connectHub, HubEvents, startEcho, startSession } from '../support/voice.js';
import { waitUntil, withTimeout } from '../support/wait.js';

/** How long each write of the database waits: the deletion's write lasts that long at least. */
const WRITE_DELAY_MS = 300;

describe('a session that ends while its device\'s deletion is being written', () => {
  it('a deletion the disk refuses leaves the session ended: stop, message, JoinSession and the restart say Stopped', async () => {
    const echo = await startEcho();
    const flags = { 'VoiceService.ServerUrl': `ws://127.0.0.1:${echo.port}/voice` };
    let svc = await startService({ flags });
    const admin = await adminToken(svc);
    const device = await registerDevice(svc, { deviceId: 'kept' });
    const { sessionId } = await startSession(svc, device.id, device.token);
    const disk = slowDisk(svc, WRITE_DELAY_MS);

    disk.failNext();
    const deletion = call(svc.url, 'DELETE', '/api/device/kept', { token: admin });
    await waitUntil(() => disk.writing === 1, 'the deletion to be written');
    const stopped = await call(svc.url, 'POST', '/api/voice/stop', { body: { sessionId }, token: admin });
    assert.equal(stopped.status, 200, stopped.text);
    assert.deepEqual([stopped.json.state, stopped.json.endReason], ['Stopped', 'stopped by request']);
    const refused = answered(await deletion);
    assert.equal(refused.status, 503, refused.body);
    assert.match(JSON.parse(refused.body).detail, /^storage is not writable: ENOTDIR: not a directory/);
    const list = await call(svc.url, 'GET', '/api/device/list', { token: admin });
    assert.deepEqual(list.json.devices.map((d: { id: string }) => d.id), ['kept']);

    const again = await call(svc.url, 'POST', '/api/voice/stop', { body: { sessionId }, token: device.token });
    assert.equal(again.status, 200, again.text);
    assert.deepEqual([again.json.state, again.json.endReason], ['Stopped', 'stopped by request']);
    assertProblem(answered(await call(svc.url, 'POST', '/api/voice/message', { body: { sessionId, text: 'hi' }, token: device.token })), 409, {
      detail: `session '${sessionId}' is not active (Stopped)`,
    });
    const hub = await connectHub(svc);
    const events = new HubEvents(hub);
    await withTimeout(hub.invoke('JoinSession', sessionId, device.token), 5000, 'JoinSession');
    assert.deepEqual(await events.waitFor('Error'), [`session '${sessionId}' is Stopped`]);
    assert.deepEqual(events.of('SessionJoined'), []);
    await hub.stop();

    await svc.stop();
    svc = await startService({ flags, dataDir: svc.dataDir });
    assert.ok(!svc.logs.some((l) => l.includes('interrupted session')), svc.logs.join('\n'));
    const restarted = await call(svc.url, 'POST', '/api/voice/stop', { body: { sessionId }, token: device.token });
    assert.equal(restarted.status, 200, restarted.text);
    assert.deepEqual([restarted.json.state, restarted.json.endReason], ['Stopped', 'stopped by request']);
    await svc.stop();
  });

  it('a deletion the disk takes takes the session with it: its final record is not written back', async () => {
    const echo = await startEcho();
    const flags = { 'VoiceService.ServerUrl': `ws://127.0.0.1:${echo.port}/voice` };
    let svc = await startService({ flags });
    const admin = await adminToken(svc);
    const device = await registerDevice(svc, { deviceId: 'gone' });
    const { sessionId } = await startSession(svc, device.id, device.token);
    const disk = slowDisk(svc, WRITE_DELAY_MS);

    const deletion = call(svc.url, 'DELETE', '/api/device/gone', { token: admin });
    await waitUntil(() => disk.writing === 1, 'the deletion to be written');
    const stopped = await call(svc.url, 'POST', '/api/voice/stop', { body: { sessionId }, token: admin });
    assert.equal(stopped.status, 200, stopped.text);
    assert.equal((await deletion).status, 200);
    const detail = `session '${sessionId}' does not exist`;
    assertProblem(answered(await call(svc.url, 'POST', '/api/voice/stop', { body: { sessionId }, token: admin })), 404, { detail });
    await svc.app.store.flush();
    await svc.stop();
    svc = await startService({ flags, dataDir: svc.dataDir });
    assertProblem(answered(await call(svc.url, 'POST', '/api/voice/stop', { body: { sessionId }, token: admin })), 404, { detail });
    await svc.stop();
  });
});
