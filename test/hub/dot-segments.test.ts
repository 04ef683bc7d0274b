// The hub's paths written with dot segments route as Kestrel routes them: it removes `.` and `..`
// (percent-encoded ones too) before routing, for the hub as for the API. Before, the hub's routes
// matched the path as sent, and `/voice-hub/./negotiate` was a 404 the API answered.
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { exchange, keepAliveRequest } from '../support/raw-http.js';
import { collect, serverFrames, textFrame, upgradeSocket } from '../support/raw-websocket.js';
import { startService, type TestService } from '../support/service.js';
import { waitUntil } from '../support/wait.js';

describe('hub paths with dot segments', () => {
  let svc: TestService;
  before(async () => {
    svc = await startService();
  });

  /** One request over a raw socket, its path as written (fetch would normalise it). */
  const send = async (method: string, path: string, headers: Array<[string, string]> = []): Promise<{ status: number; text: string }> => {
    const answer = await exchange(svc.port, [keepAliveRequest(method, path, headers, '')], { expect: 1 });
    const res = answer.responses[0];
    assert.ok(res, `${method} ${path}: no answer`);
    return { status: res.status, text: res.body.toString() };
  };

  it('negotiate answers at every spelling of its path', async () => {
    for (const path of ['/voice-hub/./negotiate', '/x/../voice-hub/negotiate', '/voice-hub/%2e/negotiate', '/voice-hub/%2E%2e/voice-hub/negotiate', '/a/b/../../voice-hub/negotiate/.', '/VOICE-HUB/x/../Negotiate/', '/voice-hub/x%2Fy/../negotiate']) {
      const res = await send('POST', `${path}?negotiateVersion=1`);
      assert.equal(res.status, 200, `${path}: ${res.text}`);
      const body = JSON.parse(res.text) as { negotiateVersion: number; connectionToken: string };
      assert.equal(body.negotiateVersion, 1, path);
      assert.match(body.connectionToken, /^[\w-]{22}$/, path);
    }
  });

  it('the hub path without an upgrade answers as the hub, and other paths stay the API\'s', async () => {
    assert.deepEqual(await send('GET', '/./voice-hub'), { status: 400, text: 'Connection ID required' });
    assert.deepEqual(await send('GET', '/voice-hub/negotiate/..?id=nope'), { status: 404, text: 'No Connection with that ID' });
    // An encoded slash is no separator, so `..%2F` is a segment like any other and nothing is removed.
    for (const path of ['/voice-hub/..%2F/negotiate', '/voice-hub/.../negotiate']) {
      const res = await send('POST', path);
      assert.equal(res.status, 404, path);
      const { traceId: _traceId, ...problem } = JSON.parse(res.text) as Record<string, unknown>;
      assert.deepEqual(problem, { type: 'https://tools.ietf.org/html/rfc9110#section-15.5.5', title: 'Not Found', status: 404, detail: `No route matches POST ${path}.` });
    }
    // A dot segment may lead out of the hub's path, to the API's.
    const health = await send('GET', '/voice-hub/../health');
    assert.ok(health.status === 200 || health.status === 503, health.text);
    assert.ok(['Healthy', 'Degraded', 'Unhealthy'].includes((JSON.parse(health.text) as { status: string }).status), health.text);
  });

  it('a WebSocket opens at a spelling with dot segments, negotiated or not', async () => {
    const negotiated = await send('POST', '/voice-hub/negotiate?negotiateVersion=1');
    const token = (JSON.parse(negotiated.text) as { connectionToken: string }).connectionToken;
    for (const path of ['/x/../voice-hub/.', `/voice-hub/./?id=${token}`]) {
      const socket = await upgradeSocket(svc.url, path);
      try {
        const got = collect(socket);
        socket.write(textFrame('{"protocol":"json","version":1}\u001e'));
        await waitUntil(() => serverFrames(got.bytes()).length > 0, `${path}: the handshake answer`, 5000);
        assert.equal(serverFrames(got.bytes())[0]!.payload.toString(), '{}\u001e', path);
      } finally {
        socket.destroy();
      }
    }
  });
});
