// What a broker connection keeps for the process's life. mqtt-packet, by default, fills a cache with a
// 2-byte Buffer for each of the 65,536 16-bit numbers on its first write (packet ids, lengths): 6 MiB of
// heap, 8-9 MiB of an idle service's RSS with MQTT on, the default configuration (71 MiB against 62).
// This file's process runs no other MQTT client, so the cache it reads is the one our connection would fill.
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { after, before, describe, it } from 'node:test';
import { BrokerConnection } from '../../src/mqtt/client.js';
import { startMosquitto, type Mosquitto } from '../support/mosquitto.js';
import { waitUntil } from '../support/wait.js';

/** mqtt-packet as mqtt.js itself resolves it. */
const numbersCache = (): Record<number, Buffer> => {
  const fromMqtt = createRequire(createRequire(import.meta.url).resolve('mqtt'));
  return (fromMqtt('mqtt-packet/numbers') as { cache: Record<number, Buffer> }).cache;
};

describe('a broker connection and the memory it keeps', () => {
  let broker: Mosquitto;
  before(async () => {
    broker = await startMosquitto();
  });
  after(async () => {
    await broker.stop();
  });

  it('connects, publishes acknowledged messages and leaves no per-number buffers behind', async () => {
    let connected = 0;
    const connection = new BrokerConnection(
      {
        host: '127.0.0.1', port: broker.port, username: '', password: '', clientId: 'vh-memory-test',
        will: { topic: 'vh-memory-test/status', payload: 'offline', retain: true },
        keepaliveSeconds: 30, reconnectMinMs: 1000, reconnectMaxMs: 1000, connectTimeoutMs: 5000,
      },
      { connected: () => void connected++, disconnected: () => {}, message: () => {}, skipped: () => {}, subscriptionRefused: () => {} },
    );
    try {
      connection.start();
      await waitUntil(() => connection.connected, 'the connection to the broker');
      // QoS 1 with packet ids past 255 and a payload past 127 bytes: every number the writer encodes.
      const verdicts = await Promise.all(
        Array.from({ length: 300 }, (_, i) => new Promise<Error | undefined>((resolve) => {
          connection.publish({ topic: `vh-memory-test/m/${i}`, payload: 'x'.repeat(200), retain: false }, resolve);
        })),
      );
      assert.deepEqual(verdicts.filter((v) => v !== undefined), [], 'every message acknowledged');
      assert.equal(connected, 1);
      assert.equal(Object.keys(numbersCache()).length, 0, 'mqtt-packet built its number cache');
    } finally {
      await connection.end(undefined, 2000);
    }
  });
});
