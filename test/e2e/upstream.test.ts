// The upstream voice server going away under a live session, and a session going quiet, seen from a hub
// client (docs/protocol.md, "The upstream voice server"): reconnect with backoff (3 tries, then
// Failed and SessionEnded to the group), the service stays up, and the idle timeout stops a silent session.
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { call } from '../support/http.js';
import { registerDevice } from '../support/tokens.js';
import { audioArg, joinedClient, startEcho, startSession, startVoiceRig } from '../support/voice.js';
import { speechPackets } from '../voice/helpers.js';

const packet = speechPackets()[0]!;

it('upstream killed for good: SessionEnded (Failed) to the group after the reconnects; the service stays up; a new session works once it is back', async () => {
  const { echo, svc } = await startVoiceRig();
  const device = await registerDevice(svc);
  const { sessionId } = await startSession(svc, device.id, device.token);
  const { connection, events } = await joinedClient(svc, sessionId, device.token, { protocol: 'messagepack' });
  await connection.invoke('SendAudioData', sessionId, audioArg(packet, 'messagepack'));
  await events.waitFor('AudioResponse');

  await echo.close();
  // 250 + 500 + 1000 ms of backoff between refused attempts, then the session is Failed.
  const [ended] = await events.waitFor('SessionEnded', 1, 10_000) as { sessionId: string; reason: string }[];
  assert.equal(ended!.sessionId, sessionId);
  assert.match(ended!.reason, /^upstream connection lost \(closed with 1006\); 3 reconnect attempts failed: .*ECONNREFUSED/);
  const stopped = await call(svc.url, 'POST', '/api/voice/stop', { body: { sessionId }, token: device.token });
  assert.equal(stopped.status, 200);
  assert.equal(stopped.json.state, 'Failed');
  assert.equal(stopped.json.audioPacketsSent, 1);

  // Audio into the failed session is refused with an Error, not a crash; the hub connection stays usable.
  await connection.invoke('SendAudioData', sessionId, audioArg(packet, 'messagepack'));
  assert.deepEqual(await events.waitFor('Error'), [`session '${sessionId}' is not active (Failed)`]);
  assert.equal((await call(svc.url, 'GET', '/health')).status, 503, 'health says the voice service is down');

  const back = await startEcho(echo.port);
  assert.equal(back.port, echo.port);
  const next = await startSession(svc, device.id, device.token);
  const again = await joinedClient(svc, next.sessionId, device.token);
  await again.connection.invoke('SendAudioData', next.sessionId, audioArg(packet));
  assert.equal((await again.events.waitFor('AudioResponse')).length, 1);
  // /health caches its upstream probe for 2 s; it turns green within a few seconds.
  const deadline = Date.now() + 6000;
  while ((await call(svc.url, 'GET', '/health')).status !== 200) {
    assert.ok(Date.now() < deadline, '/health still not 200 6 s after the upstream came back');
    await new Promise((r) => setTimeout(r, 250));
  }
});

it('upstream restarted within the backoff: the session reconnects and carries on', async () => {
  const { echo, svc } = await startVoiceRig();
  const device = await registerDevice(svc);
  const { sessionId } = await startSession(svc, device.id, device.token);
  const { connection, events } = await joinedClient(svc, sessionId, device.token);
  await echo.close();
  await startEcho(echo.port); // back long before the last of the three attempts (1.75 s in)
  // While the link reconnects, audio is refused with an Error; once it is back, audio flows again.
  const deadline = Date.now() + 10_000;
  while (events.of('AudioResponse').length === 0) {
    assert.ok(Date.now() < deadline, 'no AudioResponse within 10 s of the restart');
    await connection.invoke('SendAudioData', sessionId, audioArg(packet));
    await new Promise((r) => setTimeout(r, 100));
  }
  assert.deepEqual(events.of('SessionEnded'), []);
  assert.equal(svc.app.sessions.get(sessionId)?.state, 'Active');
  // 'open' is the moment between the socket dying and its close event (the link's state still says Open).
  for (const error of events.of('Error')) assert.match(String(error), /^upstream connection is (reconnecting|closing): audio dropped$/);
});

it('a silent session is stopped after VoiceService.SessionIdleTimeout: SessionEnded "idle timeout"', async () => {
  const { svc } = await startVoiceRig({ flags: { 'VoiceService.SessionIdleTimeout': '00:00:01' } });
  const device = await registerDevice(svc);
  const { sessionId } = await startSession(svc, device.id, device.token);
  const { events } = await joinedClient(svc, sessionId, device.token);
  assert.deepEqual(await events.waitFor('SessionEnded', 1, 5000), [{ sessionId, reason: 'idle timeout' }]);
  assert.equal(svc.app.sessions.get(sessionId)?.state, 'Stopped');
  assert.equal(svc.app.sessions.get(sessionId)?.endReason, 'idle timeout');
});
