// The hub's path without a WebSocket upgrade answers as ASP.NET Core's connection dispatcher does, in
// plain text: the `id` of a connection is required (400), an unknown one is 404, and a known one is
// refused for the transport the request asks for, which this hub does not offer; a long-polling GET's
// answer is uncacheable. The WebSocket on the same path is unchanged, and other paths are the API's.
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { call, type HttpResult } from '../support/http.js';
import { answered, assertProblem } from '../support/problem.js';
import { exchange, type RawResponse } from '../support/raw-http.js';
import { startService, type TestService } from '../support/service.js';
import { connectHub } from '../support/voice.js';

const NO_CACHE = { 'cache-control': 'no-cache, no-store', pragma: 'no-cache', expires: 'Thu, 01 Jan 1970 00:00:00 GMT' };

/** `allow`: the Allow header a 405 must carry (RFC 9110 section 15.5.6); every other answer has none. */
function assertText(res: HttpResult, status: number, text: string, noCache: boolean, what: string, allow: string | null = null): void {
  assert.equal(res.status, status, `${what}: ${res.text}`);
  assert.equal(res.text, text, what);
  if (text) assert.equal(res.headers.get('content-type'), 'text/plain; charset=utf-8', what);
  for (const [name, value] of Object.entries(NO_CACHE)) assert.equal(res.headers.get(name), noCache ? value : null, `${what}: ${name}`);
  assert.equal(res.headers.get('allow'), allow, `${what}: allow`);
}

/** One request over a raw socket: fetch refuses TRACE and CONNECT, and reads no HEAD framing. */
async function rawAnswer(port: number, method: string, target: string, headers: readonly string[] = []): Promise<RawResponse> {
  const head = [`${method} ${target} HTTP/1.1`, 'Host: 127.0.0.1', ...headers, '', ''].join('\r\n');
  const answer = await exchange(port, [Buffer.from(head)], { expect: 1 });
  assert.equal(answer.responses.length, 1, `${method} ${target}: ${answer.rest.toString('latin1')}`);
  return answer.responses[0]!;
}

describe('plain requests to the hub path', () => {
  let svc: TestService;
  let token: string;
  before(async () => {
    svc = await startService();
    const negotiated = await call(svc.url, 'POST', '/voice-hub/negotiate?negotiateVersion=1');
    assert.equal(negotiated.status, 200, negotiated.text);
    token = negotiated.json.connectionToken;
  });

  it('GET needs a connection id, and an unknown one is 404', async () => {
    for (const path of ['/voice-hub', '/Voice-Hub/', '/voice-hub?id=', '/voice-hub?other=1']) {
      assertText(await call(svc.url, 'GET', path), 400, 'Connection ID required', true, path);
    }
    assertText(await call(svc.url, 'GET', '/voice-hub?id=nope'), 404, 'No Connection with that ID', true, 'unknown id');
    assertText(await call(svc.url, 'GET', '/voice-hub?ID=nope', { headers: { accept: 'text/event-stream' } }), 404, 'No Connection with that ID', false, 'unknown id, event stream');
  });

  it('a negotiated id is refused for long polling and server-sent events, transports this hub lacks', async () => {
    assertText(await call(svc.url, 'GET', `/voice-hub?id=${token}`), 404, 'LongPolling transport not supported by this end point type', true, 'long polling');
    assertText(await call(svc.url, 'GET', `/voice-hub?id=${token}`, { headers: { accept: 'text/event-stream' } }), 404, 'ServerSentEvents transport not supported by this end point type', false, 'event stream');
    assertText(await call(svc.url, 'POST', `/voice-hub?id=${token}`, { raw: 'x' }), 405, 'POST requests are not allowed for WebSocket connections.', false, 'POST', 'GET');
    assertText(await call(svc.url, 'DELETE', `/voice-hub?id=${token}`), 400, 'Cannot terminate this connection using the DELETE endpoint.', false, 'DELETE');
  });

  it('POST and DELETE need a known id too; other methods are 405', async () => {
    assertText(await call(svc.url, 'POST', '/voice-hub', { raw: 'x' }), 400, 'Connection ID required', false, 'POST');
    assertText(await call(svc.url, 'DELETE', '/voice-hub?id=nope'), 404, 'No Connection with that ID', false, 'DELETE');
    assertText(await call(svc.url, 'PUT', '/voice-hub?id=nope'), 405, '', false, 'PUT', 'DELETE, GET, POST');
  });

  it('every 405 on the path says in Allow what it answers, a plain OPTIONS and HEAD included', async () => {
    for (const method of ['PUT', 'PATCH', 'OPTIONS']) {
      for (const path of ['/voice-hub', `/voice-hub?id=${token}`, '/x/../Voice-Hub/']) {
        assertText(await call(svc.url, method, path), 405, '', false, `${method} ${path}`, 'DELETE, GET, POST');
      }
    }
    for (const method of ['HEAD', 'TRACE', 'CONNECT']) {
      const res = await rawAnswer(svc.port, method, '/voice-hub');
      assert.equal(res.status, 405, method);
      assert.equal(res.headers.allow, 'DELETE, GET, POST', method);
      assert.equal(res.body.length, 0, method);
    }
  });

  it('a request that is no WebSocket handshake (RFC 6455 section 4.2.1) is a plain one, whatever Upgrade header or key it has', async () => {
    const cases: Array<[string, string, readonly string[], number, string]> = [
      ['GET', '/voice-hub', ['Upgrade: h2c', 'Connection: Upgrade, HTTP2-Settings', 'HTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA'], 400, 'Connection ID required'],
      ['GET', '/voice-hub?id=nope', ['Upgrade: websocket', 'Connection: Upgrade', 'Sec-WebSocket-Version: 13'], 404, 'No Connection with that ID'],
      ['GET', `/voice-hub?id=${token}`, ['Upgrade: websocket', 'Sec-WebSocket-Key: short'], 404, 'LongPolling transport not supported by this end point type'],
      ['POST', '/voice-hub', ['Upgrade: websocket'], 400, 'Connection ID required'],
      ['DELETE', '/x/../voice-hub?id=nope', ['Upgrade: websocket'], 404, 'No Connection with that ID'],
      // RFC 6455 section 4.2.1 asks all of Upgrade, Connection, the version and a 16-byte key; uWS switched on the key alone.
      ['GET', '/voice-hub', ['Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==', 'Sec-WebSocket-Version: 13'], 400, 'Connection ID required'],
      ['GET', '/voice-hub', ['Upgrade: websocket', 'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==', 'Sec-WebSocket-Version: 13'], 400, 'Connection ID required'],
      ['GET', '/voice-hub', ['Upgrade: websocket', 'Connection: Upgrade', 'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==', 'Sec-WebSocket-Version: 8'], 400, 'Connection ID required'],
      ['GET', '/x/../voice-hub', ['Upgrade: websocket', 'Connection: Upgrade', 'Sec-WebSocket-Key: ********************====', 'Sec-WebSocket-Version: 13'], 400, 'Connection ID required'],
    ];
    for (const [method, target, headers, status, text] of cases) {
      const res = await rawAnswer(svc.port, method, target, headers);
      assert.deepEqual([res.status, res.body.toString('utf8'), res.headers['content-type']], [status, text, 'text/plain; charset=utf-8'], `${method} ${target} ${headers.join(' ')}`);
    }
    // The handshake in any letter case, and among other Connection options, still opens a WebSocket.
    const handshake = ['Upgrade: WebSocket', 'Connection: keep-alive, Upgrade', 'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==', 'Sec-WebSocket-Version: 13'];
    const opened = await exchange(svc.port, [Buffer.from(['GET /voice-hub HTTP/1.1', 'Host: 127.0.0.1', ...handshake, '', ''].join('\r\n'))], { idleMs: 500 });
    assert.match(opened.rest.toString('latin1'), /^HTTP\/1\.1 101 Switching Protocols\r\n/);
  });

  it('every answer of the hub\'s HTTP routes says nosniff, as the API\'s do: negotiate, the plain path, a preflight and a refused upgrade', async () => {
    const evil = { origin: 'http://evil.example' };
    const plain: Array<[string, string, Record<string, string>, number]> = [
      ['POST', '/voice-hub/negotiate?negotiateVersion=1', {}, 200],
      ['POST', '/voice-hub/negotiate?negotiateVersion=-1', {}, 200],
      ['POST', '/voice-hub/negotiate?negotiateVersion=1', evil, 403],
      ['POST', '/voice-hub/negotiate?negotiateVersion=1', { authorization: 'Bearer forged' }, 401],
      ['GET', '/voice-hub/negotiate', {}, 405],
      ['OPTIONS', '/voice-hub/negotiate', { ...evil, 'access-control-request-method': 'POST' }, 204],
      ['GET', '/voice-hub', {}, 400],
      ['GET', '/voice-hub?id=nope', {}, 404],
      ['PUT', '/voice-hub', {}, 405],
    ];
    for (const [method, path, headers, status] of plain) {
      const res = await call(svc.url, method, path, { headers });
      const what = `${method} ${path} ${JSON.stringify(headers)}`;
      assert.equal(res.status, status, what);
      assert.equal(res.headers.get('x-content-type-options'), 'nosniff', what);
    }
    const upgrade = ['Upgrade: websocket', 'Connection: Upgrade', 'Sec-WebSocket-Version: 13', 'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ=='];
    const refused: Array<[string, readonly string[], number]> = [
      ['/voice-hub', [...upgrade, 'Origin: http://evil.example'], 403],
      ['/voice-hub?access_token=forged', upgrade, 401],
      ['/voice-hub?id=nope', upgrade, 404],
    ];
    for (const [target, headers, status] of refused) {
      const res = await rawAnswer(svc.port, 'GET', target, headers);
      assert.equal(res.status, status, target);
      assert.equal(res.headers['x-content-type-options'], 'nosniff', target);
    }
  });

  it('leaves the WebSocket and other paths as they were', async () => {
    const hub = await connectHub(svc);
    assert.equal(hub.state, 'Connected');
    await hub.stop();
    assertProblem(answered(await call(svc.url, 'GET', '/voice-hubs')), 404, { detail: 'No route matches GET /voice-hubs.' });
  });
});
