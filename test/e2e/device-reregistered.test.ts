// A device deleted and registered again under its id is another device (docs/protocol.md, "HTTP API"):
// the deletion takes the deleted device's sessions with it, so the new one (and an admin) finds none of
// them, over HTTP and on the hub, before and after a restart.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { call } from '../support/http.js';
import { answered, assertProblem } from '../support/problem.js';
import { startService } from '../support/service.js';
import { adminToken, registerDevice } from '../support/tokens.js';
import { audioArg, connectHub, HubEvents, joinedClient, startEcho, startSession } from '../support/voice.js';
import { speechPackets } from '../voice/helpers.js';
import { withTimeout } from '../support/wait.js';
import type { EchoServer } from '../../src/upstream/echo-server.js';

describe('a device deleted and registered again under its id', () => {
  let echo: EchoServer;
  before(async () => {
    echo = await startEcho();
  });
  after(() => echo.close());

  it('finds none of the deleted device\'s sessions: stop, message and JoinSession answer as for an unknown session, also after a restart', async () => {
    const flags = { 'VoiceService.ServerUrl': `ws://127.0.0.1:${echo.port}/voice` };
    let svc = await startService({ flags });
    const admin = await adminToken(svc);
    const old = await registerDevice(svc, { deviceId: 'reused' });
    // One session ended before the deletion (history), one running when it comes, with audio counted
    // (its packet count waits for the next timed flush).
    const ended = (await startSession(svc, old.id, old.token)).sessionId;
    assert.equal((await call(svc.url, 'POST', '/api/voice/stop', { body: { sessionId: ended }, token: old.token })).status, 200);
    const running = (await startSession(svc, old.id, old.token)).sessionId;
    const { connection, events } = await joinedClient(svc, running, old.token);
    for (const p of speechPackets().slice(0, 3)) void connection.send('SendAudioData', running, audioArg(p));
    await events.waitFor('AudioProcessed', 3);

    assert.equal((await call(svc.url, 'DELETE', '/api/device/reused', { token: admin })).status, 200);
    assert.deepEqual(await events.waitFor('SessionEnded'), [{ sessionId: running, reason: 'device deleted' }]);
    const again = await registerDevice(svc, { deviceId: 'reused' });

    const refusedAll = async (): Promise<void> => {
      for (const sessionId of [ended, running]) {
        const detail = `session '${sessionId}' does not exist`;
        for (const token of [again.token, admin]) {
          assertProblem(answered(await call(svc.url, 'POST', '/api/voice/stop', { body: { sessionId }, token })), 404, { detail });
          assertProblem(answered(await call(svc.url, 'POST', '/api/voice/message', { body: { sessionId, text: 'hi' }, token })), 404, { detail });
        }
        const hub = await connectHub(svc);
        const hubEvents = new HubEvents(hub);
        await withTimeout(hub.invoke('JoinSession', sessionId, again.token), 5000, 'JoinSession');
        assert.deepEqual(await hubEvents.waitFor('Error'), [detail]);
        assert.deepEqual(hubEvents.of('SessionJoined'), []);
        await hub.stop();
      }
    };
    await refusedAll();
    // Written at the timed flush or not, nothing of them is on disk either.
    await svc.app.store.flush();
    await connection.stop();
    await svc.stop();
    svc = await startService({ flags, dataDir: svc.dataDir });
    await refusedAll();
    assert.ok(!svc.logs.some((l) => /interrupted session/.test(l)), svc.logs.join('\n'));
    // The new device's own sessions work as any.
    const own = (await startSession(svc, again.id, again.token)).sessionId;
    assert.equal((await call(svc.url, 'POST', '/api/voice/stop', { body: { sessionId: own }, token: again.token })).status, 200);
    await svc.stop();
  });
});
