// A request answered without its body being needed (an unknown path, a wrong method, a refused key, the
// hub's negotiate and path) still has Server.MaxBodyBytes: its body is read, up to the limit, before the
// answer goes out, and one over the limit closes the connection with the answer (413 on a route). Before,
// such an answer went out at once and uWS read and dropped the rest of the body, whatever its size, with
// the connection kept: 1 GB to a 404, or to negotiate, which answered 200.
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { assertProblem } from '../support/problem.js';
import { exchange, type RawResponse } from '../support/raw-http.js';
import { startService, type TestService } from '../support/service.js';

const LIMIT = 1024;

/** A response of the raw helper in the form assertProblem reads. */
const asAnswer = (r: RawResponse): Parameters<typeof assertProblem>[0] => ({ status: r.status, headers: r.headers, body: r.body.toString('utf8') });

const head = (method: string, target: string, framing?: string): Buffer =>
  Buffer.from(`${method} ${target} HTTP/1.1\r\nHost: 127.0.0.1\r\n${framing ? `${framing}\r\n` : ''}\r\n`);

const chunked = (size: number): Buffer => Buffer.concat([Buffer.from(`${size.toString(16)}\r\n`), Buffer.alloc(size, 0x61), Buffer.from('\r\n0\r\n\r\n')]);

describe('a body the answer does not need', () => {
  let svc: TestService;
  before(async () => {
    svc = await startService({ flags: { 'Server.MaxBodyBytes': LIMIT } });
  });

  it('over the limit, declared: the 404 comes once it is read, and the connection closes', async () => {
    const size = LIMIT * 4;
    const answer = await exchange(svc.port, [head('POST', '/nothing', `Content-Length: ${size}`), Buffer.alloc(size, 0x61)], { idleMs: 3000 });
    assert.equal(answer.responses.length, 1, answer.rest.toString('latin1'));
    assertProblem(asAnswer(answer.responses[0]!), 404, { detail: 'No route matches POST /nothing.' });
    assert.equal(answer.responses[0]!.headers.connection, 'close');
    assert.ok(answer.closedByServer, 'closed, not left to drain the body');
  });

  it('over the limit, chunked: the 405 comes once the limit is passed, and the connection closes', async () => {
    const answer = await exchange(svc.port, [head('PUT', '/api/device/list', 'Transfer-Encoding: chunked'), chunked(LIMIT * 4)], { idleMs: 3000 });
    assert.equal(answer.responses.length, 1, answer.rest.toString('latin1'));
    assertProblem(asAnswer(answer.responses[0]!), 405, { detail: 'Method PUT is not allowed here.' });
    assert.equal(answer.responses[0]!.headers.allow, 'DELETE, GET');
    assert.equal(answer.responses[0]!.headers.connection, 'close');
    assert.ok(answer.closedByServer, 'closed, not left to drain the body');
  });

  it('declared far over the limit: answered at once and closed, the body never read', async () => {
    const answer = await exchange(svc.port, [head('POST', '/nothing', 'Content-Length: 999999999')], { idleMs: 3000 });
    assert.equal(answer.responses.length, 1, answer.rest.toString('latin1'));
    assertProblem(asAnswer(answer.responses[0]!), 404, { detail: 'No route matches POST /nothing.' });
    assert.ok(answer.closedByServer);
  });

  it('within the limit, declared or chunked: answered after it, the connection kept for the next request', async () => {
    for (const [framing, body] of [['Content-Length: 5', Buffer.from('hello')], ['Transfer-Encoding: chunked', chunked(5)]] as const) {
      const answer = await exchange(svc.port, [Buffer.concat([head('POST', '/nothing', framing), body, head('GET', '/swagger')])], { expect: 2 });
      assert.deepEqual(answer.responses.map((r) => r.status), [404, 200], framing);
      assertProblem(asAnswer(answer.responses[0]!), 404, { detail: 'No route matches POST /nothing.' });
      assert.equal(answer.closedByServer, false, framing);
    }
  });

  it("on the hub's paths, which take none: read up to the limit, 413 past it once the method is right, and closed", async () => {
    const over = Buffer.alloc(LIMIT * 4, 0x61);
    for (const target of ['/voice-hub/negotiate?negotiateVersion=1', '/voice-hub?id=x']) {
      for (const [framing, body] of [[`Content-Length: ${over.length}`, over], ['Transfer-Encoding: chunked', chunked(over.length)]] as const) {
        const answer = await exchange(svc.port, [head('POST', target, framing), body], { idleMs: 3000 });
        assert.equal(answer.responses.length, 1, `${target} ${framing}: ${answer.rest.toString('latin1')}`);
        assertProblem(asAnswer(answer.responses[0]!), 413, { detail: `The request body is larger than the limit of ${LIMIT} bytes.` });
        assert.equal(answer.responses[0]!.headers.connection, 'close');
        assert.ok(answer.closedByServer, `${target} ${framing}: closed, not left to drain the body`);
      }
    }
    const wrongMethod = await exchange(svc.port, [head('PUT', '/voice-hub', `Content-Length: ${over.length}`), over], { idleMs: 3000 });
    assert.deepEqual(wrongMethod.responses.map((r) => [r.status, r.headers.allow, r.headers.connection]), [[405, 'DELETE, GET, POST', 'close']]);
    assert.ok(wrongMethod.closedByServer);
    const small = await exchange(svc.port, [Buffer.concat([head('POST', '/voice-hub/negotiate?negotiateVersion=1', 'Content-Length: 2'), Buffer.from('{}'), head('GET', '/swagger')])], {
      expect: 2,
    });
    assert.deepEqual(small.responses.map((r) => r.status), [200, 200]);
    assert.equal(JSON.parse(small.responses[0]!.body.toString('utf8')).negotiateVersion, 1);
    assert.equal(small.closedByServer, false);
  });

  it('a request that asks to upgrade carries no body: 400 and closed, on the WebSocket route and any other, as Kestrel refuses it', async () => {
    const upgrade = 'Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13';
    const detail = 'A request that asks to upgrade (Upgrade, or Connection: upgrade) must not carry a body.';
    for (const [target, framing, body] of [
      ['/voice-hub?id=nope', `${upgrade}\r\nContent-Length: 5`, Buffer.from('hello')],
      ['/voice-hub', `${upgrade}\r\nTransfer-Encoding: chunked`, chunked(5)],
      ['/swagger', 'Connection: keep-alive, Upgrade\r\nContent-Length: 5', Buffer.from('hello')],
    ] as const) {
      const answer = await exchange(svc.port, [head('GET', target, framing), body], { idleMs: 3000 });
      assert.equal(answer.responses.length, 1, `${target}: ${answer.rest.toString('latin1')}`);
      assertProblem(asAnswer(answer.responses[0]!), 400, { detail });
      assert.equal(answer.responses[0]!.headers.connection, 'close');
      assert.ok(answer.closedByServer, target);
    }
    const empty = await exchange(svc.port, [head('GET', '/voice-hub', `${upgrade}\r\nContent-Length: 0`)], { idleMs: 1000 });
    assert.equal(empty.responses.length, 0, 'no answer to split: the socket is a WebSocket now');
    assert.match(empty.rest.toString('latin1'), /^HTTP\/1\.1 101 Switching Protocols\r\n/);
  });
});
