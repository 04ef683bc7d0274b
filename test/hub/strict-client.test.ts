// A client as strict as Python's signalrcore (test/support/strict-hub-client.ts: fixed MessagePack array
// lengths per message type, required JSON properties) on the real service over loopback, with the echo
// voice server upstream: it must receive every event the hub sends (HUB_EVENTS), over both protocols,
// and find nothing in the server's bytes it could not read.
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { hubEventNames } from '../../src/api/hub-events.js';
import { call } from '../support/http.js';
import { StrictHubClient, type StrictProtocol } from '../support/strict-hub-client.js';
import { registerDevice } from '../support/tokens.js';
import { audioArg, startSession, startVoiceRig, type VoiceRig } from '../support/voice.js';
import { speechPackets } from '../voice/helpers.js';

describe('a strict (signalrcore-like) client receives every hub event', () => {
  let rig: VoiceRig;
  before(async () => {
    rig = await startVoiceRig();
  });

  for (const protocol of ['json', 'messagepack'] as const satisfies readonly StrictProtocol[]) {
    it(protocol, async () => {
      const { svc } = rig;
      const device = await registerDevice(svc);
      const { sessionId } = await startSession(svc, device.id, device.token);
      const client = await StrictHubClient.connect(svc.url, '/voice-hub', protocol);
      try {
        // Error: to the caller whose call failed (a token that is not the device's).
        await client.invoke('JoinSession', sessionId, 'not-a-token');
        assert.equal((await client.waitFor('Error'))[0]!.length, 1);

        assert.deepEqual(await client.invoke('JoinSession', sessionId, device.token), { result: null });
        assert.deepEqual(await client.waitFor('SessionJoined'), [[sessionId]]);

        const packets = speechPackets().slice(0, 3);
        for (const p of packets) assert.deepEqual(await client.invoke('SendAudioData', sessionId, audioArg(p, protocol)), { result: null });
        assert.deepEqual(
          await client.waitFor('AudioProcessed', 3),
          packets.map((p, i) => [{ sessionId, sequence: i + 1, bytes: p.length, durationMs: 20 }]),
        );
        assert.equal((await client.waitFor('AudioResponse', 3)).length, 3);
        assert.deepEqual(
          await client.waitFor('AudioData', 3),
          packets.map((p) => [{ sessionId, format: 'opus', sampleRate: 16000, channels: 1, data: p.toString('base64') }]),
        );

        const msg = await call(svc.url, 'POST', '/api/voice/message', { body: { sessionId, text: 'hello', messageType: 'text' }, token: device.token });
        assert.equal(msg.status, 200, msg.text);
        assert.deepEqual(await client.waitFor('TextResponse'), [[{ sessionId, text: 'echo: hello', final: true }]]);

        const stop = await call(svc.url, 'POST', '/api/voice/stop', { body: { sessionId }, token: device.token });
        assert.equal(stop.status, 200, stop.text);
        assert.deepEqual(await client.waitFor('SessionEnded'), [[{ sessionId, reason: 'stopped by request' }]]);

        const received = new Set(client.invocations.map((i) => i.target));
        assert.deepEqual(hubEventNames.filter((name) => !received.has(name)), [], 'every hub event arrived');
        assert.deepEqual(client.violations, [], 'nothing a strict client could not read');
      } finally {
        client.close();
      }
    });
  }
});
