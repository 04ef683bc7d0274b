// The message budget of a client address (Hub.UnauthenticatedAddressMessageRate/Burst): what the
// connections of one address send before they authenticated is charged to a bucket they share and
// that outlives them, so a client that reconnects does not get a fresh burst each time; authenticated
// traffic is never charged to it. And pending negotiations per address (Hub.MaximumConnectionsPerAddress):
// one address cannot evict everyone else's negotiations by negotiating without end.
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { after, describe, it } from 'node:test';
import { HubWire, jsonFrame } from '../hardening/hub-wire.js';
import { RawClient, rawMessages, shippedBudgets, startHub, type TestHub } from './helpers.js';
import { AddressBudgets } from '../../src/hub/address-budgets.js';
import { startService } from '../support/service.js';
import { waitUntil, withTimeout } from '../support/wait.js';

/** A small address budget that does not refill within a test: 10 messages, then none. */
const ADDRESS_BUDGET = { perSecond: 0.001, burst: 10 };
const CLOSED_FOR_ADDRESS = 'Server closed the connection: too many messages (more than 10 at once or 0.001 per second, a message counting once per 4 KiB begun).';

const addressHub = (options: Parameters<typeof startHub>[0] = {}): Promise<TestHub> =>
  startHub({ budgets: { ...shippedBudgets.budgets, unauthenticatedPerAddress: ADDRESS_BUDGET }, ...options });

const base = (hub: TestHub): string => `http://127.0.0.1:${hub.port}`;

/** `count` Record invocations, then waits until the hub has them all or the socket closed; the Close messages it got. */
async function record(wire: HubWire, hub: TestHub, count: number, tag: string): Promise<unknown[]> {
  for (let i = 0; i < count; i++) wire.send('Record', [`${tag}${i}`]);
  await withTimeout((async () => {
    while (wire.open && hub.recorded.filter((r) => String(r).startsWith(tag)).length < count) await new Promise((r) => setTimeout(r, 5));
  })(), 5000, 'the records');
  return wire.messages.filter((m) => m.type === 7);
}

describe('anonymous connections of one address share a budget that reconnecting does not renew', () => {
  it('connections that each spend part of it are closed once the address has spent it all, as the connection budget closes one', async (t) => {
    const hub = await addressHub();
    t.after(() => hub.stop());
    // 4 + 4 of the 10, each connection well within its own budget of 64.
    for (const tag of ['a', 'b']) {
      const wire = await HubWire.connect(base(hub));
      assert.deepEqual(await record(wire, hub, 4, tag), []);
      wire.ws.close();
      await wire.closed;
    }
    const third = await HubWire.connect(base(hub));
    for (let i = 0; i < 4; i++) third.send('Record', [`c${i}`]);
    const closed = await withTimeout(third.closed, 5000, 'close');
    assert.equal(closed.code, 1000);
    assert.deepEqual(third.messages.filter((m) => m.type === 7), [{ type: 7, error: CLOSED_FOR_ADDRESS, allowReconnect: true }]);
    assert.deepEqual(hub.recorded, ['a0', 'a1', 'a2', 'a3', 'b0', 'b1', 'b2', 'b3', 'c0', 'c1']);
    assert.equal(hub.server.stats().rateLimited, 1);
    // Reconnecting gets nothing more: the first message closes the next connection.
    const fourth = await HubWire.connect(base(hub));
    fourth.send('Record', ['d0']);
    await withTimeout(fourth.closed, 5000, 'close');
    assert.deepEqual(fourth.messages.filter((m) => m.type === 7).map((m) => m.error), [CLOSED_FOR_ADDRESS]);
    assert.deepEqual(hub.recorded.slice(10), []);
    // Another address has its own budget.
    const other = await RawClient.connect(hub.url, {}, '127.0.0.2');
    await other.handshake();
    other.send(`${jsonFrame({ type: 1, invocationId: 'e', target: 'Echo', arguments: [1] })}`);
    assert.deepEqual(rawMessages('json', await other.next()), [{ type: 3, invocationId: 'e', result: 1 }]);
    other.ws.close();
  });

  it('a connection with a token, and one that has joined a group, are not charged to it', async (t) => {
    const hub = await addressHub({ authenticate: async (token) => token });
    t.after(() => hub.stop());
    const withToken = await RawClient.connect(hub.url, { Authorization: 'Bearer device' });
    await withToken.handshake();
    withToken.send(Array.from({ length: 30 }, (_, i) => jsonFrame({ type: 1, target: 'Record', arguments: [`t${i}`] })).join(''));
    withToken.send(jsonFrame({ type: 1, invocationId: 'e', target: 'Echo', arguments: [1] }));
    assert.deepEqual(rawMessages('json', await withToken.next()), [{ type: 3, invocationId: 'e', result: 1 }]);
    withToken.ws.close();
    // Joining costs its one anonymous message; what follows is the authenticated connection's.
    const joined = await HubWire.connect(base(hub));
    assert.equal((await joined.invoke('Join', ['g'])).result, true);
    assert.deepEqual(await record(joined, hub, 30, 'j'), []);
    joined.ws.close();
    // 9 of the address's 10 are left: the 10th message after them closes.
    const anonymous = await HubWire.connect(base(hub));
    assert.deepEqual(await record(anonymous, hub, 9, 'n'), []);
    anonymous.send('Record', ['over']);
    await withTimeout(anonymous.closed, 5000, 'close');
    assert.deepEqual(anonymous.messages.filter((m) => m.type === 7).map((m) => m.error), [CLOSED_FOR_ADDRESS]);
    assert.equal(hub.recorded.filter((r) => String(r).startsWith('t')).length, 30);
    assert.equal(hub.recorded.includes('over'), false);
  });

  it('with the shipped budget, 500 devices connecting at once from one address all join', async (t) => {
    const hub = await startHub();
    t.after(() => hub.stop());
    const devices = await Promise.all(Array.from({ length: 500 }, () => HubWire.connect(base(hub))));
    const joins = await Promise.all(devices.map((d) => d.invoke('Join', ['g'], 10_000)));
    assert.deepEqual(new Set(joins.map((j) => j.result)), new Set([true]));
    assert.equal(hub.server.stats().rateLimited, 0);
    for (const d of devices) d.ws.close();
  });

  it('the service takes it from its configuration and logs whose budget it was', async () => {
    const service = await startService({ flags: { 'Hub.UnauthenticatedAddressMessageBurst': 3, 'Hub.UnauthenticatedAddressMessageRate': 1 } });
    after(() => service.stop());
    const first = await HubWire.connect(service.url);
    for (let i = 0; i < 3; i++) first.sendRaw('{"type":6}\u001e');
    first.ws.close();
    await first.closed;
    const second = await HubWire.connect(service.url);
    second.sendRaw('{"type":6}\u001e');
    await withTimeout(second.closed, 5000, 'close');
    assert.deepEqual(second.messages.filter((m) => m.type === 7), [{
      type: 7,
      error: 'Server closed the connection: too many messages (more than 3 at once or 1 per second, a message counting once per 4 KiB begun).',
      allowReconnect: true,
    }]);
    await waitUntil(() => service.logs.some((l) => l.includes('unauthenticated message budget of its address')), 'the warning');
    assert.match(service.logs.find((l) => l.includes('unauthenticated message budget of its address'))!,
      /warn: Hub: \S+: closing: over the unauthenticated message budget of its address 127\.0\.0\.1 \(3 at once, 1 per second, a message counting once per 4 KiB begun\)$/);
  });
});

describe('address budgets are bounded in memory', () => {
  const budget = { perSecond: 10, burst: 20 };

  it('a bucket that has refilled is dropped: idle addresses cost nothing', () => {
    const budgets = new AddressBudgets(budget, 100);
    for (let i = 0; i < 50; i++) assert.equal(budgets.take(`10.0.0.${i}`, 0, 5), true);
    assert.equal(budgets.size, 50);
    // 5 tokens come back in 500 ms.
    assert.equal(budgets.sweep(499), 50);
    assert.equal(budgets.sweep(500), 0);
    assert.equal(budgets.size, 0);
  });

  it('never holds more than its bound: full buckets go first, then the least recently used', () => {
    const budgets = new AddressBudgets(budget, 3);
    budgets.take('a', 0, 20);
    budgets.take('b', 0, 1);
    budgets.take('c', 0, 20);
    budgets.take('a', 50, 0);
    // At 100 ms, b has refilled: it makes room.
    budgets.take('d', 100, 20);
    assert.equal(budgets.size, 3);
    assert.equal(budgets.take('a', 100, 2), false, 'a is still spent (refilled 1 of 20)');
    // None is full now: c, used the longest ago, starts afresh.
    for (let i = 0; i < 1000; i++) budgets.take(`x${i}`, 200, 20);
    assert.equal(budgets.size, 3);
  });

  it('spent and refilled over and over, an address takes exactly its rate', () => {
    const budgets = new AddressBudgets(budget, 10);
    let taken = 0;
    for (let ms = 0; ms <= 10_000; ms += 10) if (budgets.take('a', ms, 1)) taken++;
    // The burst of 20, then 10 a second for 10 s.
    assert.equal(taken, 120);
  });

  it('without a budget nothing is kept', () => {
    const budgets = new AddressBudgets(undefined, 10);
    for (let i = 0; i < 100; i++) assert.equal(budgets.take(`a${i}`, 0, 1000), true);
    assert.equal(budgets.size, 0);
  });
});

interface Answer { status: number; retryAfter: string | undefined; body: string; connectionToken?: string }

/** POST negotiate from `localAddress`. */
function negotiate(hub: TestHub, localAddress = '127.0.0.1'): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port: hub.port, path: '/voice-hub/negotiate?negotiateVersion=1', method: 'POST', localAddress }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (body += d));
      res.on('end', () => {
        const answer: Answer = { status: res.statusCode ?? 0, retryAfter: res.headers['retry-after'], body };
        if (answer.status === 200) resolve({ ...answer, body: '', connectionToken: (JSON.parse(body) as { connectionToken: string }).connectionToken });
        else resolve(answer);
      });
    });
    req.on('error', reject);
    req.end();
  });
}

describe('an address holds at most Hub.MaximumConnectionsPerAddress pending negotiations', () => {
  it('past it negotiate is answered as an upgrade past it is (429, Retry-After); other addresses, and the negotiations kept, are unaffected', async (t) => {
    const hub = await startHub({ maximumConnectionsPerAddress: 3 });
    t.after(() => hub.stop());
    const mine = [await negotiate(hub), await negotiate(hub), await negotiate(hub)];
    assert.deepEqual(mine.map((a) => a.status), [200, 200, 200]);
    assert.deepEqual(await negotiate(hub), { status: 429, retryAfter: '5', body: 'Too many connections from this address' });
    assert.deepEqual(await negotiate(hub), { status: 429, retryAfter: '5', body: 'Too many connections from this address' });
    const other = await negotiate(hub, '127.0.0.2');
    assert.equal(other.status, 200);
    assert.equal(hub.server.stats().pendingNegotiations, 4);
    assert.equal(hub.server.stats().negotiationsRefusedPerAddress, 2);
    // Each negotiation is still there to be taken; one taken frees a place for another negotiation.
    const taken = await RawClient.connect(`${hub.url}?id=${mine[0]!.connectionToken!}`);
    assert.equal((await negotiate(hub)).status, 200);
    const later = await Promise.all([mine[1], mine[2]].map((a) => RawClient.connect(`${hub.url}?id=${a!.connectionToken!}`)));
    const theirs = await RawClient.connect(`${hub.url}?id=${other.connectionToken!}`, {}, '127.0.0.2');
    for (const c of [taken, ...later, theirs]) c.ws.close();
  });

  it('one address negotiating without end no longer evicts another\'s negotiation', async (t) => {
    const hub = await startHub({ maximumConnectionsPerAddress: 5, maxPendingNegotiations: 20 });
    t.after(() => hub.stop());
    const slow = await negotiate(hub, '127.0.0.2');
    const answers = await Promise.all(Array.from({ length: 40 }, () => negotiate(hub)));
    assert.equal(answers.filter((a) => a.status === 200).length, 5);
    const device = await RawClient.connect(`${hub.url}?id=${slow.connectionToken!}`, {}, '127.0.0.2');
    device.ws.close();
  });
});
