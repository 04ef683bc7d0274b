// The hub driven by the official @microsoft/signalr client (JSON and MessagePack, with negotiation
// and with skipNegotiation): results, ASP.NET error texts, groups across protocols, ordering,
// message size limits, keep-alive pings, authentication and shutdown.
import type { HubConnection as ClientConnection } from '@microsoft/signalr';
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { closedWith, connectClient, startHub, type ClientOptions, type TestHub } from './helpers.js';
import { sleep, waitUntil, withTimeout } from '../support/wait.js';

const variants: ClientOptions[] = [
  { protocol: 'json' },
  { protocol: 'json', skipNegotiation: true },
  { protocol: 'messagepack' },
  { protocol: 'messagepack', skipNegotiation: true },
];
const label = (v: ClientOptions): string => `${v.protocol}${v.skipNegotiation ? ', skipNegotiation' : ', negotiated'}`;

/** Resolves with the arguments of the next `name` event on `connection`. */
function nextEvent(connection: ClientConnection, name: string, ms = 3000): Promise<unknown[]> {
  return withTimeout(
    new Promise<unknown[]>((resolve) => {
      const handler = (...args: unknown[]): void => {
        connection.off(name, handler);
        resolve(args);
      };
      connection.on(name, handler);
    }),
    ms,
    `event ${name}`,
  );
}

describe('official client', () => {
  let hub: TestHub;
  const clients: ClientConnection[] = [];
  const connect = async (opts: ClientOptions): Promise<ClientConnection> => {
    const c = await connectClient(hub.url, opts);
    clients.push(c);
    return c;
  };
  before(async () => {
    hub = await startHub({
      authenticate: (token) => {
        if (token === 'bad') throw new Error('invalid token');
        return token ? { name: token } : undefined;
      },
    });
  });
  after(async () => {
    await Promise.all(clients.map((c) => c.stop().catch(() => undefined)));
    hub.stop();
  });

  for (const variant of variants) {
    describe(label(variant), () => {
      it('invokes and gets results, case-insensitively', async () => {
        const c = await connect(variant);
        assert.equal(await c.invoke('Add', 2, 40), 42);
        assert.equal(await c.invoke('add', 1, 1), 2);
        assert.deepEqual(await c.invoke('Echo', { nested: [1, 'two', null, true] }), { nested: [1, 'two', null, true] });
        assert.equal(await c.invoke('Nothing'), null);
        assert.equal(await c.invoke('Protocol'), variant.protocol);
      });

      it('gets ASP.NET error texts', async () => {
        const c = await connect(variant);
        const cases: [string, unknown[], string][] = [
          ['Fail', [], "An unexpected error occurred invoking 'Fail' on the server. HubException: nope"],
          ['Crash', [], "An unexpected error occurred invoking 'Crash' on the server."],
          ['Missing', [1], "Failed to invoke 'Missing' due to an error on the server. HubException: Method does not exist."],
          ['Add', [1], "Failed to invoke 'Add' due to an error on the server."],
        ];
        for (const [method, args, message] of cases) {
          await assert.rejects(c.invoke(method, ...args), (e: Error) => e.message === message);
        }
        assert.equal(await c.invoke('Add', 1, 2), 3, 'errors do not break the connection');
      });

      it('runs one invocation at a time, in order, also for sends', async () => {
        const c = await connect(variant);
        const tag = `${label(variant)}:`;
        await c.send('Slow', 100, `${tag}a`);
        await c.send('Record', `${tag}b`);
        assert.equal(await c.invoke('Echo', 'sync'), 'sync');
        const mine = hub.recorded.filter((x) => typeof x === 'string' && x.startsWith(tag));
        assert.deepEqual(mine, [`${tag}a`, `${tag}b`]);
      });

      it('sends to the caller', async () => {
        const c = await connect(variant);
        const event = nextEvent(c, 'Notice');
        await c.invoke('Notify', 'hello');
        assert.deepEqual(await event, ['hello']);
      });

      it('delivers a group message to every member, not to others', async () => {
        const group = `room-${label(variant)}`;
        const [a, b, outsider] = [await connect(variant), await connect(variant), await connect(variant)];
        let outsiderGot = 0;
        outsider.on('Message', () => outsiderGot++);
        assert.equal(await a.invoke('Join', group), true);
        assert.equal(await a.invoke('Join', group), true, 'joining twice is harmless');
        await b.invoke('Join', group);
        const [atA, atB] = [nextEvent(a, 'Message'), nextEvent(b, 'Message')];
        await a.invoke('Broadcast', group, 'hi');
        assert.deepEqual(await atA, ['hi'], 'the sender is a member too');
        assert.deepEqual(await atB, ['hi']);
        // A round trip on the outsider orders after any group delivery to it.
        await outsider.invoke('Echo', 1);
        assert.equal(outsiderGot, 0);

        let aGot = 0;
        a.on('Message', () => aGot++);
        assert.equal(await a.invoke('Leave', group), false);
        const atB2 = nextEvent(b, 'Message');
        await b.invoke('Broadcast', group, 'again');
        assert.deepEqual(await atB2, ['again']);
        await a.invoke('Echo', 1);
        assert.equal(aGot, 0, 'a left the group');
      });

      it('a message over MaximumReceiveMessageSize closes the connection with an error', async () => {
        const c = await connect(variant);
        const closed = closedWith(c);
        await assert.rejects(c.invoke('Echo', 'x'.repeat(40_000)));
        const error = await withTimeout(closed, 3000, 'close');
        assert.equal(error?.message, 'Server returned an error on close: Connection closed with an error.');
      });

      it('200 batched small invocations over the limit in total all work (an authenticated client)', async () => {
        const c = await connect({ ...variant, accessToken: 'alice' });
        const payload = 'y'.repeat(1000);
        const results = await withTimeout(Promise.all(Array.from({ length: 200 }, (_, i) => c.invoke('Echo', `${i}:${payload}`))), 10_000, 'batch');
        assert.equal(results.length, 200);
        assert.ok(results.every((r, i) => r === `${i}:${payload}`));
      });

      it('an unauthenticated client over its message budget is closed and told why', async () => {
        const c = await connect(variant);
        const closed = new Promise<Error | undefined>((resolve) => c.onclose(resolve));
        const calls = Array.from({ length: 200 }, (_, i) => c.invoke('Echo', i).catch(() => 'failed'));
        const error = await withTimeout(closed, 5000, 'close');
        assert.equal(error?.message, 'Server returned an error on close: Server closed the connection: too many messages (more than 64 at once or 10 per second, a message counting once per 4 KiB begun).');
        // The budget counts every message (the client's own pings too): what fits is served, in order.
        const results = await Promise.all(calls);
        const served = results.findIndex((r) => r === 'failed');
        assert.ok(served >= 60 && served <= 64, `${served} served`);
        assert.deepEqual(results.slice(0, served), Array.from({ length: served }, (_, i) => i));
        assert.ok(results.slice(served).every((r) => r === 'failed'));
      });

      it('passes the user from the access token', async () => {
        const c = await connect({ ...variant, accessToken: 'alice' });
        assert.deepEqual(await c.invoke('Whoami'), { name: 'alice' });
        const anonymous = await connect(variant);
        assert.equal(await anonymous.invoke('Whoami'), null);
      });

      it('is refused with a bad token', async () => {
        await assert.rejects(connectClient(hub.url, { ...variant, accessToken: 'bad' }));
      });
    });
  }

  it('a JSON and a MessagePack client in one group both receive a broadcast', async () => {
    const json = await connect({ protocol: 'json' });
    const mp = await connect({ protocol: 'messagepack', skipNegotiation: true });
    await json.invoke('Join', 'mixed');
    await mp.invoke('Join', 'mixed');
    for (const sender of [json, mp]) {
      const got = [nextEvent(json, 'Message'), nextEvent(mp, 'Message')];
      await sender.invoke('Broadcast', 'mixed', { text: 'to all', n: 7 });
      assert.deepEqual(await Promise.all(got), [[{ text: 'to all', n: 7 }], [{ text: 'to all', n: 7 }]]);
    }
    // The application can do the same from outside a hub method.
    const got = [nextEvent(json, 'Message'), nextEvent(mp, 'Message')];
    hub.server.sendToGroup('mixed', 'Message', 'from the app');
    assert.deepEqual(await Promise.all(got), [['from the app'], ['from the app']]);
  });

  it('binary arguments arrive as bytes over MessagePack', async () => {
    const c = await connect({ protocol: 'messagepack' });
    assert.equal(await c.invoke('BytesInfo', new Uint8Array([1, 2, 3, 4, 5])), 'bytes:5');
  });

  it('group membership does not survive a reconnect', async () => {
    const first = await connect({ protocol: 'json' });
    await first.invoke('Join', 'ephemeral');
    await first.stop();
    const second = await connect({ protocol: 'json' });
    let got = 0;
    second.on('Message', () => got++);
    hub.server.sendToGroup('ephemeral', 'Message', 'x');
    await second.invoke('Echo', 1);
    assert.equal(got, 0);
  });

  it('connects with negotiate version 0 (connectionId as id)', async () => {
    const c = await connectClient(`${hub.url}?negotiateVersion=0`, { protocol: 'json' });
    clients.push(c);
    assert.equal(await c.invoke('Add', 1, 2), 3);
    assert.ok(c.connectionId);
  });

  it('sendToConnection reaches one client; closing reports its id', async () => {
    const c = await connect({ protocol: 'messagepack' });
    const id = c.connectionId;
    assert.ok(id);
    const event = nextEvent(c, 'Direct');
    assert.equal(hub.server.sendToConnection(id, 'Direct', 1, 'two'), true);
    assert.deepEqual(await event, [1, 'two']);
    await c.stop();
    await waitUntil(() => hub.closedIds.includes(id), 'onConnectionClosed', 3000);
    assert.equal(hub.server.sendToConnection(id, 'Direct'), false);
  });
});

describe('keep-alive', () => {
  it('server pings keep an idle client past its server timeout', async () => {
    const hub = await startHub({ keepAliveIntervalMs: 150 });
    try {
      const c = await connectClient(hub.url, { protocol: 'json', serverTimeoutMs: 600, keepAliveMs: 300 });
      let closed = false;
      c.onclose(() => (closed = true));
      await sleep(1500);
      assert.equal(closed, false);
      assert.equal(await c.invoke('Add', 1, 1), 2);
      await c.stop();
    } finally {
      hub.stop();
    }
  });

  it('without pings the same client times out (the check above can fail)', async () => {
    const hub = await startHub({ keepAliveIntervalMs: 60_000 });
    try {
      const c = await connectClient(hub.url, { protocol: 'json', serverTimeoutMs: 600, keepAliveMs: 300 });
      const error = await withTimeout(closedWith(c), 5000, 'client timeout');
      assert.match(error?.message ?? '', /Server timeout elapsed/);
    } finally {
      hub.stop();
    }
  });
});

describe('shutdown', () => {
  it('closeAll with allowReconnect makes clients reconnect; without, they stop with the error', async () => {
    const hub = await startHub();
    try {
      const { HubConnectionBuilder, LogLevel } = await import('@microsoft/signalr');
      const c = new HubConnectionBuilder().withUrl(hub.url).withAutomaticReconnect([0, 100, 100]).configureLogging(LogLevel.None).build();
      await withTimeout(c.start(), 5000, 'start');
      const reconnecting = new Promise<Error | undefined>((resolve) => c.onreconnecting(resolve));
      const reconnected = new Promise<void>((resolve) => c.onreconnected(() => resolve()));
      hub.server.closeAll({ error: 'restarting', allowReconnect: true });
      assert.equal((await withTimeout(reconnecting, 3000, 'reconnecting'))?.message, 'Server returned an error on close: restarting');
      await withTimeout(reconnected, 5000, 'reconnected');
      assert.equal(await c.invoke('Add', 2, 2), 4);

      const closed = closedWith(c);
      hub.server.closeAll({ error: 'token revoked', allowReconnect: false });
      assert.equal((await withTimeout(closed, 3000, 'closed'))?.message, 'Server returned an error on close: token revoked');
      assert.equal(c.state, 'Disconnected');
    } finally {
      hub.stop();
    }
  });
});
