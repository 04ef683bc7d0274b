// Stateful reconnect at the wire, with a raw WebSocket client: what negotiate offers, the acks the
// hub sends, the Sequence and replay it sends on a reconnect, the client's resent messages handled
// once, and every reconnect the hub refuses (late, twice, another user's token, after a clean close),
// with the exact status and body.
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import type { Socket } from 'node:net';
import { after, describe, it } from 'node:test';
import WebSocket from 'ws';
import { HubError } from '../../src/hub/index.js';
import { createLogger } from '../../src/log/logger.js';
import { upgradeSocket } from '../support/raw-websocket.js';
import { sleep, waitUntil, withTimeout } from '../support/wait.js';
import { RawClient, upgrade, startHub, type TestHub } from './helpers.js';

const RS = '\u001e';
const STATEFUL = { bufferSize: 100_000, disconnectTimeoutMs: 5000 };

async function negotiate(hub: TestHub, query: string, headers: Record<string, string> = {}): Promise<Record<string, unknown>> {
  const res = await fetch(`${hub.url}/negotiate?${query}`, { method: 'POST', headers });
  assert.equal(res.status, 200);
  return (await res.json()) as Record<string, unknown>;
}

const wsUrl = (hub: TestHub, query: string): string => `ws://127.0.0.1:${hub.port}/voice-hub?${query}`;


/** JSON records of a raw frame. */
const records = (data: Buffer): unknown[] => data.toString().split(RS).filter(Boolean).map((t) => JSON.parse(t));

/** Reads frames until `count` records have arrived (acks count only when `acks`). */
async function readRecords(client: RawClient, count: number, acks = true): Promise<unknown[]> {
  const out: unknown[] = [];
  while (out.length < count) out.push(...records((await client.next(4000)).data).filter((r) => acks || (r as { type: number }).type !== 8));
  return out;
}

/** A raw client that negotiated stateful reconnect and did the version 2 handshake. */
async function statefulRaw(hub: TestHub, token?: string): Promise<{ client: RawClient; id: string }> {
  const auth = token ? `&access_token=${token}` : '';
  const n = await negotiate(hub, `negotiateVersion=1&useStatefulReconnect=true${auth}`);
  assert.equal(n.useStatefulReconnect, true);
  const id = n.connectionToken as string;
  const client = await RawClient.connect(wsUrl(hub, `id=${id}${auth}`));
  client.send(`{"protocol":"json","version":2}${RS}`);
  assert.equal((await client.next()).data.toString(), `{}${RS}`);
  return { client, id };
}

/** Ends the socket without a close frame, as a network drop does. */
async function drop(hub: TestHub, client: RawClient): Promise<void> {
  const before = hub.server.stats().disconnects ?? 0;
  client.ws.terminate();
  await waitUntil(() => (hub.server.stats().disconnects ?? 0) > before, 'the hub to see the drop', 3000);
}

const record = (n: number): string => `{"type":1,"target":"Record","arguments":[${n}]}${RS}`;

describe('negotiate and stateful reconnect', () => {
  const hubs: TestHub[] = [];
  after(() => hubs.forEach((h) => h.stop()));
  const hub = async (options: Parameters<typeof startHub>[0] = { statefulReconnect: STATEFUL }): Promise<TestHub> => {
    const h = await startHub(options);
    hubs.push(h);
    return h;
  };

  it('offers it in version 1 to a client that asks (name and value in any case), and only then', async () => {
    const h = await hub();
    assert.equal((await negotiate(h, 'negotiateVersion=1&useStatefulReconnect=true')).useStatefulReconnect, true);
    assert.equal((await negotiate(h, 'negotiateVersion=1&UseStatefulReconnect=True')).useStatefulReconnect, true);
    const plain = await negotiate(h, 'negotiateVersion=1');
    assert.deepEqual(Object.keys(plain).sort(), ['availableTransports', 'connectionId', 'connectionToken', 'negotiateVersion']);
    assert.equal('useStatefulReconnect' in (await negotiate(h, 'negotiateVersion=1&useStatefulReconnect=false')), false);
    const v0 = await negotiate(h, 'useStatefulReconnect=true');
    assert.deepEqual(Object.keys(v0).sort(), ['availableTransports', 'connectionId', 'negotiateVersion']);
  });

  it('is never offered by a hub without it', async () => {
    const h = await hub({});
    assert.equal('useStatefulReconnect' in (await negotiate(h, 'negotiateVersion=1&useStatefulReconnect=true')), false);
  });

  it('acknowledges what it handled about once a second, and nothing more', async () => {
    const h = await hub();
    const { client } = await statefulRaw(h);
    client.send(record(1) + record(2) + record(3));
    const started = Date.now();
    const [ack] = await readRecords(client, 1);
    assert.deepEqual(ack, { type: 8, sequenceId: 3 });
    assert.ok(Date.now() - started < 3000, 'within the ack interval and a tick (and a busy machine)');
    await assert.rejects(client.next(1500), /no frame/, 'no second ack without new messages');
  });

  it('on a reconnect sends Sequence and its unacknowledged messages, and handles the client\'s resent ones once', async () => {
    const h = await hub();
    const { client, id } = await statefulRaw(h);
    assert.equal(await invokeJoin(client, 'g'), true);
    client.send(record(1) + record(2));
    await waitUntil(() => h.recorded.length === 2, 'two records');
    await drop(h, client);
    h.server.sendToGroup('g', 'Message', 'while away');
    const back = await RawClient.connect(wsUrl(h, `id=${id}`));
    // The completion of Join (1) and the group message (2) were never acknowledged: both come again.
    assert.deepEqual(await readRecords(back, 3), [
      { type: 9, sequenceId: 1 },
      { type: 3, invocationId: 'j', result: true },
      { type: 1, target: 'Message', arguments: ['while away'] },
    ]);
    // Nothing before the client's Sequence counts; then messages 2 and 3 are resent (3 is new).
    back.send(record(99));
    back.send(`{"type":9,"sequenceId":2}${RS}` + record(1) + record(2) + record(3));
    await waitUntil(() => h.recorded.length === 3, 'the new record');
    await sleep(200);
    assert.deepEqual(h.recorded, [1, 2, 3]);
    assert.equal(h.server.stats().reconnects, 1);
    assert.equal(h.server.connectionCount(), 1, 'one connection, counted once, before and after the drop');
    // Still in its group, on the new socket.
    h.server.sendToGroup('g', 'Message', 'after');
    assert.deepEqual(await readRecords(back, 1, false), [{ type: 1, target: 'Message', arguments: ['after'] }]);
    assert.equal(h.closedIds.length, 0, 'the application never saw the connection close');
    // A clean close ends it once: no slot left behind, no second notice.
    back.ws.close(1000);
    await waitUntil(() => h.server.connectionCount() === 0, 'the connection to end');
    await sleep(100);
    assert.equal(h.closedIds.length, 1);
    assert.equal(h.server.stats().connectionsAwaitingReconnect, 0);
  });

  // The official client sends its next message only once an Ack has made room in its buffer: a
  // resent message the hub skips without acknowledging it again left such a send waiting for ever.
  it('acknowledges again the messages a reconnected client resends, whose ack it never got', async () => {
    const h = await hub();
    const { client, id } = await statefulRaw(h);
    client.send(record(1) + record(2));
    // This ack is lost with the socket, as on a link that died while the hub still wrote to it.
    assert.deepEqual(await readRecords(client, 1), [{ type: 8, sequenceId: 2 }]);
    await drop(h, client);
    const back = await RawClient.connect(wsUrl(h, `id=${id}`));
    assert.deepEqual(await readRecords(back, 1), [{ type: 9, sequenceId: 1 }]);
    back.send(`{"type":9,"sequenceId":1}${RS}` + record(1) + record(2));
    assert.deepEqual(await readRecords(back, 1), [{ type: 8, sequenceId: 2 }]);
    assert.deepEqual(h.recorded, [1, 2], 'handled once');
  });

  it('refuses a reconnect after the disconnect timeout: 404, and the connection has ended', async () => {
    const h = await hub({ statefulReconnect: { ...STATEFUL, disconnectTimeoutMs: 300 } });
    const { client, id } = await statefulRaw(h);
    await drop(h, client);
    assert.equal(h.server.stats().connectionsAwaitingReconnect, 1);
    assert.equal(h.server.connectionCount(), 1, 'a connection waiting for its client still counts');
    await waitUntil(() => h.server.connectionCount() === 0, 'the window to pass', 3000);
    assert.deepEqual(await upgrade(wsUrl(h, `id=${id}`)), { status: 404, body: 'No Connection with that ID' });
    assert.equal(h.server.stats().reconnectWindowsExpired, 1);
    assert.equal(h.closedIds.length, 1);
  });

  it('a second reconnect takes the place of the first one\'s socket, as in ASP.NET Core', async () => {
    const h = await hub();
    const { client, id } = await statefulRaw(h);
    await drop(h, client);
    const first = await RawClient.connect(wsUrl(h, `id=${id}`));
    assert.deepEqual(await readRecords(first, 1), [{ type: 9, sequenceId: 1 }]);
    const second = await RawClient.connect(wsUrl(h, `id=${id}`));
    assert.deepEqual(await readRecords(second, 1), [{ type: 9, sequenceId: 1 }]);
    await withTimeout(first.closed, 3000, 'the first socket to be ended');
    assert.equal(h.server.stats().reconnectsRefused, 0);
    assert.equal(h.server.connectionCount(), 1);
  });

  // ASP.NET Core holds nothing while a reconnect's token is checked (authentication runs before its
  // dispatcher): the reconnect that gets through last cancels the transport before it. It answered the
  // second of two reconnects racing 409 here, and the official client, which tries once, lost its buffer.
  it('two reconnects at once, the second sent while the first one\'s token is checked: both open, the later one stays', async () => {
    const h = await hub({
      statefulReconnect: STATEFUL,
      authenticate: async (token) => {
        await sleep(200);
        return token === undefined ? undefined : { sub: token };
      },
    });
    const { client, id } = await statefulRaw(h, 'alice');
    await drop(h, client);
    const url = wsUrl(h, `id=${id}&access_token=alice`);
    const firstOpening = RawClient.connect(url);
    await sleep(50);
    const second = await RawClient.connect(url);
    const first = await firstOpening;
    assert.deepEqual(await readRecords(second, 1), [{ type: 9, sequenceId: 1 }]);
    await withTimeout(first.closed, 3000, 'the first reconnect\'s socket to be ended');
    assert.deepEqual([h.server.stats().reconnects, h.server.stats().reconnectsRefused, h.server.connectionCount()], [2, 0, 1]);
    second.send(`{"type":9,"sequenceId":1}${RS}` + record(7));
    await waitUntil(() => h.recorded.length === 1, 'the later socket to carry the connection');
    assert.deepEqual(h.recorded, [7]);
  });

  it('refuses a reconnect with a token of another user (403), a bad token or none (401); the right one resumes', async () => {
    const h = await hub({
      statefulReconnect: STATEFUL,
      authenticate: (token) => {
        if (token === undefined) return undefined;
        if (token === 'bad') throw new HubError('bad token');
        return { sub: token };
      },
    });
    const { client, id } = await statefulRaw(h, 'alice');
    await drop(h, client);
    assert.deepEqual(await upgrade(wsUrl(h, `id=${id}&access_token=mallory`)), { status: 403, body: 'Forbidden' });
    assert.deepEqual(await upgrade(wsUrl(h, `id=${id}&access_token=bad`)), { status: 401, body: 'Unauthorized' });
    // No token at all, for a connection opened with one: not alice either.
    assert.deepEqual(await upgrade(wsUrl(h, `id=${id}`)), { status: 401, body: 'Unauthorized' });
    const back = await RawClient.connect(wsUrl(h, `id=${id}&access_token=alice`));
    assert.deepEqual(await readRecords(back, 1), [{ type: 9, sequenceId: 1 }]);
    assert.equal(h.server.stats().reconnectsRefused, 3);
  });

  it('refuses a reconnect after the client closed cleanly (a close frame ends the connection): 404', async () => {
    const h = await hub();
    const { client, id } = await statefulRaw(h);
    client.ws.close(1000);
    await client.closed;
    await waitUntil(() => h.server.connectionCount() === 0, 'the connection to end');
    assert.deepEqual(await upgrade(wsUrl(h, `id=${id}`)), { status: 404, body: 'No Connection with that ID' });
  });

  // A device whose radio reset reconnects at once, while its old socket still looks open here (nothing
  // reached the hub): with a 409 the official clients, which try a stateful reconnect once, lost what
  // they had buffered and started a new connection.
  it('lets a reconnect replace a socket the hub still thinks open, however recently it spoke', async () => {
    const h = await hub();
    const { client, id } = await statefulRaw(h);
    const back = await RawClient.connect(wsUrl(h, `id=${id}`));
    assert.deepEqual(await readRecords(back, 1), [{ type: 9, sequenceId: 1 }]);
    await withTimeout(client.closed, 3000, 'the old socket to be ended');
  });

  // Ended with a close handshake, each replaced socket stayed 12 to 16 s for a client that does not
  // answer it, counted in no connection limit: one connection token held any number of sockets.
  it('drops a socket a reconnect replaced at once, even from a client that never answers a close', async () => {
    const h = await hub();
    const { id } = await statefulRaw(h);
    const descriptors = (): number => readdirSync('/proc/self/fd').length;
    const before = descriptors();
    const sockets: Socket[] = [];
    for (let i = 0; i < 20; i++) {
      const socket = await upgradeSocket(wsUrl(h, `id=${id}`).replace('ws:', 'http:'));
      socket.on('error', () => {});
      sockets.push(socket);
    }
    await sleep(300);
    // The test's 20 client ends, and the hub's end of the last one; none left for the 19 replaced.
    assert.ok(descriptors() - before <= 21 + 2, `${descriptors() - before} descriptors more for 20 client sockets`);
    assert.equal(h.server.connectionCount(), 1);
    assert.equal(h.server.stats().reconnects, 20);
    sockets.forEach((socket) => socket.destroy());
  });

  it('a client that did the version 1 handshake gets no stateful reconnect: 409 while open, 404 after', async () => {
    const h = await hub();
    const n = await negotiate(h, 'negotiateVersion=1&useStatefulReconnect=true');
    const id = n.connectionToken as string;
    const client = await RawClient.connect(wsUrl(h, `id=${id}`));
    client.send(`{"protocol":"json","version":1}${RS}`);
    await client.next();
    assert.deepEqual(await upgrade(wsUrl(h, `id=${id}`)), { status: 409, body: 'Connection ID already in use' });
    client.ws.terminate();
    await waitUntil(() => h.server.connectionCount() === 0, 'the connection to end');
    assert.deepEqual(await upgrade(wsUrl(h, `id=${id}`)), { status: 404, body: 'No Connection with that ID' });
  });
});

/** Invokes Join(group) with invocation id 'j' and returns its result. */
async function invokeJoin(client: RawClient, group: string): Promise<unknown> {
  client.send(`{"type":1,"invocationId":"j","target":"Join","arguments":["${group}"]}${RS}`);
  const [completion] = await readRecords(client, 1);
  return (completion as { result: unknown }).result;
}

describe('stateful reconnect back-pressure', () => {
  it('holds messages back while its buffer is full, lets them out on an ack, and ends a connection that overflows what it may hold', async () => {
    const lines: string[] = [];
    const h = await startHub({
      statefulReconnect: { bufferSize: 1000, disconnectTimeoutMs: 5000 },
      maxBufferedBytes: 4096,
      logger: createLogger({ levels: { Default: 'Warning' }, write: (line) => lines.push(line) }),
    });
    try {
      const { client, id } = await statefulRaw(h);
      // Five messages of about 340 bytes: three fill the 1000 bytes, two wait (the completion, a sixth, too).
      client.send(`{"type":1,"invocationId":"f","target":"Flood","arguments":[5,300]}${RS}`);
      const first = await readRecords(client, 3, false);
      assert.deepEqual(first.map((r) => (r as { target: string }).target), ['Flood', 'Flood', 'Flood']);
      await assert.rejects(readRecords(client, 1, false), /no frame/, 'nothing more before an ack');
      client.send(`{"type":8,"sequenceId":3}${RS}`);
      const rest = await readRecords(client, 3, false);
      assert.deepEqual(rest.map((r) => (r as { type: number }).type), [1, 1, 3], 'the two held messages, then the completion');
      // Twenty more, never acknowledged: past 1000 bytes in flight and 4096 held back, the connection ends.
      client.send(`{"type":1,"target":"Flood","arguments":[20,300]}${RS}`);
      const seen: unknown[] = [];
      while (!seen.some((r) => (r as { type: number }).type === 7)) seen.push(...(await readRecords(client, 1, false)));
      assert.ok(seen.length < 20, `only what fitted went out (${seen.length} messages)`);
      assert.deepEqual(seen.slice(-1), [{ type: 7, error: 'Server closed the connection: client too slow to receive messages.', allowReconnect: true }]);
      await withTimeout(client.closed, 3000, 'the socket to close');
      assert.equal(h.server.stats().replayOverflows, 1);
      assert.equal(lines.filter((l) => l.includes('held back')).length, 1);
      assert.deepEqual(await upgrade(wsUrl(h, `id=${id}`)), { status: 404, body: 'No Connection with that ID' });
    } finally {
      h.stop();
    }
  });
  // ASP.NET's MessageBuffer waits only while more than its limit is unacknowledged (`_bufferedByteCount >
  // _bufferLimit`), and a waiting message goes once an ack leaves less: the limit itself held the next
  // message back here, one message short of what ASP.NET Core sends.
  it('sends while no more than the buffer size waits, and lets a held message out once an ack leaves less', async () => {
    const flood = `{"type":1,"target":"Flood","arguments":["${'x'.repeat(300)}"]}${RS}`;
    const h = await startHub({ statefulReconnect: { bufferSize: 2 * Buffer.byteLength(flood), disconnectTimeoutMs: 5000 } });
    try {
      const { client } = await statefulRaw(h);
      client.send(`{"type":1,"invocationId":"f","target":"Flood","arguments":[3,300]}${RS}`);
      // Two messages make the limit: the third still goes; then more than the limit waits, and the completion with it.
      const sent = await readRecords(client, 3, false);
      assert.deepEqual(sent.map((r) => (r as { target: string }).target), ['Flood', 'Flood', 'Flood']);
      await assert.rejects(readRecords(client, 1, false), /no frame/, 'the completion waits for an ack');
      client.send(`{"type":8,"sequenceId":1}${RS}`);
      await assert.rejects(readRecords(client, 1, false), /no frame/, 'the limit itself is left unacknowledged: it still waits');
      client.send(`{"type":8,"sequenceId":2}${RS}`);
      assert.deepEqual(await readRecords(client, 1, false), [{ type: 3, invocationId: 'f', result: null }]);
    } finally {
      h.stop();
    }
  });
});

// A replay is written at once: with Hub.StatefulReconnectBufferSize over the slow-client bound (1 MiB;
// the setting goes to 16 MiB) the transport held more than that bound right after the reconnect, and
// the hub ended the connection as too slow, so the client lost all it had not acknowledged.
describe('a replay larger than the slow-client bound', () => {
  it('reaches a client that reads, whole and in order, and the connection stays', async () => {
    const h = await startHub({ statefulReconnect: { bufferSize: 16 * 1024 * 1024, disconnectTimeoutMs: 5000 } });
    try {
      const { client, id } = await statefulRaw(h);
      let received = 0;
      client.ws.on('message', (data: Buffer) => {
        received += records(data).length;
      });
      // 80 messages of 100 kB, a megabyte at a time (read as they come), never acknowledged: all of them are replayed.
      // The wait is long: on a machine loaded by other test runs a megabyte took over 5 s to arrive.
      for (let i = 1; i <= 8; i++) {
        client.send(`{"type":1,"target":"Flood","arguments":[10,100000]}${RS}`);
        await waitUntil(() => received === 10 * i, 'the flood', 20_000);
      }
      await drop(h, client);
      const back = await RawClient.connect(wsUrl(h, `id=${id}`));
      const replayed = await readRecords(back, 81);
      assert.deepEqual(replayed[0], { type: 9, sequenceId: 1 });
      assert.deepEqual(new Set(replayed.slice(1).map((r) => (r as { target?: string }).target)), new Set(['Flood']), 'the 80 messages, nothing else');
      await sleep(1500);
      assert.equal(back.ws.readyState, WebSocket.OPEN);
      assert.equal(h.server.stats().slowClientsClosed, 0);
      assert.equal(h.server.connectionCount(), 1);
    } finally {
      h.stop();
    }
  });
});
