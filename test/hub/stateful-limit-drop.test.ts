// A stateful connection survives only what the network does to its socket. When uWS ends the socket for
// what the client sent (a frame over the frame limit, invalid UTF-8 in a text frame) the connection ends
// for good: its reconnect is refused as any ended connection's, and the official client, which would
// replay the offending frame on every reconnect, stops with an error instead of looping. A TCP reset or
// end of stream without a close frame still leaves it resumable, Sequence and replay as before.
import assert from 'node:assert/strict';
import type { Socket } from 'node:net';
import { after, describe, it } from 'node:test';
import { HubConnectionBuilder, HubConnectionState, LogLevel, type HubConnection } from '@microsoft/signalr';
import WebSocket from 'ws';
import { createLogger } from '../../src/log/logger.js';
import { waitUntil, withTimeout } from '../support/wait.js';
import { RawClient, upgrade, shippedBudgets, startHub, type TestHub } from './helpers.js';

const RS = '\u001e';
const STATEFUL = { bufferSize: 100_000, disconnectTimeoutMs: 5000 };
const ENDED = { status: 404, body: 'No Connection with that ID' };


const wsUrl = (hub: TestHub, id: string): string => `ws://127.0.0.1:${hub.port}/voice-hub?id=${id}`;

/** WebSockets the hub took: new connections and resumed ones. */
const accepted = (hub: TestHub): number => {
  const stats = hub.server.stats();
  return (stats.connectionsOpened ?? 0) + (stats.reconnects ?? 0);
};

/** JSON records of a raw frame. */
const records = (data: Buffer): unknown[] => data.toString().split(RS).filter(Boolean).map((t) => JSON.parse(t));

/** A raw client that negotiated stateful reconnect and did the version 2 handshake. */
async function statefulRaw(hub: TestHub): Promise<{ client: RawClient; id: string; connectionId: string }> {
  const res = await fetch(`${hub.url}/negotiate?negotiateVersion=1&useStatefulReconnect=true`, { method: 'POST' });
  const n = (await res.json()) as { connectionToken: string; connectionId: string; useStatefulReconnect: boolean };
  assert.equal(n.useStatefulReconnect, true);
  const client = await RawClient.connect(wsUrl(hub, n.connectionToken));
  client.send(`{"protocol":"json","version":2}${RS}`);
  assert.equal((await client.next()).data.toString(), `{}${RS}`);
  return { client, id: n.connectionToken, connectionId: n.connectionId };
}

/** The client's TCP socket, for ending it the way a network does, without a close frame. */
const tcp = (client: RawClient): Socket => (client.ws as unknown as { _socket: Socket })._socket;

describe('stateful connections and what ends them for good', () => {
  const hubs: TestHub[] = [];
  after(() => hubs.forEach((h) => h.stop()));
  const hub = async (lines: string[] = []): Promise<TestHub> => {
    const h = await startHub({
      statefulReconnect: STATEFUL,
      logger: createLogger({ levels: { Default: 'Information' }, timestamps: false, write: (line) => lines.push(line) }),
    });
    hubs.push(h);
    return h;
  };

  it('the official client that sends a frame over the limit is closed with an error after one refused reconnect, not looped', async () => {
    const lines: string[] = [];
    const h = await hub(lines);
    const clientLog: string[] = [];
    const client: HubConnection = new HubConnectionBuilder()
      .withUrl(h.url)
      .withStatefulReconnect()
      .configureLogging({ log: (level, message) => void (level >= LogLevel.Information && clientLog.push(message)) })
      .build();
    try {
      await withTimeout(client.start(), 5000, 'client start');
      const token = /[?&]id=([^&\s]+?)\.?$/.exec(clientLog.find((l) => l.startsWith('WebSocket connected to')) ?? '')?.[1];
      assert.ok(token, clientLog.join('\n'));
      const connectionId = client.connectionId;
      const closed = new Promise<Error | undefined>((resolve) => client.onclose(resolve));
      void client.send('Record', 'x'.repeat(shippedBudgets.maximumFrameSize)).catch(() => undefined);
      const error = await withTimeout(closed, 5000, 'the client to close');
      assert.equal(error?.message, 'WebSocket closed with status code: 1006 (no reason given).');
      assert.equal(client.state, HubConnectionState.Disconnected);
      const stats = h.server.stats();
      assert.equal(accepted(h), 1, 'the first WebSocket only: the reconnect was refused');
      assert.deepEqual(
        [stats.upgradesRejected, stats.framesTooLarge, stats.disconnects, stats.connections, stats.connectionsAwaitingReconnect],
        [1, 1, 0, 0, 0],
        'one reconnect tried and refused, one frame too large, nothing kept',
      );
      assert.deepEqual(h.closedIds, [connectionId]);
      assert.deepEqual(await upgrade(wsUrl(h, token)), ENDED);
      assert.deepEqual(h.recorded, []);
      assert.deepEqual(lines, [
        `info: App: ${connectionId}: closed by the WebSocket layer for what the client sent (a frame over ${shippedBudgets.maximumFrameSize} bytes): the connection ends`,
      ]);
    } finally {
      await client.stop();
    }
  });

  for (const how of ['end of stream', 'TCP reset'] as const) {
    it(`a ${how} without a close frame leaves it resumable: Sequence, then what was not acknowledged`, async () => {
      const h = await hub();
      const { client, id } = await statefulRaw(h);
      client.send(`{"type":1,"invocationId":"j","target":"Join","arguments":["g"]}${RS}`);
      assert.deepEqual(records((await client.next()).data), [{ type: 3, invocationId: 'j', result: true }]);
      if (how === 'end of stream') tcp(client).destroy();
      else tcp(client).resetAndDestroy();
      await waitUntil(() => h.server.stats().disconnects === 1, 'the hub to see the drop', 3000);
      assert.equal(h.server.stats().connectionsAwaitingReconnect, 1);
      h.server.sendToGroup('g', 'Message', 'while away');
      const back = await RawClient.connect(wsUrl(h, id));
      const got: unknown[] = [];
      while (got.length < 3) got.push(...records((await back.next()).data));
      assert.deepEqual(got, [
        { type: 9, sequenceId: 1 },
        { type: 3, invocationId: 'j', result: true },
        { type: 1, target: 'Message', arguments: ['while away'] },
      ]);
      assert.equal(h.server.stats().reconnects, 1);
      assert.deepEqual(h.closedIds, []);
    });
  }

  const refusals = [
    {
      what: 'a text frame of invalid UTF-8',
      send: (c: RawClient) => c.ws.send(Buffer.from(`{"type":6}${RS}\xff`, 'latin1'), { binary: false }),
      log: 'Received invalid UTF-8',
      counter: 'protocolErrors',
    },
    {
      what: 'a binary frame over the frame limit',
      send: (c: RawClient) => c.send(new Uint8Array(shippedBudgets.maximumFrameSize + 1)),
      log: `a frame over ${shippedBudgets.maximumFrameSize} bytes`,
      counter: 'framesTooLarge',
    },
  ];
  for (const { what, send, log, counter } of refusals) {
    it(`${what}, dropped by uWS without a close frame, ends it: the reconnect gets 404`, async () => {
      const lines: string[] = [];
      const h = await hub(lines);
      const { client, id, connectionId } = await statefulRaw(h);
      send(client);
      assert.deepEqual(await withTimeout(client.closed, 3000, 'the drop'), { code: 1006, reason: '' });
      await waitUntil(() => h.closedIds.length === 1, 'the connection to end', 3000);
      assert.deepEqual(h.closedIds, [connectionId]);
      assert.deepEqual(await upgrade(wsUrl(h, id)), ENDED);
      const stats = h.server.stats();
      assert.deepEqual([stats[counter], stats.disconnects, stats.connectionsAwaitingReconnect], [1, 0, 0]);
      assert.deepEqual(lines, [`info: App: ${connectionId}: closed by the WebSocket layer for what the client sent (${log}): the connection ends`]);
    });
  }

  it('a message over the message limit, closed by the hub with a Close message, ends it too', async () => {
    const h = await hub();
    const { client, id } = await statefulRaw(h);
    client.send(`{"type":1,"target":"Record","arguments":["${'x'.repeat(40_000)}"]}${RS}`);
    assert.deepEqual(records((await client.next()).data), [{ type: 7, error: 'Connection closed with an error.', allowReconnect: true }]);
    await withTimeout(client.closed, 3000, 'the close');
    assert.deepEqual(await upgrade(wsUrl(h, id)), ENDED);
  });
});
