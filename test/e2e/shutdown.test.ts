// A clean shutdown ends every session before the hub closes, so its members learn why the session ended
// (`SessionEnded`, reason `service shutdown`) and then get the Close that lets them reconnect. The hub
// used to be closed first: members got only the Close, and after the restart a rejoin learned that the
// session had stopped.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { HubWire } from '../hardening/hub-wire.js';
import { registerDevice } from '../support/tokens.js';
import { startSession, startVoiceRig } from '../support/voice.js';
import { withTimeout } from '../support/wait.js';

describe('shutdown', () => {
  for (const protocol of ['json', 'messagepack'] as const) {
    it(`${protocol}: members get SessionEnded (service shutdown), then a Close that allows reconnecting`, async () => {
      const { svc } = await startVoiceRig();
      const device = await registerDevice(svc, { deviceId: `shut-${protocol}` });
      const { sessionId } = await startSession(svc, device.id, device.token);
      const wire = await HubWire.connect(svc.url, protocol);
      await wire.join(sessionId, device.token);
      await svc.stop();
      await withTimeout(wire.closed, 10_000, 'the hub to close the connection');
      // What came after the join, but the join's own completion.
      const after = wire.messages.slice(wire.messages.findIndex((m) => m.target === 'SessionJoined') + 1).filter((m) => m.type !== 3);
      assert.deepEqual(after.map((m) => (m.type === 1 ? [m.target, m.arguments] : [m.type, m.allowReconnect])), [
        ['SessionEnded', [{ sessionId, reason: 'service shutdown' }]],
        [7, true],
      ]);
    });
  }
});
