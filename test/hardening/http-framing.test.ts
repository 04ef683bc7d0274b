// HTTP/1.1 framing at the request entry (RFC 9112 sections 3.2, 6 and 7) over raw sockets against the
// service on a loopback port: ambiguous framing is a 400 problem and a close, oversized heads a 414 or
// 431, and nothing sent behind a refused request on the same connection is ever run (request smuggling).
// What uWS refuses before we see a request is asserted too, so that a change of uWS that alters it shows
// up here and in docs/security.md. The suite runs on both addons the builds ship (test/support/uws-addon.ts):
// where the Node 24 builds' uWS answers a head itself (two Host lines, any head over 4,096 bytes), that
// answer is what is expected there; test/api/uws-refusals.test.ts holds the whole table.
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { call } from '../support/http.js';
import { startService, type TestService } from '../support/service.js';
import { adminToken } from '../support/tokens.js';
import { checkFraming } from '../../src/http/framing.js';
import { assertClosedAtOnce, CLOSED_AT_ONCE_MS, exchange, keepAliveRequest, type Exchange } from '../support/raw-http.js';
import { assertUwsAnswered, UWS_ADDON, UWS_MAX_HEAD_BYTES, uwsOwnStatus } from '../support/uws-addon.js';

let svc: TestService;
let admin: string;

before(async () => {
  svc = await startService();
  admin = await adminToken(svc);
});

const register = (id: string): string => JSON.stringify({ deviceId: id, deviceName: 'Smuggled', deviceType: 'speaker' });

/** A request head with the given header lines written verbatim, then `body`. */
function raw(lines: readonly string[], body = ''): Buffer {
  return Buffer.from([...lines, '', ''].join('\r\n') + body, 'latin1');
}

async function registered(id: string): Promise<boolean> {
  const res = await call(svc.url, 'GET', '/api/device/list', { token: admin });
  assert.equal(res.status, 200, res.text);
  return (res.json as { devices: Array<{ id: string }> }).devices.some((d) => d.id === id);
}

const TRACE_ID = /^00-[0-9a-f]{32}-[0-9a-f]{16}-00$/;
const TITLES: Record<number, [string, string]> = {
  400: ['Bad Request', 'https://tools.ietf.org/html/rfc9110#section-15.5.1'],
  414: ['URI Too Long', 'https://tools.ietf.org/html/rfc9110#section-15.5.15'],
  431: ['Request Header Fields Too Large', 'https://tools.ietf.org/html/rfc6585#section-5'],
};

/** Exactly one answer, the problem given, `Connection: close`, and the server closed the connection. */
function assertRefused(answer: Exchange, status: number, detail: string): void {
  assert.equal(answer.responses.length, 1, `one answer expected, got ${answer.responses.length}: ${answer.rest.toString('latin1').slice(0, 300)}`);
  const [res] = answer.responses;
  assert.equal(res!.status, status, res!.body.toString());
  assert.equal(res!.headers['content-type'], 'application/problem+json');
  assert.equal(res!.headers.connection, 'close');
  const body = JSON.parse(res!.body.toString('utf8')) as Record<string, unknown>;
  assert.match(String(body.traceId), TRACE_ID);
  const [title, type] = TITLES[status]!;
  assert.deepEqual({ ...body, traceId: '-' }, { type, title, status, detail, traceId: '-' });
  assert.equal(answer.rest.length, 0, 'nothing after the answer');
  assert.ok(answer.closedByServer, 'the server closes the connection');
}

/** Two Host lines: the service's 400 under uWS v20.30; v20.56 answers 400 itself before the service sees them. */
function assertTwoHostsRefused(answer: Exchange): void {
  if (UWS_ADDON === 'v20.56') assertUwsAnswered(answer, 400);
  else assertRefused(answer, 400, 'The request must carry exactly one Host header.');
}

/** A head over what uWS v20.56 takes gets its own 431 there; under v20.30 the service's `status` and `detail`. */
function assertOversizedRefused(answer: Exchange, status: number, detail: string): void {
  if (UWS_MAX_HEAD_BYTES !== Infinity) assertUwsAnswered(answer, 431);
  else assertRefused(answer, status, detail);
}

const REGISTER = ['POST /api/device/register HTTP/1.1', 'Host: 127.0.0.1', 'Content-Type: application/json'];
const MORE_THAN_ONE_LENGTH = 'The request carries more than one Content-Length header.';
const NOT_DECIMAL = 'The Content-Length header is not a decimal number of bytes.';
const NOT_CHUNKED = 'Transfer-Encoding must be exactly "chunked".';

describe('ambiguous framing is a 400 and a close, before routing', () => {
  const cases: Array<{ name: string; lines: string[]; body: string; detail: string }> = [
    { name: 'two Content-Length values that differ', lines: ['Content-Length: 3', 'Content-Length: 30'], body: 'abc', detail: MORE_THAN_ONE_LENGTH },
    { name: 'two equal Content-Length headers', lines: ['Content-Length: 3', 'Content-Length: 3'], body: 'abc', detail: MORE_THAN_ONE_LENGTH },
    { name: 'an empty Content-Length', lines: ['Content-Length: '], body: '', detail: NOT_DECIMAL },
    { name: 'Transfer-Encoding: identity', lines: ['Transfer-Encoding: identity'], body: 'abc', detail: NOT_CHUNKED },
    { name: 'Transfer-Encoding: gzip, chunked', lines: ['Transfer-Encoding: gzip, chunked'], body: '3\r\nabc\r\n0\r\n\r\n', detail: NOT_CHUNKED },
    { name: 'Transfer-Encoding: chunked, chunked', lines: ['Transfer-Encoding: chunked, chunked'], body: '3\r\nabc\r\n0\r\n\r\n', detail: NOT_CHUNKED },
    { name: 'two Transfer-Encoding: chunked headers', lines: ['Transfer-Encoding: chunked', 'Transfer-Encoding: chunked'], body: '3\r\nabc\r\n0\r\n\r\n', detail: NOT_CHUNKED },
    // The Kelvin sign (UTF-8 E2 84 AA) is no letter case of k, though toLowerCase() makes it one.
    { name: 'Transfer-Encoding: chun\u212Aed', lines: ['Transfer-Encoding: chun\u00e2\u0084\u00aaed'], body: '3\r\nabc\r\n0\r\n\r\n', detail: NOT_CHUNKED },
  ];
  for (const c of cases) {
    it(`${c.name}: on a body route`, async () => {
      assertRefused(await exchange(svc.port, [raw([...REGISTER, ...c.lines], c.body)]), 400, c.detail);
    });
  }

  it('two Host headers', async () => {
    assertTwoHostsRefused(await exchange(svc.port, [raw(['GET /health HTTP/1.1', 'Host: 127.0.0.1', 'Host: example.com'])]));
  });

  it('also on routes without a body, unknown routes and with a valid token', async () => {
    for (const target of ['/health', '/api/device/list', '/no/such/route']) {
      const lines = [`GET ${target} HTTP/1.1`, 'Host: 127.0.0.1', `Authorization: Bearer ${admin}`, 'Content-Length: 0', 'Content-Length: 1'];
      assertRefused(await exchange(svc.port, [raw(lines, 'x')]), 400, MORE_THAN_ONE_LENGTH);
    }
  });

  it('Chunked in any letter case with OWS is the chunked coding: accepted', async () => {
    const body = register('chunked-dev');
    const chunked = `${Buffer.byteLength(body).toString(16)}\r\n${body}\r\n0\r\n\r\n`;
    const answer = await exchange(svc.port, [raw([...REGISTER, 'Transfer-Encoding:  ChUnKeD ', 'Connection: close'], chunked)]);
    assert.deepEqual(answer.responses.map((r) => r.status), [200], answer.rest.toString());
  });
});

// Under Node 24 uWS answers all three with its own 431: the service's limits are never reached there.
describe('oversized request heads are a 414 or a 431 and a close', () => {
  it('a request target over 8 KiB is a 414', async () => {
    const answer = await exchange(svc.port, [raw([`GET /health?${'a'.repeat(8 * 1024)} HTTP/1.1`, 'Host: 127.0.0.1'])]);
    assertOversizedRefused(answer, 414, 'The request target is longer than 8192 bytes.');
  });

  it('header fields over 32 KiB in all are a 431, one big one or many', async () => {
    const big = raw(['GET /health HTTP/1.1', 'Host: 127.0.0.1', `X-Big: ${'b'.repeat(33 * 1024)}`]);
    assertOversizedRefused(await exchange(svc.port, [big]), 431, 'The request header fields are larger than 32768 bytes in all.');
    const many = raw(['GET /health HTTP/1.1', 'Host: 127.0.0.1', ...Array.from({ length: 40 }, (_, i) => `X-${i}: ${'m'.repeat(900)}`)]);
    assertOversizedRefused(await exchange(svc.port, [many]), 431, 'The request header fields are larger than 32768 bytes in all.');
  });

  it('just under both limits is served', async () => {
    const target = `/api/config/voice?${'a'.repeat(8000)}`;
    const answer = await exchange(svc.port, [raw([`GET ${target} HTTP/1.1`, 'Host: 127.0.0.1', `Authorization: Bearer ${admin}`, `X-Big: ${'b'.repeat(30 * 1024)}`, 'Connection: close'])]);
    if (UWS_MAX_HEAD_BYTES !== Infinity) assertUwsAnswered(answer, 431);
    else assert.deepEqual(answer.responses.map((r) => r.status), [200]);
  });
});

describe('nothing behind a refused request runs (request smuggling)', () => {
  // A front proxy that honours the second Content-Length sees one request; uWS, reading the first, would
  // see a second one in the same bytes: that second request must never run.
  const smuggle = (front: string, hidden: string): { head: Buffer; hidden: Buffer } => {
    const hiddenBytes = keepAliveRequest('POST', '/api/device/register', [['Content-Type', 'application/json']], register(hidden));
    const body = register(front);
    const head = raw([...REGISTER, `Content-Length: ${Buffer.byteLength(body)}`, `Content-Length: ${Buffer.byteLength(body) + hiddenBytes.length}`], body);
    return { head, hidden: hiddenBytes };
  };

  it('the hidden request in a later read: the front one is answered 400 and closed, neither registers', async () => {
    const { head, hidden } = smuggle('front-later', 'hidden-later');
    const answer = await exchange(svc.port, [head, hidden], { gapMs: 100 });
    assertRefused(answer, 400, MORE_THAN_ONE_LENGTH);
    assert.equal(await registered('front-later'), false);
    assert.equal(await registered('hidden-later'), false);
  });

  it('the hidden request in the same read: uWS closes at once without an answer, neither registers', async () => {
    const { head, hidden } = smuggle('front-same', 'hidden-same');
    const answer = await exchange(svc.port, [Buffer.concat([head, hidden])], { idleMs: CLOSED_AT_ONCE_MS });
    assert.deepEqual(answer.responses, []);
    assertClosedAtOnce(answer);
    assert.equal(await registered('front-same'), false);
    assert.equal(await registered('hidden-same'), false);
  });

  it('after a 413 nothing else on the connection runs, in a later read or the same one', async () => {
    const svcSmall = await startService({ flags: { 'Server.MaxBodyBytes': 64 } });
    const small = await adminToken(svcSmall);
    const big = keepAliveRequest('POST', '/api/device/register', [['Content-Type', 'application/json']], register(`big-${'x'.repeat(80)}`));
    const next = (id: string): Buffer => keepAliveRequest('POST', '/api/device/register', [['Content-Type', 'application/json']], register(id));
    const later = await exchange(svcSmall.port, [big, next('after-413')], { gapMs: 100 });
    assert.deepEqual(later.responses.map((r) => [r.status, r.headers.connection]), [[413, 'close']]);
    assert.ok(later.closedByServer);
    // In the same read uWS reads past the refused body and closes the connection on the next request.
    const same = await exchange(svcSmall.port, [Buffer.concat([big, next('same-read-413')])]);
    assert.deepEqual(same.responses.map((r) => r.status), []);
    assert.ok(same.closedByServer);
    const list = await call(svcSmall.url, 'GET', '/api/device/list', { token: small });
    assert.deepEqual(list.json, { devices: [], totalCount: 0 });
  });
});

describe("the hub's negotiate and WebSocket upgrade refuse ambiguous framing too", () => {
  it('a register smuggled behind a negotiate with two Content-Length headers never runs', async () => {
    const hidden = keepAliveRequest('POST', '/api/device/register', [['Content-Type', 'application/json']], register('via-negotiate'));
    const head = raw(['POST /voice-hub/negotiate?negotiateVersion=1 HTTP/1.1', 'Host: 127.0.0.1', 'Content-Length: 0', `Content-Length: ${hidden.length}`]);
    const answer = await exchange(svc.port, [head, hidden], { gapMs: 100 });
    assertRefused(answer, 400, MORE_THAN_ONE_LENGTH);
    assert.equal(await registered('via-negotiate'), false);
  });

  it('an upgrade with two Host headers is a 400 and a close, not a WebSocket', async () => {
    const lines = ['GET /voice-hub HTTP/1.1', 'Host: 127.0.0.1', 'Host: evil.example', 'Upgrade: websocket', 'Connection: Upgrade', 'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==', 'Sec-WebSocket-Version: 13'];
    assertTwoHostsRefused(await exchange(svc.port, [raw(lines)]));
  });
});

describe('what uWS refuses before the request reaches the service', () => {
  // uWS refuses these without calling any handler: v20.30 closes at once with no answer, v20.56 answers
  // 400 itself and closes (test/api/uws-refusals has each outcome). Either way the service
  // never answers and the registration in the body never runs.
  const refusedByUws: Array<[string, (length: number) => string[], (body: string) => string]> = [
    ['Content-Length with Transfer-Encoding', (n) => [`Content-Length: ${n}`, 'Transfer-Encoding: chunked'], (b) => `${Buffer.byteLength(b).toString(16)}\r\n${b}\r\n0\r\n\r\n`],
    ['Content-Length with a sign', (n) => [`Content-Length: +${n}`], (b) => b],
    ['Content-Length as a list', (n) => [`Content-Length: ${n}, ${n}`], (b) => b],
    ['Content-Length in hex', (n) => [`Content-Length: 0x${n.toString(16)}`], (b) => b],
    ['Content-Length beyond 64 bits', () => ['Content-Length: 99999999999999999999999'], (b) => b],
    ['a chunk size that is not hex', () => ['Transfer-Encoding: chunked'], (b) => `zz\r\n${b}\r\n0\r\n\r\n`],
  ];
  refusedByUws.forEach(([name, lines, frame], i) => {
    it(`${name}: closed at once, the service answers nothing, nothing registered`, async () => {
      const id = `uws-refused-${i}`;
      const body = register(id);
      const answer = await exchange(svc.port, [raw([...REGISTER, ...lines(Buffer.byteLength(body))], frame(body))], { idleMs: CLOSED_AT_ONCE_MS });
      assert.deepEqual(answer.responses, []);
      const uws = answer.rest.toString('latin1');
      if (UWS_ADDON === 'v20.56') assert.equal(uwsOwnStatus(uws), 400, uws);
      else assert.equal(uws, '');
      assertClosedAtOnce(answer);
      assert.equal(await registered(id), false);
    });
  });

  // Heads uWS holds without an answer, or closes at once, without the service seeing them (HTTP/1.0, no
  // Host, obs-fold, unknown and lower-case methods...), and what the Node 24 addon does with them
  // instead: test/api/uws-refusals.test.ts, for each addon.
  it('methods uWS passes on (PATCH, TRACE, CONNECT, OPTIONS) get the 405 with Allow', async () => {
    for (const method of ['PATCH', 'TRACE', 'CONNECT', 'OPTIONS']) {
      // Not /health: it answers every method (test/health/head.test.ts).
      const answer = await exchange(svc.port, [raw([`${method} /swagger HTTP/1.1`, 'Host: 127.0.0.1'])], { expect: 1 });
      assert.deepEqual(answer.responses.map((r) => [r.status, r.headers.allow]), [[405, 'GET']], method);
    }
  });

  it('a Content-Length of 9 digits over the body limit is a 413; of 10 digits uWS v20.30 closes at once', async () => {
    const nine = await exchange(svc.port, [raw([...REGISTER, 'Content-Length: 999999999'], '{')], { expect: 1 });
    assert.deepEqual(nine.responses.map((r) => r.status), [413]);
    // v20.56 passes it on, and the service answers it as it answers 9 digits.
    const ten = await exchange(svc.port, [raw([...REGISTER, 'Content-Length: 1000000000'], '{')], { idleMs: CLOSED_AT_ONCE_MS });
    assert.deepEqual(ten.responses.map((r) => r.status), UWS_ADDON === 'v20.56' ? [413] : []);
    assertClosedAtOnce(ten);
  });

  it('a chunk extension (`2;a=b`): held without an answer', async () => {
    const answer = await exchange(svc.port, [raw([...REGISTER, 'Transfer-Encoding: chunked'], '2;a=b\r\n{}\r\n0\r\n\r\n')], { idleMs: 600 });
    assert.deepEqual(answer.responses, []);
    assert.equal(answer.closedByServer, false, 'uWS now closes it; update docs/security.md "HTTP/1.1 framing and pipelining"');
  });

  it('Expect: 100-continue is answered 100 Continue by uWS, before the service refuses the request', async () => {
    const answer = await exchange(svc.port, [raw([...REGISTER, 'Content-Length: 2', 'Expect: 100-continue', 'X-API-Key: wrong'])], { idleMs: 600 });
    assert.equal(answer.rest.toString('latin1'), 'HTTP/1.1 100 Continue\r\n\r\n');
  });

  it('Expect: 100-continue: one 100 Continue per route uWS tries, as docs/security.md counts them', async () => {
    const continues = async (requestLine: string): Promise<number> => {
      const answer = await exchange(svc.port, [raw([requestLine, 'Host: 127.0.0.1', 'Expect: 100-continue', 'Content-Length: 0', 'Connection: close'])], { idleMs: 600 });
      // The 1xx answers have no length, so the split of the answers stops at the first: count in what is left.
      const text = answer.rest.toString('latin1');
      assert.match(text, /HTTP\/1\.1 [2-5]\d\d /, requestLine);
      return text.split('HTTP/1.1 100 Continue\r\n\r\n').length - 1;
    };
    const counts = {
      'GET /health': await continues('GET /health HTTP/1.1'),
      'POST /health': await continues('POST /health HTTP/1.1'),
      'GET /swagger/index.html': await continues('GET /swagger/index.html HTTP/1.1'),
      'GET /api/device/list': await continues('GET /api/device/list HTTP/1.1'),
      'POST /api/device/register': await continues('POST /api/device/register HTTP/1.1'),
    };
    assert.deepEqual(counts, { 'GET /health': 3, 'POST /health': 2, 'GET /swagger/index.html': 3, 'GET /api/device/list': 2, 'POST /api/device/register': 1 });
  });

  it('Connection: close with a request behind it in the same read: uWS answers both and keeps the connection', async () => {
    const first = raw(['GET /api/nothing HTTP/1.1', 'Host: 127.0.0.1', 'Connection: close']);
    const second = raw(['GET /api/nothing HTTP/1.1', 'Host: 127.0.0.1']);
    const answer = await exchange(svc.port, [Buffer.concat([first, second])], { idleMs: 600 });
    assert.deepEqual(answer.responses.map((r) => r.status), [404, 404]);
    assert.equal(answer.closedByServer, false, 'uWS now honours the close; update docs/security.md');
    const alone = await exchange(svc.port, [first], { idleMs: 600 });
    assert.deepEqual(alone.responses.map((r) => r.status), [404]);
    assert.ok(alone.closedByServer, 'alone, the close is honoured');
  });
});

describe('checkFraming, table', () => {
  const host = ['host', '127.0.0.1'] as const;
  const ok: Array<Array<readonly [string, string]>> = [
    [host],
    [host, ['content-length', '0']],
    [host, ['content-length', '007']],
    [host, ['content-length', ' 12\t']],
    [host, ['transfer-encoding', 'chunked']],
    [host, ['transfer-encoding', ' CHUNKED ']],
    [['host', '']],
    [host, ['upgrade', 'websocket'], ['connection', 'Upgrade'], ['content-length', '0']],
    [host, ['connection', 'close'], ['content-length', '5']],
  ];
  for (const lines of ok) {
    it(`accepts ${JSON.stringify(lines)}`, () => assert.equal(checkFraming('/', lines), undefined));
  }
  const refused: Array<[Array<readonly [string, string]>, number]> = [
    [[], 400],
    [[host, host], 400],
    [[host, ['content-length', '1'], ['content-length', '1']], 400],
    [[host, ['content-length', '-1']], 400],
    [[host, ['content-length', '1.0']], 400],
    [[host, ['content-length', '1e3']], 400],
    [[host, ['content-length', '\u0661']], 400],
    [[host, ['content-length', '1'], ['transfer-encoding', 'chunked']], 400],
    [[host, ['transfer-encoding', '']], 400],
    [[host, ['transfer-encoding', 'chunked;q=1']], 400],
    [[host, ['x', 'y'.repeat(32 * 1024)]], 431],
    [[host, ['upgrade', 'websocket'], ['content-length', '5']], 400],
    [[host, ['connection', 'keep-alive, UPGRADE'], ['transfer-encoding', 'chunked']], 400],
  ];
  for (const [lines, status] of refused) {
    it(`refuses ${JSON.stringify(lines).slice(0, 80)} with ${status}`, () => assert.equal(checkFraming('/', lines)?.status, status));
  }
  it('bounds the target in bytes, not UTF-16 units', () => {
    assert.equal(checkFraming(`/${'é'.repeat(4096)}`, [host])?.status, 414);
    assert.equal(checkFraming(`/${'a'.repeat(8191)}`, [host]), undefined);
  });
});
