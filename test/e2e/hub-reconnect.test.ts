// A device whose connection drops mid-stream, without stateful reconnect: the official client with
// withAutomaticReconnect() and JoinSession in onreconnected, through the simulator's drop relay, against the
// whole service and the echo voice server. It loses only the packets due while it was cut off, and resumes
// the same session (same id, same upstream link, answers flowing again). A device that never comes back
// ends its session after VoiceService.DeviceReconnectGracePeriod.
import { HubConnectionBuilder, HubConnectionState, LogLevel } from '@microsoft/signalr';
import { MessagePackHubProtocol } from '@microsoft/signalr-protocol-msgpack';
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startDropRelay, type DropRelay } from '../../src/cli/drop-relay.js';
import { call } from '../support/http.js';
import { textFrame, upgradeSocket } from '../support/raw-websocket.js';
import { registerDevice, adminToken } from '../support/tokens.js';
import { audioArg, HubEvents, startSession, startVoiceRig, type VoiceRig } from '../support/voice.js';
import { sleep, waitUntil, withTimeout } from '../support/wait.js';
import { speechPackets } from '../voice/helpers.js';

const PACKET_MS = 20;
const OUTAGE_MS = 400;

let rig: VoiceRig;
let relay: DropRelay;
before(async () => {
  rig = await startVoiceRig({ flags: { 'VoiceService.DeviceReconnectGracePeriod': '00:00:00.8000000' } });
  relay = await startDropRelay({ host: '127.0.0.1', port: rig.svc.port });
});
after(() => relay.close());

function device(protocol: 'json' | 'messagepack') {
  let builder = new HubConnectionBuilder()
    .withUrl(`http://127.0.0.1:${relay.port}/voice-hub`)
    // Retry at once, then quickly: the default policy waits 2 s before its second try.
    .withAutomaticReconnect([0, 100, 200, 400, 800, 1000, 1000])
    .configureLogging(LogLevel.None);
  if (protocol === 'messagepack') builder = builder.withHubProtocol(new MessagePackHubProtocol());
  return builder.build();
}

describe('without stateful reconnect, a dropped device rejoins its session', () => {
  for (const protocol of ['json', 'messagepack'] as const) {
    it(`${protocol}: only the packets due while cut off are lost; same session, same upstream link, answers flow again`, async () => {
      const { id: deviceId, token } = await registerDevice(rig.svc);
      const admin = await adminToken(rig.svc);
      const devicesBefore = (await call(rig.svc.url, 'GET', '/api/device/list', { token: admin })).json.totalCount;
      const { sessionId } = await startSession(rig.svc, deviceId, token);
      const upstreamBefore = rig.echo.connections();

      const connection = device(protocol);
      const events = new HubEvents(connection);
      let joined = false;
      let rejoins = 0;
      connection.onreconnecting(() => { joined = false; });
      // What firmware does without stateful reconnect: join the session again on the new connection.
      let answeredBeforeRejoin = 0;
      connection.onreconnected(async () => {
        answeredBeforeRejoin = events.of('AudioResponse').length;
        await connection.invoke('JoinSession', sessionId, token);
        rejoins++;
        joined = true;
      });
      await withTimeout(connection.start(), 5000, 'start');
      await connection.invoke('JoinSession', sessionId, token);
      joined = true;

      const packets = speechPackets();
      const sent = { before: 0, after: 0, cutOff: 0 };
      let dropped = false;
      const t0 = performance.now();
      for (let tick = 0; tick < packets.length; tick++) {
        const due = t0 + (tick + 1) * PACKET_MS; // real time, drift-free
        if (tick === 30) {
          // Cut when everything sent so far has been processed: what is lost is then exactly what is due after.
          await events.waitFor('AudioProcessed', sent.before, 5000);
          relay.dropAll(OUTAGE_MS);
          dropped = true;
        }
        // Due between the cut and the rejoin: sent into the dead link before the client noticed, or held back.
        if (dropped && rejoins === 0) sent.cutOff++;
        else if (dropped) sent.after++;
        else sent.before++;
        if (joined && connection.state === HubConnectionState.Connected) {
          await connection.send('SendAudioData', sessionId, audioArg(packets[tick]!, protocol)).catch(() => undefined);
        }
        await sleep(Math.max(0, due - performance.now()));
      }
      assert.equal(rejoins, 1, 'reconnected and joined again once');
      // At least half the outage's packets (the machine may be slow); the exact loss is checked below.
      assert.ok(sent.cutOff >= OUTAGE_MS / PACKET_MS / 2, `packets due while cut off: ${sent.cutOff}`);
      assert.ok(sent.after > 0, 'streamed again after rejoining');

      // The session went on: the service processed every packet that reached it, numbered on from before.
      await waitUntil(() => rig.svc.app.sessions.get(sessionId)?.audioPacketsSent === sent.before + sent.after, 'service count', 5000)
        .catch((e) => { throw new Error(`${e.message}: ${JSON.stringify({ sent, service: rig.svc.app.sessions.get(sessionId), rejoins })}`); });
      await events.waitFor('AudioProcessed', sent.before + sent.after, 5000);
      // Every packet sent after the rejoin is answered; answers that came back while the device was away
      // (to packets sent just before the cut) went to nobody: that is what stateful reconnect would keep.
      await events.waitFor('AudioResponse', answeredBeforeRejoin + sent.after, 5000);
      assert.ok(answeredBeforeRejoin >= sent.before - 5 && answeredBeforeRejoin <= sent.before, `answered before the cut: ${answeredBeforeRejoin} of ${sent.before}`);
      await sleep(100);
      assert.equal(events.of('AudioResponse').length, answeredBeforeRejoin + sent.after, 'no answer twice');
      const joinedIds = events.of('SessionJoined');
      assert.deepEqual(joinedIds, [sessionId, sessionId], 'the rejoin on the new connection joined the same session');
      const seqs = (events.of('AudioProcessed') as { sequence: number }[]).map((p) => p.sequence);
      const lastBefore = seqs.indexOf(sent.before);
      assert.deepEqual(seqs.slice(0, lastBefore + 1), Array.from({ length: sent.before }, (_, i) => i + 1));
      assert.deepEqual(seqs.slice(-sent.after), Array.from({ length: sent.after }, (_, i) => sent.before + i + 1), 'the same session numbers on');

      const record = rig.svc.app.sessions.get(sessionId)!;
      assert.equal(record.state, 'Active');
      assert.equal(rig.svc.app.sessions.list().filter((s) => s.deviceId === deviceId).length, 1, 'one session for the device');
      assert.equal(rig.echo.connections(), upstreamBefore, 'the same upstream link (no new one)');
      assert.deepEqual(events.of('SessionEnded'), []);
      assert.deepEqual(events.of('Error'), []);
      assert.equal(events.closed, false, 'onclose never fired');
      const devicesAfter = (await call(rig.svc.url, 'GET', '/api/device/list', { token: admin })).json.totalCount;
      assert.equal(devicesAfter, devicesBefore, 'no second registration, no second MaxDevices slot');
      await connection.stop();
      assert.equal((await call(rig.svc.url, 'POST', '/api/voice/stop', { body: { sessionId }, token })).status, 200);
      await waitUntil(() => rig.echo.connections() === upstreamBefore - 1, 'upstream link closed', 5000);
    });
  }

  it('a device that does not come back within the grace period: its session ends, saying why', async () => {
    const { id: deviceId, token } = await registerDevice(rig.svc);
    const { sessionId } = await startSession(rig.svc, deviceId, token);
    const connection = device('json');
    await withTimeout(connection.start(), 5000, 'start');
    await connection.invoke('JoinSession', sessionId, token);
    await connection.stop(); // gone for good
    await sleep(300);
    assert.equal(rig.svc.app.sessions.get(sessionId)?.state, 'Active', 'still waiting within the grace period');
    await waitUntil(() => rig.svc.app.sessions.get(sessionId)?.state === 'Stopped', 'session end', 5000);
    const res = await call(rig.svc.url, 'POST', '/api/voice/stop', { body: { sessionId }, token });
    assert.equal(res.status, 200);
    assert.equal(res.json.state, 'Stopped');
    assert.equal(res.json.endReason, 'device did not rejoin within 800 ms of losing its connection');
  });
  it('a connection that ends while its JoinSession checks the token is no return of the device: the session still ends', async () => {
    const { id: deviceId, token } = await registerDevice(rig.svc);
    const { sessionId } = await startSession(rig.svc, deviceId, token);
    const connection = device('json');
    await withTimeout(connection.start(), 5000, 'start');
    await connection.invoke('JoinSession', sessionId, token);
    await connection.stop(); // the device is away: the grace period runs
    // A token never checked before: checking its signature takes a turn of the event loop (a thread-pool job).
    const fresh = await call(rig.svc.url, 'POST', `/api/device/${encodeURIComponent(deviceId)}/token`, { token });
    assert.equal(fresh.status, 200);
    // The device comes back and is cut off at once: its JoinSession and the end of its socket arrive together.
    const socket = await upgradeSocket(`${rig.svc.url}/voice-hub`);
    socket.on('error', () => undefined);
    const join = JSON.stringify({ type: 1, invocationId: '1', target: 'JoinSession', arguments: [sessionId, fresh.json.deviceToken] });
    socket.end(textFrame(`{"protocol":"json","version":1}\u001e${join}\u001e`));
    await waitUntil(() => rig.svc.app.sessions.get(sessionId)?.state === 'Stopped', 'the session to end', 5000);
    assert.equal(rig.svc.app.sessions.get(sessionId)?.endReason, 'device did not rejoin within 800 ms of losing its connection');
  });

  it('an admin watching a session is no presence of its device: its leaving ends nothing, its staying holds nothing', async () => {
    const admin = await adminToken(rig.svc);
    const watch = async (sessionId: string) => {
      const watcher = device('json');
      await withTimeout(watcher.start(), 5000, 'watcher start');
      await watcher.invoke('JoinSession', sessionId, admin);
      return watcher;
    };
    // A session driven over HTTP alone: an admin joins to watch it, then closes its tab.
    const a = await registerDevice(rig.svc);
    const httpOnly = await startSession(rig.svc, a.id, a.token);
    await (await watch(httpOnly.sessionId)).stop();
    await sleep(1500); // past the 0.8 s grace period
    assert.equal(rig.svc.app.sessions.get(httpOnly.sessionId)?.state, 'Active');
    const message = await call(rig.svc.url, 'POST', '/api/voice/message', { body: { sessionId: httpOnly.sessionId, text: 'hi', messageType: 'text' }, token: a.token });
    assert.equal(message.status, 200);

    // A device that leaves while an admin still watches: its session ends after the grace period.
    const b = await registerDevice(rig.svc);
    const joined = await startSession(rig.svc, b.id, b.token);
    const watcher = await watch(joined.sessionId);
    const connection = device('json');
    await withTimeout(connection.start(), 5000, 'start');
    await connection.invoke('JoinSession', joined.sessionId, b.token);
    await connection.stop();
    await waitUntil(() => rig.svc.app.sessions.get(joined.sessionId)?.state === 'Stopped', 'the session to end', 5000);
    assert.equal(rig.svc.app.sessions.get(joined.sessionId)?.endReason, 'device did not rejoin within 800 ms of losing its connection');
    await watcher.stop();
    assert.equal((await call(rig.svc.url, 'POST', '/api/voice/stop', { body: { sessionId: httpOnly.sessionId }, token: a.token })).status, 200);
  });
});
