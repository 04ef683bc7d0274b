// The bundled wasm libopus (VoiceService.OpusLibrary "") fed, through the echo server, the three packets
// that overflow its stack and make it trap (test/fixtures/wasm-opus-trap.packets.json): the device that
// sent them gets one Error, and the service goes on decoding, for a session already talking and for one
// started after. Before, they broke the one wasm instance every session of the decoding context shares:
// every later packet failed and every voice start answered 502 or 503 until the service was restarted.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { registerDevice } from '../support/tokens.js';
import { audioArg, joinedClient, startSession, startVoiceRig } from '../support/voice.js';
import { speechPackets, wasmTrapPackets } from '../voice/helpers.js';

const TRAP_ERROR = 'upstream audio could not be decoded: the wasm Opus decoder failed (its stack overflowed); its decoders are rebuilt';

describe('a packet that makes the wasm decoder trap', () => {
  for (const threads of [0, 1]) {
    it(`DecoderThreads ${threads}: one Error to its session; a session talking and one started afterwards are answered`, async () => {
      const { svc } = await startVoiceRig({ flags: { 'VoiceService.OpusLibrary': '', 'VoiceService.DecoderThreads': threads } });
      const speech = speechPackets().slice(0, 5);
      const victimDevice = await registerDevice(svc);
      const victimSession = await startSession(svc, victimDevice.id, victimDevice.token);
      const victim = await joinedClient(svc, victimSession.sessionId, victimDevice.token);
      await victim.connection.invoke('SendAudioData', victimSession.sessionId, audioArg(speech[0]!));
      await victim.events.waitFor('AudioResponse', 1);

      const device = await registerDevice(svc);
      const hostile = await startSession(svc, device.id, device.token, { audioFormat: 'opus', sampleRate: 48000, channels: 2, autoMode: false });
      const client = await joinedClient(svc, hostile.sessionId, device.token);
      for (const p of wasmTrapPackets()) await client.connection.invoke('SendAudioData', hostile.sessionId, audioArg(p));
      assert.deepEqual(await client.events.waitFor('Error'), [TRAP_ERROR]);
      assert.equal((await client.events.waitFor('AudioResponse', 2)).length, 2, 'the packets before and after it were answered');

      for (const p of speech.slice(1)) await victim.connection.invoke('SendAudioData', victimSession.sessionId, audioArg(p));
      assert.equal((await victim.events.waitFor('AudioResponse', 5)).length, 5);
      assert.deepEqual(victim.events.of('Error'), []);

      const lateDevice = await registerDevice(svc);
      const late = await startSession(svc, lateDevice.id, lateDevice.token);
      const lateClient = await joinedClient(svc, late.sessionId, lateDevice.token);
      for (const p of speech) await lateClient.connection.invoke('SendAudioData', late.sessionId, audioArg(p));
      assert.equal((await lateClient.events.waitFor('AudioResponse', 5)).length, 5);
      assert.deepEqual(lateClient.events.of('Error'), []);
    });
  }
});
