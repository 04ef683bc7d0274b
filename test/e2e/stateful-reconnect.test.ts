// A Wi-Fi drop in the middle of a voice session, with the official client and stateful reconnect
// (`withStatefulReconnect()`), JSON and MessagePack: the device streams real Opus speech at real time
// (50 packets a second) through a TCP relay that cuts every connection twice mid-stream; the echo
// upstream sends it all back. Every packet is processed exactly once (AudioProcessed sequences 1..n,
// each once), every AudioResponse arrives once and in order (the PCM equals an independent decode of
// the packets in order), and the client never sees the connection close. A reconnect carrying the
// device's own token resumes; one carrying another device's token is refused. Without it (automatic
// reconnect, JoinSession in onreconnected) the same drop loses at most what was sent while away.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { HubConnectionBuilder, HubConnectionState, LogLevel } from '@microsoft/signalr';
import { MessagePackHubProtocol } from '@microsoft/signalr-protocol-msgpack';
import { startDropRelay, type DropRelay } from '../../src/cli/drop-relay.js';
import { registerDevice } from '../support/tokens.js';
import { EVENT_NAMES, HubEvents, audioArg, startSession, startVoiceRig, type VoiceRig } from '../support/voice.js';
import { sleep, withTimeout } from '../support/wait.js';
import { comparePcm, referenceDecode, speechPackets } from '../voice/helpers.js';

const PACKET_MS = 20;

describe('stateful reconnect: a voice session through connection drops', () => {
  let rig: VoiceRig;
  let relay: DropRelay;
  before(async () => {
    rig = await startVoiceRig();
    relay = await startDropRelay({ host: '127.0.0.1', port: rig.svc.port });
  });
  after(async () => {
    await relay.close();
  });

  for (const protocol of ['json', 'messagepack'] as const) {
    it(`${protocol}: every packet processed once, every AudioResponse once and in order, onclose never fires`, async () => {
      const { svc } = rig;
      const device = await registerDevice(svc);
      const { sessionId } = await startSession(svc, device.id, device.token);
      let builder = new HubConnectionBuilder()
        .withUrl(`http://127.0.0.1:${relay.port}/voice-hub`)
        .withStatefulReconnect()
        .configureLogging(LogLevel.None);
      if (protocol === 'messagepack') builder = builder.withHubProtocol(new MessagePackHubProtocol());
      const connection = builder.build();
      const events = new HubEvents(connection, EVENT_NAMES);
      await withTimeout(connection.start(), 5000, 'client start');
      await withTimeout(connection.invoke('JoinSession', sessionId, device.token), 5000, 'JoinSession');
      const reconnectsBefore = (await hubStats(rig)).reconnects;

      const packets = speechPackets().slice(0, 100);
      const started = Date.now();
      for (let i = 0; i < packets.length; i++) {
        // Real time: packet i leaves at i * 20 ms; the sends do not wait for the hub.
        const due = started + i * PACKET_MS - Date.now();
        if (due > 0) await sleep(due);
        void connection.send('SendAudioData', sessionId, audioArg(packets[i]!, protocol)).catch(() => undefined);
        if (i === 30 || i === 65) relay.dropAll();
      }

      const processed = await events.waitFor('AudioProcessed', packets.length, 15_000);
      const responses = await events.waitFor('AudioResponse', packets.length, 15_000);
      await sleep(500); // anything sent twice would arrive by now
      const sequences = events.of('AudioProcessed').map((p) => (p as { sequence: number }).sequence);
      assert.deepEqual(sequences, packets.map((_, i) => i + 1), 'each packet processed once, in order');
      assert.equal(processed.length, packets.length);
      assert.equal(events.of('AudioResponse').length, packets.length, 'no AudioResponse twice');
      const pcm = Buffer.concat(responses.map((r) => Buffer.from(r as string, 'base64')));
      assert.equal(comparePcm(Buffer.concat(referenceDecode(packets, 16000, 1)), pcm).differing, 0, 'AudioResponse in order');
      assert.deepEqual(events.of('Error'), []);
      assert.equal(events.closed, false, 'onclose never fired');
      assert.equal(connection.state, HubConnectionState.Connected);
      assert.equal((await hubStats(rig)).reconnects - reconnectsBefore, 2, 'both drops were reconnects of the same connection');
      await connection.stop();
    });
  }
});

describe('stateful reconnect with a device token on the connection', () => {
  let rig: VoiceRig;
  let relay: DropRelay;
  before(async () => {
    rig = await startVoiceRig();
    relay = await startDropRelay({ host: '127.0.0.1', port: rig.svc.port });
  });
  after(async () => {
    await relay.close();
  });

  /** A stateful client whose access token is whatever `token()` says at each (re)connect. */
  async function tokenClient(token: () => string): Promise<{ connection: ReturnType<HubConnectionBuilder['build']>; events: HubEvents }> {
    const connection = new HubConnectionBuilder()
      .withUrl(`http://127.0.0.1:${relay.port}/voice-hub`, { accessTokenFactory: token })
      .withStatefulReconnect()
      .configureLogging(LogLevel.None)
      .build();
    const events = new HubEvents(connection, EVENT_NAMES);
    await withTimeout(connection.start(), 5000, 'client start');
    return { connection, events };
  }

  it('the same device\'s token on the reconnect: the connection resumes, still in its session', async () => {
    const device = await registerDevice(rig.svc);
    const { sessionId } = await startSession(rig.svc, device.id, device.token);
    const { connection, events } = await tokenClient(() => device.token);
    await withTimeout(connection.invoke('JoinSession', sessionId, device.token), 5000, 'JoinSession');
    const before = (await hubStats(rig)).reconnects;
    relay.dropAll();
    await withTimeout((async () => { while ((await hubStats(rig)).reconnects === before) await sleep(20); })(), 5000, 'the reconnect');
    await connection.send('SendAudioData', sessionId, audioArg(speechPackets()[0]!, 'json'));
    assert.deepEqual(await events.waitFor('AudioProcessed', 1), [{ sessionId, sequence: 1, bytes: speechPackets()[0]!.length, durationMs: 20 }]);
    assert.equal(events.closed, false);
    await connection.stop();
  });

  it('another device\'s token on the reconnect is refused (403): the client closes instead of taking the connection', async () => {
    const device = await registerDevice(rig.svc);
    const other = await registerDevice(rig.svc);
    let token = device.token;
    const { connection, events } = await tokenClient(() => token);
    const refusedBefore = rig.svc.app.hub.stats().reconnectsRefused ?? 0;
    token = other.token;
    relay.dropAll();
    await events.waitClosed(5000);
    assert.equal((rig.svc.app.hub.stats().reconnectsRefused ?? 0) - refusedBefore, 1);
    assert.equal(connection.state, HubConnectionState.Disconnected);
  });
});

describe('without stateful reconnect: automatic reconnect and JoinSession again', () => {
  let rig: VoiceRig;
  let relay: DropRelay;
  before(async () => {
    rig = await startVoiceRig();
    relay = await startDropRelay({ host: '127.0.0.1', port: rig.svc.port });
  });
  after(async () => {
    await relay.close();
  });

  it('the same drop loses at most the packets sent while disconnected, and the session resumes', async (t) => {
    const { svc } = rig;
    const device = await registerDevice(svc);
    const { sessionId } = await startSession(svc, device.id, device.token);
    const connection = new HubConnectionBuilder()
      .withUrl(`http://127.0.0.1:${relay.port}/voice-hub`)
      .withAutomaticReconnect()
      .configureLogging(LogLevel.None)
      .build();
    const events = new HubEvents(connection, EVENT_NAMES);
    let reconnected = 0;
    connection.onreconnected(() => {
      reconnected++;
      void connection.invoke('JoinSession', sessionId, device.token).catch(() => undefined);
    });
    await withTimeout(connection.start(), 5000, 'client start');
    await withTimeout(connection.invoke('JoinSession', sessionId, device.token), 5000, 'JoinSession');

    const packets = speechPackets().slice(0, 100);
    let refused = 0;
    const started = Date.now();
    for (let i = 0; i < packets.length; i++) {
      const due = started + i * PACKET_MS - Date.now();
      if (due > 0) await sleep(due);
      // A send while the client is reconnecting is refused at once: that packet is lost.
      void connection.send('SendAudioData', sessionId, audioArg(packets[i]!, 'json')).catch(() => refused++);
      if (i === 30) relay.dropAll();
    }
    await withTimeout(
      (async () => {
        while (events.of('AudioProcessed').length < packets.length - refused - 2) await sleep(50);
      })(),
      10_000,
      'the packets sent while connected',
    );
    await sleep(500);
    const sequences = events.of('AudioProcessed').map((p) => (p as { sequence: number }).sequence);
    const lost = packets.length - sequences.length;
    assert.equal(reconnected, 1);
    // A packet already written to the socket that the drop cut is lost too (at most a couple at 50 a second).
    assert.ok(lost <= refused + 2, `lost ${lost}, sent while disconnected ${refused}`);
    t.diagnostic(`lost ${lost} of ${packets.length} packets, ${refused} sent while disconnected`);
    assert.deepEqual(sequences, sequences.map((_, i) => i + 1), 'none processed twice; the session counted on');
    // Without stateful reconnect the answer to a packet processed just before the drop goes to the cut
    // connection and is lost with it, like the packets in flight (at most a couple); every later packet
    // is answered. So wait for answers to every processed packet, for as long as a loaded machine may
    // take (a lost one ends the wait after 3 s), and then count: none twice, none missing but those.
    await events.waitFor('AudioResponse', sequences.length, 3000).catch(() => undefined);
    const answered = events.of('AudioResponse').length;
    assert.ok(answered <= sequences.length && answered >= sequences.length - 2, `${answered} AudioResponse for ${sequences.length} packets processed`);
    assert.equal(events.closed, false);
    assert.equal(connection.state, HubConnectionState.Connected);
    await connection.stop();
  });
});

async function hubStats(rig: VoiceRig): Promise<{ reconnects: number }> {
  const { reconnects } = rig.svc.app.hub.stats();
  if (reconnects === undefined) throw new Error('the hub reports no reconnects counter');
  return { reconnects };
}
