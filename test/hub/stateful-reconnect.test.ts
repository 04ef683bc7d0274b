// Stateful reconnect with the official client (`withStatefulReconnect()`) through a relay that cuts
// every connection: the hub keeps the connection, its groups and its buffers, and nothing is lost or
// repeated in either direction.
import assert from 'node:assert/strict';
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
