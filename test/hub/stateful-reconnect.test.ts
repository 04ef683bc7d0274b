// Stateful reconnect with the official client (`withStatefulReconnect()`) through a relay that cuts
// every connection: the hub keeps the connection, its groups and its buffers, and nothing is lost or
// repeated in either direction.
import assert from 'node:assert/strict';
import net from 'node:net';
import { after, describe, it } from 'node:test';
import { HubConnectionBuilder, HubConnectionState, LogLevel, type HubConnection } from '@microsoft/signalr';
import { MessagePackHubProtocol } from '@microsoft/signalr-protocol-msgpack';
import { startDropRelay, type DropRelay } from '../../src/cli/drop-relay.js';
import { sleep, waitUntil, withTimeout } from '../support/wait.js';
import { startHub, type TestHub } from './helpers.js';

const STATEFUL = { bufferSize: 100_000, disconnectTimeoutMs: 5000 };

async function statefulClient(url: string, protocol: 'json' | 'messagepack'): Promise<HubConnection> {
  let builder = new HubConnectionBuilder().withUrl(url).withStatefulReconnect().configureLogging(LogLevel.None);
  if (protocol === 'messagepack') builder = builder.withHubProtocol(new MessagePackHubProtocol());
  const connection = builder.build();
  await withTimeout(connection.start(), 5000, 'client start');
  return connection;
}

for (const protocol of ['json', 'messagepack'] as const) {
  describe(`stateful reconnect through a dropping relay (${protocol})`, () => {
    let hub: TestHub;
    let relay: DropRelay;
    after(async () => {
      await relay?.close();
      hub?.stop();
    });

    it('keeps the connection and its group; every message arrives once, in order, both ways', async () => {
      hub = await startHub({ statefulReconnect: STATEFUL });
      relay = await startDropRelay({ host: '127.0.0.1', port: hub.port });
      const client = await statefulClient(`http://127.0.0.1:${relay.port}/voice-hub`, protocol);
      let closed = false;
      client.onclose(() => { closed = true; });
      const received: number[] = [];
      client.on('Message', (n: number) => received.push(n));
      assert.equal(await client.invoke('Join', 'g'), true);
      const total = 200;
      for (let i = 0; i < total; i++) {
        await client.send('Record', i);
        hub.server.sendToGroup('g', 'Message', i);
        if (i % 50 == 25) relay.dropAll();
        await sleep(5);
      }
      await waitUntil(() => hub.recorded.length >= total && received.length >= total, 'everything through', 10_000);
      await sleep(300);
      assert.deepEqual(hub.recorded, Array.from({ length: total }, (_, i) => i));
      assert.deepEqual(received, Array.from({ length: total }, (_, i) => i));
      assert.equal(closed, false);
      assert.equal(client.state, HubConnectionState.Connected);
      assert.equal(hub.server.stats().reconnects, 4, 'one reconnect per drop');
      await client.stop();
    });

    it('a call running while the connection drops completes once, after the reconnect', async () => {
      const client = await statefulClient(`http://127.0.0.1:${relay.port}/voice-hub`, protocol);
      let closed = false;
      client.onclose(() => { closed = true; });
      hub.recorded.length = 0;
      const call = client.invoke('Slow', 300, 'late');
      await sleep(100);
      relay.dropAll();
      assert.equal(await withTimeout(call, 5000, 'the completion'), 'late');
      await sleep(300);
      assert.deepEqual(hub.recorded, ['late'], 'the method ran once');
      assert.equal(closed, false);
      await client.stop();
    });
  });
}

/**
 * A relay that can stop passing the hub's bytes to the client (`deaf`), as a link that died while the
 * hub still wrote to it, and cut every connection (`cut`).
 */
async function deafeningRelay(port: number): Promise<{ port: number; deaf: boolean; cut(): void; close(): void }> {
  const pairs = new Set<[net.Socket, net.Socket]>();
  const state = {
    port: 0,
    deaf: false,
    cut: () => pairs.forEach(([client, hub]) => (client.destroy(), hub.destroy())),
    close: () => (state.cut(), server.close()),
  };
  const server = net.createServer((client) => {
    const hub = net.connect(port, '127.0.0.1');
    const pair: [net.Socket, net.Socket] = [client, hub];
    pairs.add(pair);
    client.on('data', (d) => hub.write(d));
    hub.on('data', (d) => state.deaf || client.write(d));
    const end = (): void => {
      pairs.delete(pair);
      client.destroy();
      hub.destroy();
    };
    client.on('close', end).on('error', end);
    hub.on('close', end).on('error', end);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  state.port = (server.address() as net.AddressInfo).port;
  return state;
}

describe('stateful reconnect after an Ack the client never got', () => {
  // The official client's send resolves once an Ack makes room in its buffer: when the hub's Ack went
  // into a dead link and the reconnected client resent the message, the hub skipped it as handled and
  // never acknowledged it again, and the send waited for ever.
  it('a send waiting on its Ack completes after the reconnect', async () => {
    const hub = await startHub({ statefulReconnect: STATEFUL });
    const relay = await deafeningRelay(hub.port);
    try {
      const client = new HubConnectionBuilder()
        .withUrl(`http://127.0.0.1:${relay.port}/voice-hub`)
        .withStatefulReconnect({ bufferSize: 1 })
        .configureLogging(LogLevel.None)
        .build();
      await withTimeout(client.start(), 5000, 'client start');
      await withTimeout(client.send('Record', 0), 3000, 'a send and its Ack');
      relay.deaf = true;
      const waiting = client.send('Record', 1);
      await waitUntil(() => hub.recorded.length === 2, 'the hub to handle it');
      await sleep(2000); // its Ack goes nowhere
      relay.deaf = false;
      relay.cut();
      await withTimeout(waiting, 5000, 'the send waiting on its Ack');
      assert.deepEqual(hub.recorded, [0, 1], 'handled once');
      assert.equal(client.state, HubConnectionState.Connected);
      await client.stop();
    } finally {
      relay.close();
      hub.stop();
    }
  });
});
