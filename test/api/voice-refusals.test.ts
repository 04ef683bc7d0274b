// VoiceService.EnableVoice off, as docs/configuration.md says: start and message answer 503 with one
// problem, stop still ends a session, and switching voice off over PUT /api/config/voice ends none;
// and the 409 of a start that a concurrent one replaced (docs/protocol.md).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { call } from '../support/http.js';
import { answered, assertProblem } from '../support/problem.js';
import { adminToken, registerDevice } from '../support/tokens.js';
import { startSession, startVoiceRig } from '../support/voice.js';

const DISABLED = { detail: 'voice features are disabled (VoiceService.EnableVoice is false)' };

describe('voice switched off', () => {
  it('refuses start and message with 503, stops a session that was running, and ends none by itself', async () => {
    const { svc } = await startVoiceRig();
    const admin = await adminToken(svc);
    const device = await registerDevice(svc);
    const { sessionId } = await startSession(svc, device.id, device.token);

    const off = await call(svc.url, 'PUT', '/api/config/voice', { token: admin, body: { enableVoice: false } });
    assert.equal(off.status, 200, off.text);
    assert.equal(off.json.enableVoice, false);

    const start = await call(svc.url, 'POST', '/api/voice/start', { token: device.token, body: { deviceId: device.id } });
    assertProblem(answered(start), 503, DISABLED);
    const message = await call(svc.url, 'POST', '/api/voice/message', { token: device.token, body: { sessionId, text: 'hello' } });
    assertProblem(answered(message), 503, DISABLED);
    // The checks before it still come first: an unknown session is a 404, not a 503.
    const unknown = await call(svc.url, 'POST', '/api/voice/message', { token: device.token, body: { sessionId: 'nope', text: 'hello' } });
    assertProblem(answered(unknown), 404, { detail: "session 'nope' does not exist" });

    const stop = await call(svc.url, 'POST', '/api/voice/stop', { token: device.token, body: { sessionId } });
    assert.equal(stop.status, 200, stop.text);
    // Still running until this stop: switching voice off did not end it.
    assert.deepEqual([stop.json.state, stop.json.endReason], ['Stopped', 'stopped by request']);
  });
});

describe('concurrent starts for one device', () => {
  it('one starts; each replaced before it started is a 409, as the OpenAPI document lists', async () => {
    const { svc } = await startVoiceRig();
    const device = await registerDevice(svc);
    const answers = await Promise.all(Array.from({ length: 5 }, () =>
      call(svc.url, 'POST', '/api/voice/start', { token: device.token, body: { deviceId: device.id } })));
    assert.equal(answers.filter((a) => a.status === 200).length, 1, answers.map((a) => a.text).join('\n'));
    const refused = answers.filter((a) => a.status !== 200);
    assert.ok(refused.length > 0, 'no start was replaced: the starts did not overlap');
    for (const a of refused) {
      // The session id is a fresh UUID: everything but it is exact.
      const id = /^session '([0-9a-f-]{36})' ended before it started \(replaced\)$/.exec(String(a.json?.detail))?.[1];
      assert.ok(id, a.text);
      assertProblem(answered(a), 409, { detail: `session '${id}' ended before it started (replaced)` });
    }
    const doc = await call(svc.url, 'GET', '/swagger/v1/swagger.json');
    assert.ok(doc.json.paths['/api/voice/start'].post.responses['409'], 'start documents its 409');
  });
});
