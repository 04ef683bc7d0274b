// A whole voice round trip on loopback: the official @microsoft/signalr client (JSON and MessagePack,
// negotiated and with skipNegotiation) -> the service's hub -> the upstream link -> the echo voice server
// -> Opus decoding -> AudioResponse/AudioData to every member of the session's group.
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { call } from '../support/http.js';
import { registerDevice } from '../support/tokens.js';
import { HUB_VARIANTS, audioArg, joinedClient, startSession, startVoiceRig, variantName, type VoiceRig } from '../support/voice.js';
import { comparePcm, referenceDecode, speechPackets, synthPackets } from '../voice/helpers.js';
import { withTimeout } from '../support/wait.js';

/** Every AudioResponse is Base64 of 16-bit little-endian PCM; this joins them. */
const pcmOf = (responses: unknown[]): Buffer => Buffer.concat(responses.map((r) => Buffer.from(r as string, 'base64')));

describe('voice round trip with the official client', () => {
  let rig: VoiceRig;
  before(async () => {
    rig = await startVoiceRig();
  });

  for (const variant of HUB_VARIANTS) {
    describe(variantName(variant), () => {
      it('two members of a session both get AudioProcessed, AudioResponse (libopus PCM), AudioData and TextResponse', async () => {
        const { svc } = rig;
        const device = await registerDevice(svc);
        const { sessionId, websocketUrl } = await startSession(svc, device.id, device.token);
        assert.equal(websocketUrl, `ws://127.0.0.1:${svc.port}/voice-hub`);
        const a = await joinedClient(svc, sessionId, device.token, variant);
        const b = await joinedClient(svc, sessionId, device.token, variant);

        const packets = speechPackets().slice(0, 25);
        for (const p of packets) void a.connection.send('SendAudioData', sessionId, audioArg(p, variant.protocol));
        const expectedProcessed = packets.map((p, i) => ({ sessionId, sequence: i + 1, bytes: p.length, durationMs: 20 }));
        assert.deepEqual(await a.events.waitFor('AudioProcessed', 25), expectedProcessed);
        assert.deepEqual(await b.events.waitFor('AudioProcessed', 25), expectedProcessed, 'the other member gets them too');

        const reference = Buffer.concat(referenceDecode(packets, 16000, 1));
        for (const member of [a, b]) {
          const pcm = pcmOf(await member.events.waitFor('AudioResponse', 25));
          const cmp = comparePcm(reference, pcm);
          assert.equal(cmp.samples, 25 * 320);
          assert.equal(cmp.differing, 0, `sample-exact with native libopus: ${JSON.stringify(cmp)}`);
          assert.deepEqual(
            await member.events.waitFor('AudioData', 25),
            packets.map((p) => ({ sessionId, format: 'opus', sampleRate: 16000, channels: 1, data: p.toString('base64') })),
          );
        }

        const msg = await call(svc.url, 'POST', '/api/voice/message', { body: { sessionId, text: 'hello there', messageType: 'text' }, token: device.token });
        assert.equal(msg.status, 200);
        for (const member of [a, b]) {
          assert.deepEqual(await member.events.waitFor('TextResponse'), [{ sessionId, text: 'echo: hello there', final: true }]);
        }
        assert.deepEqual([...a.events.of('Error'), ...b.events.of('Error')], [], 'no Error events along the way');
      });

      it('.invoke gets completions, and SignalR errors for unknown methods and wrong argument counts', async () => {
        const { svc } = rig;
        const device = await registerDevice(svc);
        const { sessionId } = await startSession(svc, device.id, device.token);
        const { connection, events } = await joinedClient(svc, sessionId, device.token, variant);
        // JoinSession again is safe (group membership is a set) and completes with no result.
        assert.equal(await connection.invoke('JoinSession', sessionId, device.token), null);
        assert.equal(await connection.invoke('joinsession', sessionId, device.token), null, 'method names match case-insensitively');
        const packet = speechPackets()[0]!;
        assert.equal(await connection.invoke('SendAudioData', sessionId, audioArg(packet, variant.protocol)), null);
        assert.deepEqual(await events.waitFor('AudioProcessed'), [{ sessionId, sequence: 1, bytes: packet.length, durationMs: 20 }]);
        await assert.rejects(connection.invoke('NoSuchMethod', 1), {
          message: "Failed to invoke 'NoSuchMethod' due to an error on the server. HubException: Method does not exist.",
        });
        await assert.rejects(connection.invoke('JoinSession', sessionId), {
          message: "Failed to invoke 'JoinSession' due to an error on the server.",
        });
        await assert.rejects(connection.invoke('SendAudioData', sessionId, 'AAAA', 'extra'), {
          message: "Failed to invoke 'SendAudioData' due to an error on the server.",
        });
        // A hub error does not end the connection: the session still works.
        await connection.invoke('SendAudioData', sessionId, audioArg(packet, variant.protocol));
        assert.deepEqual((await events.waitFor('AudioProcessed', 2))[1], { sessionId, sequence: 2, bytes: packet.length, durationMs: 20 });
        assert.equal(events.of('SessionJoined').length, 3);
      });
    });
  }

  it('a JSON member and a MessagePack member of one session both get the group events', async () => {
    const { svc } = rig;
    const device = await registerDevice(svc);
    const { sessionId } = await startSession(svc, device.id, device.token);
    const json = await joinedClient(svc, sessionId, device.token, { protocol: 'json' });
    const mp = await joinedClient(svc, sessionId, device.token, { protocol: 'messagepack', skipNegotiation: true });
    const packets = speechPackets().slice(30, 35);
    for (const p of packets) void mp.connection.send('SendAudioData', sessionId, p);
    const reference = Buffer.concat(referenceDecode(speechPackets().slice(30, 35), 16000, 1));
    for (const member of [json, mp]) {
      assert.equal((await member.events.waitFor('AudioProcessed', 5)).length, 5);
      assert.equal(comparePcm(reference, pcmOf(await member.events.waitFor('AudioResponse', 5))).differing, 0);
    }
  });

  it('one connection across sessions: joining a new session leaves the groups of ended ones, not of active ones', async () => {
    const { svc } = rig;
    const hub = svc.app.hub;
    const device = await registerDevice(svc);
    const other = await registerDevice(svc);
    const first = await startSession(svc, device.id, device.token);
    const { connection, events } = await joinedClient(svc, first.sessionId, device.token);
    const id = connection.connectionId!;
    assert.deepEqual(hub.groupsOf(id), [`session-${first.sessionId}`]);

    const stopped = await call(svc.url, 'POST', '/api/voice/stop', { body: { sessionId: first.sessionId }, token: device.token });
    assert.equal(stopped.status, 200, stopped.text);
    const second = await startSession(svc, device.id, device.token);
    const third = await startSession(svc, other.id, other.token);
    await connection.invoke('JoinSession', third.sessionId, other.token);
    await connection.invoke('JoinSession', second.sessionId, device.token);
    assert.deepEqual(events.of('Error'), []);
    assert.deepEqual(hub.groupsOf(id).sort(), [`session-${second.sessionId}`, `session-${third.sessionId}`].sort(),
      "the stopped session's group is left, the still active one is kept");
  });
});

describe('Opus correctness end to end', () => {
  let rig: VoiceRig;
  before(async () => {
    rig = await startVoiceRig();
  });

  /** Streams `packets` through a new session and returns the PCM of its AudioResponse events. */
  async function roundTrip(packets: Buffer[], sessionConfig: Record<string, unknown>, protocol: 'json' | 'messagepack'): Promise<Buffer> {
    const { svc } = rig;
    const device = await registerDevice(svc);
    const { sessionId } = await startSession(svc, device.id, device.token, sessionConfig);
    const { connection, events } = await joinedClient(svc, sessionId, device.token, { protocol });
    for (const p of packets) void connection.send('SendAudioData', sessionId, audioArg(p, protocol));
    const pcm = pcmOf(await events.waitFor('AudioResponse', packets.length, 10_000));
    assert.deepEqual(events.of('Error'), []);
    await withTimeout(connection.stop(), 5000, 'stop');
    return pcm;
  }

  it('real speech at 16 kHz mono: AudioResponse equals an independent libopus decode, sample for sample', async () => {
    const packets = speechPackets();
    const cmp = comparePcm(Buffer.concat(referenceDecode(packets, 16000, 1)), await roundTrip(packets, { sampleRate: 16000, channels: 1 }, 'json'));
    assert.equal(cmp.samples, 100 * 320);
    assert.equal(cmp.differing, 0, JSON.stringify(cmp));
  });

  it('synthetic tone + noise at 16 kHz mono (encoded here, application audio) is sample-exact', async () => {
    const packets = synthPackets(16000, 1, 50, 'sine-noise');
    const cmp = comparePcm(Buffer.concat(referenceDecode(packets, 16000, 1)), await roundTrip(packets, { sampleRate: 16000, channels: 1 }, 'messagepack'));
    assert.equal(cmp.samples, 50 * 320);
    assert.equal(cmp.differing, 0, JSON.stringify(cmp));
  });

  // An overdriven square decodes past full scale, so soft clipping runs. pcm.test.ts proves our float->int16
  // step equals libopus' own; what remains is the two libopus builds' float output (wasm vs native 1.3.1),
  // which differs by a few LSB here (measured about 92 dB, at most 3 LSB).
  it('an overdriven square at 16 kHz mono is within 85 dB SNR (max 4 LSB) of native libopus', async () => {
    const packets = synthPackets(16000, 1, 50, 'square');
    const cmp = comparePcm(Buffer.concat(referenceDecode(packets, 16000, 1)), await roundTrip(packets, { sampleRate: 16000, channels: 1 }, 'json'));
    assert.equal(cmp.samples, 50 * 320);
    assert.ok(cmp.snrDb >= 85, JSON.stringify(cmp));
    assert.ok(cmp.maxDiff <= 4, JSON.stringify(cmp));
  });

  // As test/voice/opus-decoder.test.ts explains: the wasm libopus and the native one differ by a few LSB in
  // their float output at 48 kHz stereo; measured about 80 dB, so 70 dB and 8 LSB are the stated bounds.
  it('synthetic tone + noise at 48 kHz stereo is within 70 dB SNR (max 8 LSB) of native libopus', async () => {
    const packets = synthPackets(48000, 2, 50, 'sine-noise');
    const cmp = comparePcm(Buffer.concat(referenceDecode(packets, 48000, 2)), await roundTrip(packets, { sampleRate: 48000, channels: 2 }, 'json'));
    assert.equal(cmp.samples, 50 * 960 * 2);
    assert.ok(cmp.snrDb >= 70, JSON.stringify(cmp));
    assert.ok(cmp.maxDiff <= 8, JSON.stringify(cmp));
  });
});
