// The hub's HTTP and WebSocket edges, driven with fetch and a raw `ws` client: negotiate (versions,
// 404/409, expiry, bounds), CORS and origins, authentication, handshake, frame types, garbage,
// several messages per frame, client and handshake timeouts, and the slow-client policy.
import { decode, encode } from '@msgpack/msgpack';
import assert from 'node:assert/strict';
import { connect as netConnect } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { corsPolicy } from '../../src/http/cors.js';
import { createLogger } from '../../src/log/logger.js';
import { splitBinaryMessages, writeBinaryMessage } from '../../src/hub/binary-format.js';
import { RawClient, connectClient, startHub, upgradeChallenge, type RawFrame, type TestHub } from './helpers.js';
import { sleep, waitUntil } from '../support/wait.js';

const RS = '\u001e';
const json = (frame: RawFrame): unknown[] => frame.data.toString('utf8').split(RS).filter(Boolean).map((s) => JSON.parse(s));
/** Every MessagePack message in a binary frame. */
const mp = (frame: RawFrame): unknown[] => splitBinaryMessages(frame.data, 1 << 30).messages.map((m) => decode(m));
const wsUrl = (hub: TestHub, query = ''): string => `${hub.url.replace(/^http/, 'ws')}${query}`;

async function negotiate(hub: TestHub, query = '?negotiateVersion=1', init: RequestInit = {}): Promise<Response> {
  return fetch(`${hub.url}/negotiate${query}`, { method: 'POST', ...init });
}


describe('negotiate and upgrade', () => {
  let hub: TestHub;
  before(async () => {
    hub = await startHub({
      cors: corsPolicy(['http://allowed.example']),
      authenticate: (token) => {
        if (token === 'bad') throw new Error('invalid');
        return token ? { name: token } : undefined;
      },
    });
  });
  after(() => hub.stop());

  it('version 1: connectionId, connectionToken, WebSockets only, no stateful reconnect', async () => {
    const res = await negotiate(hub);
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^application\/json/);
    const body = (await res.json()) as Record<string, unknown>;
    assert.equal(body.negotiateVersion, 1);
    assert.equal(typeof body.connectionId, 'string');
    assert.equal(typeof body.connectionToken, 'string');
    assert.notEqual(body.connectionId, body.connectionToken);
    assert.deepEqual(body.availableTransports, [{ transport: 'WebSockets', transferFormats: ['Text', 'Binary'] }]);
    assert.equal('useStatefulReconnect' in body, false);
  });

  it('version 0: only a connectionId, which is the id', async () => {
    const body = (await (await negotiate(hub, '')).json()) as Record<string, unknown>;
    assert.equal(body.negotiateVersion, 0);
    assert.equal('connectionToken' in body, false);
    const client = await RawClient.connect(wsUrl(hub, `?id=${body.connectionId as string}`));
    assert.deepEqual(json(await client.handshake()), [{}]);
    client.ws.close();
  });

  it('a version that is no integer, or below 0, is answered 200 with the error and no connection, as ASP.NET Core does', async () => {
    const cases: [string, string][] = [
      ['?negotiateVersion=abc', 'The client requested a non-integer protocol version.'],
      ['?negotiateVersion=', 'The client requested a non-integer protocol version.'],
      ['?negotiateVersion=1&negotiateVersion=0', 'The client requested a non-integer protocol version.'],
      ['?negotiateVersion=-1', "The client requested version '-1', but the server does not support this version."],
    ];
    const before = hub.server.stats().pendingNegotiations;
    for (const [query, error] of cases) {
      const res = await negotiate(hub, query);
      assert.equal(res.status, 200, query);
      assert.match(res.headers.get('content-type') ?? '', /^application\/json/);
      assert.equal(await res.text(), JSON.stringify({ error }), query);
    }
    assert.equal(hub.server.stats().pendingNegotiations, before, 'no negotiation held for a refused version');
  });

  it('query parameter names ignore case: NEGOTIATEVERSION, ID', async () => {
    const body = (await (await negotiate(hub, '?NEGOTIATEVERSION=1')).json()) as { negotiateVersion: number; connectionToken: string };
    assert.equal(body.negotiateVersion, 1);
    assert.equal(await RawClient.refusal(wsUrl(hub, '?ID=nope')), 404);
    const client = await RawClient.connect(wsUrl(hub, `?Id=${body.connectionToken}`));
    assert.deepEqual(json(await client.handshake()), [{}]);
    client.ws.close();
  });

  it('unknown id 404, second socket on an id 409, and 404 again once it closed', async () => {
    const { connectionToken } = (await (await negotiate(hub)).json()) as { connectionToken: string };
    assert.equal(await RawClient.refusal(wsUrl(hub, '?id=nope')), 404);
    const first = await RawClient.connect(wsUrl(hub, `?id=${connectionToken}`));
    assert.equal(await RawClient.refusal(wsUrl(hub, `?id=${connectionToken}`)), 409);
    first.ws.close();
    await first.closed;
    await waitUntil(() => hub.server.connectionCount() === 0, 'server-side close', 3000);
    assert.equal(await RawClient.refusal(wsUrl(hub, `?id=${connectionToken}`)), 404);
  });

  it('without id (skipNegotiation) the socket is accepted', async () => {
    assert.equal(await RawClient.refusal(wsUrl(hub)), 101);
  });

  it('an empty id (`id=`, `ID=`) is no id, as ASP.NET Core reads it: the socket is accepted as without one', async () => {
    for (const query of ['?id=', '?ID=', '?id=&access_token=']) assert.equal(await RawClient.refusal(wsUrl(hub, query)), 101, query);
    // Two empty values are the id ",", which names no connection.
    assert.equal(await RawClient.refusal(wsUrl(hub, '?id=&id=')), 404);
  });

  it('CORS: preflight and POST echo an allowed origin with credentials, never *', async () => {
    const origin = 'http://allowed.example';
    const pre = await fetch(`${hub.url}/negotiate?negotiateVersion=1`, {
      method: 'OPTIONS',
      headers: { Origin: origin, 'Access-Control-Request-Method': 'POST', 'Access-Control-Request-Headers': 'x-signalr-user-agent, authorization' },
    });
    assert.equal(pre.status, 204);
    assert.equal(pre.headers.get('access-control-allow-origin'), origin);
    assert.equal(pre.headers.get('access-control-allow-credentials'), 'true');
    const allowed = (pre.headers.get('access-control-allow-headers') ?? '').split(/,\s*/);
    for (const h of ['x-requested-with', 'x-signalr-user-agent', 'authorization', 'content-type']) assert.ok(allowed.includes(h), h);

    const post = await negotiate(hub, '?negotiateVersion=1', { headers: { Origin: origin } });
    assert.equal(post.status, 200);
    assert.equal(post.headers.get('access-control-allow-origin'), origin);
    assert.equal(post.headers.get('access-control-allow-credentials'), 'true');
  });

  it('a rejected origin gets 403 on negotiate and on the upgrade; no Origin is fine', async () => {
    const evil = { Origin: 'http://evil.example' };
    assert.equal((await negotiate(hub, '?negotiateVersion=1', { headers: evil })).status, 403);
    assert.equal((await fetch(`${hub.url}/negotiate`, { method: 'OPTIONS', headers: evil })).status, 403);
    assert.equal(await RawClient.refusal(wsUrl(hub), evil), 403);
    assert.equal(await RawClient.refusal(wsUrl(hub), { Origin: 'http://allowed.example' }), 101);
    assert.equal(await RawClient.refusal(wsUrl(hub)), 101);
  });

  it('other methods on negotiate get 405 with Allow: POST, a plain OPTIONS (not a preflight) too', async () => {
    for (const method of ['GET', 'PUT', 'DELETE', 'OPTIONS']) {
      const res = await fetch(`${hub.url}/negotiate`, { method });
      assert.equal(res.status, 405, method);
      assert.equal(res.headers.get('allow'), 'POST', method);
      assert.equal(await res.text(), 'Method not allowed', method);
    }
  });

  it('HEAD on negotiate gets 405 without a body: the next answer on the connection follows its headers', async () => {
    const url = new URL(hub.url);
    const text = await new Promise<string>((resolve, reject) => {
      const socket = netConnect(Number(url.port), '127.0.0.1', () => {
        socket.write(`HEAD ${url.pathname}/negotiate HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\nGET ${url.pathname}/negotiate HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n`);
      });
      let data = '';
      socket.on('data', (d: Buffer) => (data += d.toString('latin1')));
      socket.on('end', () => resolve(data));
      socket.on('error', reject);
      socket.setTimeout(10_000, () => reject(new Error('no answer')));
    });
    const end = text.indexOf('\r\n\r\n');
    assert.match(text.slice(0, end), /^HTTP\/1\.1 405 Method Not Allowed\r\n/);
    assert.match(text.slice(0, end), /\r\ncontent-length: 18(\r\n|$)/i, 'the length of the text a GET gets');
    assert.match(text.slice(end + 4), /^HTTP\/1\.1 405 Method Not Allowed\r\n[\s\S]*\r\n\r\nMethod not allowed$/);
  });

  it('a failing authentication answers 401 on negotiate and on the upgrade', async () => {
    const res = await negotiate(hub, '?negotiateVersion=1', { headers: { Authorization: 'Bearer bad' } });
    assert.equal(res.status, 401);
    // An authentication that fails for a reason other than a refused token (here a plain Error) names none.
    assert.equal(res.headers.get('www-authenticate'), 'Bearer');
    assert.deepEqual(await upgradeChallenge(wsUrl(hub, '?access_token=bad')), { status: 401, challenge: 'Bearer' });
    assert.equal(await RawClient.refusal(wsUrl(hub), { Authorization: 'Bearer bad' }), 401);
  });

  it('the access_token query parameter is the user on the socket', async () => {
    const client = await RawClient.connect(wsUrl(hub, '?access_token=bob'));
    await client.handshake();
    client.send(`{"type":1,"invocationId":"1","target":"Whoami","arguments":[]}${RS}`);
    assert.deepEqual(json(await client.next()), [{ type: 3, invocationId: '1', result: { name: 'bob' } }]);
    client.ws.close();
  });

  it('a negotiate body does not disturb the server', async () => {
    const res = await negotiate(hub, '?negotiateVersion=1', { body: 'x'.repeat(10_000), headers: { 'content-type': 'text/plain' } });
    assert.equal(res.status, 200);
    assert.equal((await negotiate(hub)).status, 200);
  });
});

describe('negotiation bounds', () => {
  it('unused negotiations expire and are bounded in number', async () => {
    const hub = await startHub({ negotiationTtlMs: 150, maxPendingNegotiations: 3 });
    try {
      const tokens: string[] = [];
      for (let i = 0; i < 5; i++) tokens.push(((await (await negotiate(hub)).json()) as { connectionToken: string }).connectionToken);
      assert.equal(hub.server.stats().pendingNegotiations, 3);
      assert.equal(await RawClient.refusal(wsUrl(hub, `?id=${tokens[0]!}`)), 404, 'the oldest was dropped');
      await waitUntil(() => hub.server.stats().pendingNegotiations === 0, 'expiry', 3000);
      assert.ok((hub.server.stats().negotiationsExpired ?? 0) >= 1);
      assert.equal(await RawClient.refusal(wsUrl(hub, `?id=${tokens[4]!}`)), 404, 'expired');
    } finally {
      hub.stop();
    }
  });
});

describe('handshake and frames', () => {
  let hub: TestHub;
  before(async () => {
    hub = await startHub({ maximumReceiveMessageSize: 16 * 1024 });
  });
  after(() => hub.stop());

  it('JSON replies in text frames, MessagePack in binary frames', async () => {
    const text = await RawClient.connect(wsUrl(hub));
    const hs = await text.handshake('json');
    assert.equal(hs.binary, false);
    assert.equal(hs.data.toString(), `{}${RS}`);
    text.send(`{"type":1,"invocationId":"1","target":"Add","arguments":[1,2]}${RS}`);
    const reply = await text.next();
    assert.equal(reply.binary, false);
    assert.deepEqual(json(reply), [{ type: 3, invocationId: '1', result: 3 }]);
    text.ws.close();

    const bin = await RawClient.connect(wsUrl(hub));
    const hs2 = await bin.handshake('messagepack');
    assert.equal(hs2.binary, true);
    assert.equal(hs2.data.toString(), `{}${RS}`);
    bin.send(writeBinaryMessage(encode([1, {}, '1', 'Add', [1, 2]])));
    const reply2 = await bin.next();
    assert.equal(reply2.binary, true);
    assert.deepEqual(mp(reply2), [[3, {}, '1', 3, 3]]);
    bin.ws.close();
  });

  it('a handshake and messages in one frame: those left unread while a method runs survive the frames after it', async () => {
    // The request is parsed where uWS lent it; the messages after a slow invocation must be kept as a
    // copy, as uWS reuses the frame's bytes for the next frame (sent here at once, the same length).
    const c = await RawClient.connect(wsUrl(hub));
    const invoke = (id: string, target: string, args: unknown[]): string => `${JSON.stringify({ type: 1, invocationId: id, target, arguments: args })}${RS}`;
    const first = `{"protocol":"json","version":1}${RS}${invoke('1', 'Slow', [50, 'first'])}${invoke('2', 'Echo', ['second'])}${invoke('3', 'Echo', ['third'])}`;
    const fifth = 'x'.repeat(first.length - invoke('4', 'Echo', ['fourth']).length - invoke('5', 'Echo', ['']).length);
    c.send(first);
    c.send(`${invoke('4', 'Echo', ['fourth'])}${invoke('5', 'Echo', [fifth])}`);
    assert.deepEqual(json(await c.next()), [{}]);
    const results: unknown[] = [];
    while (results.length < 5) results.push(...json(await c.next()));
    assert.deepEqual(results, [
      { type: 3, invocationId: '1', result: 'first' },
      { type: 3, invocationId: '2', result: 'second' },
      { type: 3, invocationId: '3', result: 'third' },
      { type: 3, invocationId: '4', result: 'fourth' },
      { type: 3, invocationId: '5', result: fifth },
    ]);
    c.ws.close();
  });

  it('a handshake split over frames, followed by messages in its last frame', async () => {
    const c = await RawClient.connect(wsUrl(hub));
    c.send('{"protocol":"js');
    c.send(`on","version":1}${RS}{"type":1,"invocationId":"1","target":"Echo","arguments":["same frame"]}${RS}`);
    assert.deepEqual(json(await c.next()), [{}]);
    assert.deepEqual(json(await c.next()), [{ type: 3, invocationId: '1', result: 'same frame' }]);
    c.ws.close();
  });

  const failures: [string, string, string][] = [
    ['unknown protocol', `{"protocol":"xml","version":1}${RS}`, "The protocol 'xml' is not supported."],
    ['unsupported version', `{"protocol":"json","version":3}${RS}`, "The server does not support version 3 of the 'json' protocol."],
    ['garbage', `hello${RS}`, 'An unexpected error occurred during connection handshake.'],
  ];
  for (const [name, request, error] of failures) {
    it(`handshake error: ${name}`, async () => {
      const c = await RawClient.connect(wsUrl(hub));
      c.send(request);
      const frames = await c.untilClosed();
      assert.deepEqual(frames.flatMap(json), [{ error }]);
    });
  }

  it('several messages per frame, each under the limit, together over it', async () => {
    for (const protocol of ['json', 'messagepack'] as const) {
      const c = await RawClient.connect(wsUrl(hub));
      await c.handshake(protocol);
      const count = 8;
      const big = 'z'.repeat(8 * 1024);
      if (protocol === 'json') {
        c.send(Array.from({ length: count }, (_, i) => `{"type":1,"invocationId":"${i}","target":"Echo","arguments":["${big}"]}${RS}`).join(''));
      } else {
        c.send(Buffer.concat(Array.from({ length: count }, (_, i) => writeBinaryMessage(encode([1, {}, `${i}`, 'Echo', [big]])))));
      }
      const ids: string[] = [];
      while (ids.length < count) {
        const frame = await c.next();
        if (protocol === 'json') for (const m of json(frame) as { invocationId: string }[]) ids.push(m.invocationId);
        else for (const m of mp(frame) as string[][]) ids.push(m[2]!);
      }
      assert.deepEqual(ids, Array.from({ length: count }, (_, i) => `${i}`));
      c.ws.close();
    }
  });

  it('a non-blocking invocation gets no completion', async () => {
    const c = await RawClient.connect(wsUrl(hub));
    await c.handshake();
    c.send(`{"type":1,"target":"Add","arguments":[1,2]}${RS}{"type":1,"target":"Crash","arguments":[]}${RS}`);
    c.send(`{"type":1,"invocationId":"9","target":"Add","arguments":[4,5]}${RS}`);
    // Dispatch is sequential: a completion for the first two would arrive before this one.
    assert.deepEqual(json(await c.next()), [{ type: 3, invocationId: '9', result: 9 }]);
    c.ws.close();
  });

  it('unknown message types and pings are ignored', async () => {
    const c = await RawClient.connect(wsUrl(hub));
    await c.handshake();
    c.send(`{"type":99,"x":1}${RS}{"type":6}${RS}{"type":8,"sequenceId":1}${RS}{"type":1,"invocationId":"1","target":"Echo","arguments":[1]}${RS}`);
    assert.deepEqual(json(await c.next()), [{ type: 3, invocationId: '1', result: 1 }]);
    c.ws.close();
  });

  const garbage: [string, 'json' | 'messagepack', string | Uint8Array][] = [
    ['JSON that does not parse', 'json', `not json${RS}`],
    ['an Invocation without target', 'json', `{"type":1,"arguments":[]}${RS}`],
    ['invalid UTF-8 in a binary frame', 'json', Uint8Array.from([0x7b, 0xff, 0x7d, 0x1e])],
    ['a JSON message over the limit', 'json', `{"type":1,"target":"Echo","arguments":["${'x'.repeat(20_000)}"]}${RS}`],
    ['undecodable MessagePack', 'messagepack', writeBinaryMessage(Uint8Array.from([0xc1, 0xc1]))],
    ['a length prefix over 2 GB', 'messagepack', Uint8Array.from([0xff, 0xff, 0xff, 0xff, 0x0f])],
    ['a length prefix over the limit', 'messagepack', Uint8Array.from([0x80, 0x80, 0x02])],
  ];
  for (const [name, protocol, frame] of garbage) {
    it(`closes with an error on ${name}, and keeps serving others`, async () => {
      const bystander = await connectClient(hub.url, { protocol: 'json' });
      const c = await RawClient.connect(wsUrl(hub));
      await c.handshake(protocol);
      c.send(frame, typeof frame !== 'string');
      const frames = await c.untilClosed();
      const last = frames.at(-1);
      assert.ok(last, 'a Close message');
      const close = (protocol === 'json' ? json(last) : mp(last)).at(-1);
      assert.deepEqual(close, protocol === 'json' ? { type: 7, error: 'Connection closed with an error.', allowReconnect: true } : [7, 'Connection closed with an error.', true]);
      assert.equal(await bystander.invoke('Add', 1, 2), 3);
      await bystander.stop();
    });
  }

  it('counts protocol errors and oversized messages', () => {
    const stats = hub.server.stats();
    assert.ok((stats.protocolErrors ?? 0) >= garbage.length);
    assert.ok((stats.oversizedMessages ?? 0) >= 2);
  });
});

describe('timeouts', () => {
  it('no handshake within the handshake timeout: error response and close', async () => {
    const hub = await startHub({ handshakeTimeoutMs: 150 });
    try {
      const c = await RawClient.connect(wsUrl(hub));
      const frames = await c.untilClosed();
      assert.deepEqual(frames.flatMap(json), [{ error: 'Handshake was canceled.' }]);
      assert.equal(hub.server.stats().handshakeTimeouts, 1);
    } finally {
      hub.stop();
    }
  });

  it('bytes of a message that never ends do not keep a client: only whole messages reset the client timeout', async () => {
    const hub = await startHub({ clientTimeoutMs: 300, keepAliveIntervalMs: 100 });
    try {
      const trickler = await RawClient.connect(wsUrl(hub));
      await trickler.handshake();
      trickler.send(`{"type":6}${RS}`);
      trickler.send('{"type":1,"target":"Add","arguments":[');
      const timer = setInterval(() => trickler.send('1,'), 50);
      try {
        const messages = (await trickler.untilClosed()).flatMap(json) as { type: number }[];
        assert.deepEqual(messages.at(-1), { type: 7, error: 'Connection closed with an error.', allowReconnect: true });
        assert.equal(hub.server.stats().clientTimeouts, 1);
      } finally {
        clearInterval(timer);
      }
    } finally {
      hub.stop();
    }
  });

  // As in ASP.NET Core, whose dispatcher starts the client timeout at the first Ping: clients that never
  // ping (the ASP.NET Core 2.1 JavaScript client, hand-written firmware) are not closed for listening. Its
  // Close is ASP.NET Core 8's: the timeout is the CloseException ("Connection closed with an error."), and
  // AbortAllowReconnect sets allowReconnect.
  it('a client that pinged and fell silent is closed after the client timeout; a pinging one and one that never pinged are not', async () => {
    const hub = await startHub({ clientTimeoutMs: 300, keepAliveIntervalMs: 100 });
    try {
      const silent = await RawClient.connect(wsUrl(hub));
      await silent.handshake();
      silent.send(`{"type":6}${RS}`);
      const neverPinged = await RawClient.connect(wsUrl(hub));
      await neverPinged.handshake();
      const pinging = await RawClient.connect(wsUrl(hub));
      await pinging.handshake();
      const timer = setInterval(() => pinging.send(`{"type":6}${RS}`), 50);
      const add = async (client: RawClient): Promise<void> => {
        client.send(`{"type":1,"invocationId":"1","target":"Add","arguments":[1,1]}${RS}`);
        let reply: unknown[] = [];
        while (!reply.some((m) => (m as { type: number }).type === 3)) reply = json(await client.next());
      };
      try {
        const frames = await silent.untilClosed();
        const messages = frames.flatMap(json) as { type: number; error?: string }[];
        assert.ok(messages.some((m) => m.type === 6), 'server pings while idle');
        assert.deepEqual(messages.at(-1), { type: 7, error: 'Connection closed with an error.', allowReconnect: true });
        await sleep(600);
        await add(pinging);
        await add(neverPinged);
        assert.equal(hub.server.stats().clientTimeouts, 1);
      } finally {
        clearInterval(timer);
        pinging.ws.close();
        neverPinged.ws.close();
      }
    } finally {
      hub.stop();
    }
  });
});

describe('back-pressure', () => {
  it('a client that does not read is closed with an error and counted', async () => {
    const hub = await startHub({ maxBufferedBytes: 64 * 1024 });
    try {
      const c = await RawClient.connect(wsUrl(hub));
      await c.handshake();
      const socket = (c.ws as unknown as { _socket: { pause(): void; resume(): void } })._socket;
      socket.pause();
      // 400 x 64 KiB: more than the kernel's socket buffers can hold, so uWS has to buffer.
      c.send(`{"type":1,"target":"Flood","arguments":[400,65536]}${RS}`);
      await waitUntil(() => hub.server.stats().slowClientsClosed === 1, 'slow client closed', 10_000);
      assert.equal(hub.server.connectionCount(), 0);
      socket.resume();
      const frames = await c.untilClosed(15_000);
      const last = json(frames.at(-1)!).at(-1);
      assert.deepEqual(last, { type: 7, error: 'Server closed the connection: client too slow to receive messages.', allowReconnect: true });
    } finally {
      hub.stop();
    }
  });
});

describe('back-pressure, many clients', () => {
  it('closing clients that do not read is logged as the other closings are: 20 lines a minute, then a sum', async () => {
    const lines: string[] = [];
    const logger = createLogger({ levels: { Default: 'Trace' }, write: (l) => lines.push(l), journald: false, timestamps: false });
    const hub = await startHub({ maxBufferedBytes: 16 * 1024, logger });
    const clients = 22;
    try {
      for (let i = 1; i <= clients; i++) {
        const c = await RawClient.connect(wsUrl(hub));
        await c.handshake();
        (c.ws as unknown as { _socket: { pause(): void } })._socket.pause();
        // 300 x 64 KiB: more than the kernel's socket buffers hold, so uWS has to buffer.
        c.send(`{"type":1,"target":"Flood","arguments":[300,65536]}${RS}`);
        await waitUntil(() => hub.server.stats().slowClientsClosed === i, `slow client ${i} closed`, 10_000);
        c.ws.terminate();
      }
      const slow = (): string[] => lines.filter((l) => l.includes('closing the slow connection'));
      // Before, each was a warning of its own: a client could open one after another.
      assert.equal(slow().length, 20, lines.join('\n'));
      // No connection is left, so closing them all sums up the window at once.
      hub.server.closeAll({ allowReconnect: false });
      const sums = lines.filter((l) => l.includes('more connections closed for misbehaving'));
      assert.equal(sums.length, 1, lines.join('\n'));
      assert.match(sums[0]!, /^warn: \w+: 2 more connections closed for misbehaving in the last \d+ s; the last: .*closing the slow connection$/);
    } finally {
      hub.stop();
    }
  });
});

describe('closeAll', () => {
  it('sends a Close message with the reason to every connection', async () => {
    const hub = await startHub();
    try {
      const a = await RawClient.connect(wsUrl(hub));
      await a.handshake('json');
      const b = await RawClient.connect(wsUrl(hub));
      await b.handshake('messagepack');
      hub.server.closeAll({ error: 'Server is shutting down.', allowReconnect: true });
      assert.deepEqual(json((await a.untilClosed()).at(-1)!), [{ type: 7, error: 'Server is shutting down.', allowReconnect: true }]);
      assert.deepEqual(mp((await b.untilClosed()).at(-1)!), [[7, 'Server is shutting down.', true]]);
      await sleep(10);
      assert.equal(hub.server.connectionCount(), 0);
    } finally {
      hub.stop();
    }
  });
});

describe('a Close message from the client', () => {
  // ASP.NET Core (DefaultHubDispatcher: Abort; HubConnectionHandler: SendCloseAsync) answers with a Close
  // of its own, without an error and with allowReconnect false, whatever the client's Close said, and
  // ends the connection.
  it('is answered with a Close without an error or allowReconnect, in either protocol, and ends the connection', async () => {
    const hub = await startHub();
    try {
      const a = await RawClient.connect(wsUrl(hub));
      await a.handshake('json');
      a.send(`{"type":7,"error":"leaving","allowReconnect":true}${RS}`);
      const b = await RawClient.connect(wsUrl(hub));
      await b.handshake('messagepack');
      b.send(writeBinaryMessage(encode([7, 'leaving', true])));
      assert.deepEqual((await a.untilClosed()).map(json), [[{ type: 7 }]]);
      assert.deepEqual((await b.untilClosed()).map(mp), [[[7, null, false]]]);
      assert.equal((await a.closed).code, 1000);
      await waitUntil(() => hub.server.connectionCount() === 0, 'both connections ended', 3000);
    } finally {
      hub.stop();
    }
  });
});
