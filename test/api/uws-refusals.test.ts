// What uWebSockets.js does with request heads it will not pass on, before the service sees a request,
// for each addon voice-hub ships: uWS v20.30 under Node 20 (the legacy builds) and v20.56 under Node 24.
// The older one answers none of them: it closes at once or holds the connection until its idle timeout.
// The newer one answers most with a status of its own (HTML, then a close) and passes more methods on
// to the service. Neither can be changed from the service; a new addon that behaves otherwise fails
// here, and docs/security.md ("HTTP/1.1 framing and pipelining") must then say what it does.
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { assertClosedAtOnce, CLOSED_AT_ONCE_MS, exchange, type Exchange } from '../support/raw-http.js';
import { startService, type TestService } from '../support/service.js';
import { UWS_ADDON, uwsOwnStatus } from '../support/uws-addon.js';

/**
 * `held`: no answer and still open after the wait (uWS drops it at its idle timeout, 10 to 14 s);
 * `closed`: closed at once, no answer; `status`: uWS's own answer (its HTML page); `service`: the request
 * was passed on and this is the service's answer; then closed unless `open`.
 */
type Outcome = 'held' | 'closed' | { status: number; open?: true } | { service: number; open?: true };

const raw = (lines: readonly string[], body = ''): Buffer => Buffer.from([...lines, '', ''].join('\r\n') + body, 'latin1');
const headers = (n: number): string[] => Array.from({ length: n }, (_, i) => `X-${i}: v`);
const REGISTER = ['POST /api/device/register HTTP/1.1', 'Host: 127.0.0.1', 'Content-Type: application/json'];
/** A GET of an unknown API path (the service's 404) whose head, blank line included, is `bytes` long. */
function sized(bytes: number): Buffer {
  const head = raw(['GET /api/nothing HTTP/1.1', 'Host: 127.0.0.1', 'X-Pad: ']);
  return raw(['GET /api/nothing HTTP/1.1', 'Host: 127.0.0.1', `X-Pad: ${'p'.repeat(bytes - head.length)}`]);
}

const CASES: Array<[string, Buffer, Record<'v20.30' | 'v20.56', Outcome>]> = [
  ['HTTP/1.0', raw(['GET /health HTTP/1.0', 'Host: 127.0.0.1']), { 'v20.30': 'held', 'v20.56': { status: 505 } }],
  ['HTTP/2.0 in an HTTP/1 request line', raw(['GET /health HTTP/2.0', 'Host: 127.0.0.1']), { 'v20.30': 'held', 'v20.56': { status: 505 } }],
  ['no Host', raw(['GET /health HTTP/1.1']), { 'v20.30': 'held', 'v20.56': { status: 400 } }],
  ['obs-fold', raw(['GET /health HTTP/1.1', 'Host: 127.0.0.1', 'X-A: b', ' c']), { 'v20.30': 'held', 'v20.56': { status: 400 } }],
  ['bare LF line ends', Buffer.from('GET /health HTTP/1.1\nHost: 127.0.0.1\n\n'), { 'v20.30': 'held', 'v20.56': { status: 505 } }],
  ['a space before the colon', raw(['GET /health HTTP/1.1', 'Host: 127.0.0.1', 'X-A : b']), { 'v20.30': 'held', 'v20.56': { status: 400 } }],
  ['a control character in a header', raw(['GET /health HTTP/1.1', 'Host: 127.0.0.1', 'X-A: a\x01b']), { 'v20.30': 'held', 'v20.56': { status: 400 } }],
  ['an absolute-form target', raw(['GET http://127.0.0.1/health HTTP/1.1', 'Host: 127.0.0.1']), { 'v20.30': 'held', 'v20.56': { status: 505 } }],
  ['a * target', raw(['OPTIONS * HTTP/1.1', 'Host: 127.0.0.1']), { 'v20.30': 'held', 'v20.56': { status: 505 } }],
  ['a NUL in the target', raw(['GET /api/no\u0000thing HTTP/1.1', 'Host: 127.0.0.1']), { 'v20.30': 'held', 'v20.56': { status: 505 } }],
  ['a space in the target', raw(['GET /api/no thing HTTP/1.1', 'Host: 127.0.0.1']), { 'v20.30': 'held', 'v20.56': { status: 505 } }],
  ['60 header lines', raw(['GET /api/nothing HTTP/1.1', 'Host: 127.0.0.1', ...headers(60)]), { 'v20.30': 'held', 'v20.56': { service: 404, open: true } }],
  // uWS v20.56 takes a head of 4,096 bytes at most (its UWS_HTTP_MAX_HEADERS_SIZE; the service's own limits,
  // 8 KiB of target and 32 KiB of fields, apply under it); v20.30 parses a head that comes in one read.
  ['a head of 4,096 bytes', sized(4096), { 'v20.30': { service: 404, open: true }, 'v20.56': { service: 404, open: true } }],
  ['a head of 4,097 bytes', sized(4097), { 'v20.30': { service: 404, open: true }, 'v20.56': { status: 431 } }],
  ['200 header lines', raw(['GET /health HTTP/1.1', 'Host: 127.0.0.1', ...headers(200)]), { 'v20.30': 'held', 'v20.56': { status: 431 } }],
  ['Content-Length with Transfer-Encoding', raw([...REGISTER, 'Content-Length: 3', 'Transfer-Encoding: chunked'], '3\r\nabc\r\n0\r\n\r\n'), { 'v20.30': 'closed', 'v20.56': { status: 400 } }],
  ['Content-Length with a sign', raw([...REGISTER, 'Content-Length: +3'], 'abc'), { 'v20.30': 'closed', 'v20.56': { status: 400 } }],
  ['Content-Length as a list', raw([...REGISTER, 'Content-Length: 3, 3'], 'abc'), { 'v20.30': 'closed', 'v20.56': { status: 400 } }],
  ['Content-Length in hex', raw([...REGISTER, 'Content-Length: 0x3'], 'abc'), { 'v20.30': 'closed', 'v20.56': { status: 400 } }],
  ['Content-Length beyond 64 bits', raw([...REGISTER, 'Content-Length: 99999999999999999999999'], 'abc'), { 'v20.30': 'closed', 'v20.56': { status: 400 } }],
  ['Content-Length of 10 digits', raw([...REGISTER, 'Content-Length: 1000000000'], '{'), { 'v20.30': 'closed', 'v20.56': { service: 413 } }],
  ['a chunk size that is not hex', raw([...REGISTER, 'Transfer-Encoding: chunked'], 'zz\r\nabc\r\n0\r\n\r\n'), { 'v20.30': 'closed', 'v20.56': { status: 400 } }],
  ['a chunk extension', raw([...REGISTER, 'Transfer-Encoding: chunked'], '2;a=b\r\n{}\r\n0\r\n\r\n'), { 'v20.30': 'held', 'v20.56': 'held' }],
  ['method FOO', raw(['FOO /swagger HTTP/1.1', 'Host: 127.0.0.1']), { 'v20.30': 'closed', 'v20.56': { service: 405, open: true } }],
  ['method M-SEARCH', raw(['M-SEARCH /swagger HTTP/1.1', 'Host: 127.0.0.1']), { 'v20.30': 'closed', 'v20.56': { service: 405, open: true } }],
  ['method PROPFIND', raw(['PROPFIND /swagger HTTP/1.1', 'Host: 127.0.0.1']), { 'v20.30': 'closed', 'v20.56': { service: 405, open: true } }],
  ['method QUERY', raw(['QUERY /swagger HTTP/1.1', 'Host: 127.0.0.1']), { 'v20.30': 'closed', 'v20.56': { service: 405, open: true } }],
  ['method LINK', raw(['LINK /swagger HTTP/1.1', 'Host: 127.0.0.1']), { 'v20.30': 'closed', 'v20.56': { service: 405, open: true } }],
  ['method PURGE', raw(['PURGE /swagger HTTP/1.1', 'Host: 127.0.0.1']), { 'v20.30': 'closed', 'v20.56': { service: 405, open: true } }],
  // Served as GET: ASP.NET Core's routing compares methods without regard to case, and so does ours.
  ['method get', raw(['get /api/nothing HTTP/1.1', 'Host: 127.0.0.1']), { 'v20.30': 'closed', 'v20.56': { service: 404, open: true } }],
  ['method Get', raw(['Get /api/nothing HTTP/1.1', 'Host: 127.0.0.1']), { 'v20.30': 'closed', 'v20.56': { service: 404, open: true } }],
];

/** Who answered what: uWS's own answers carry no Content-Length, so raw-http leaves them in `rest`. */
function answered(a: Exchange): { service: number[]; uws: number | undefined; other: string } {
  const rest = a.rest.toString('latin1');
  const uws = uwsOwnStatus(rest);
  return { service: a.responses.map((r) => r.status), uws, other: uws === undefined ? rest : '' };
}

describe(`heads uWS ${UWS_ADDON ?? '(unknown addon)'} does not pass on as sent`, () => {
  let svc: TestService;
  before(async () => {
    svc = await startService();
  });

  it('the addon is one this table knows', () => {
    assert.ok(UWS_ADDON, `Node module ABI ${process.versions.modules}: add its uWS to CASES and docs/security.md`);
  });

  for (const [name, bytes, outcomes] of CASES) {
    it(name, { skip: UWS_ADDON === undefined }, async () => {
      const expected = outcomes[UWS_ADDON!];
      const { open = false, ...who } = typeof expected === 'string' ? {} : expected;
      // Held: nothing for 600 ms is enough to tell. An answer or a close is awaited as long as a loaded
      // machine may take; an answer on a connection left open ends the wait at once.
      const answer = await exchange(svc.port, [bytes], expected === 'held' ? { idleMs: 600 } : { idleMs: CLOSED_AT_ONCE_MS, expect: open ? 1 : Infinity });
      assert.deepEqual(answered(answer), {
        service: 'service' in who ? [who.service] : [],
        uws: 'status' in who ? who.status : undefined,
        other: '',
      });
      if (expected === 'held') assert.equal(answer.closedByServer, false, 'held open');
      else if (expected === 'closed') assertClosedAtOnce(answer);
      else assert.equal(answer.closedByServer, !open, open ? 'kept open' : 'closed after the answer');
    });
  }
});
