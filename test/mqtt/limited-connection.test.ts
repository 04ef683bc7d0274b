// The broker connection mqtt.js is given (src/mqtt/limited-connection.ts), against a plain TCP server on
// loopback playing the broker: what it reads passes the size limit, and the acknowledgement of a skipped
// message joins the outgoing bytes behind whatever was written before it, never inside a packet that is
// still waiting for the socket to drain.
import assert from 'node:assert/strict';
import net, { type AddressInfo } from 'node:net';
import { describe, it } from 'node:test';
import { BrokerConnection } from '../../src/mqtt/client.js';
import { LimitedConnection } from '../../src/mqtt/limited-connection.js';
import type { SkippedMessage } from '../../src/mqtt/packet-limit.js';
import { waitUntil } from '../support/wait.js';

/** A PUBLISH of `payload` bytes on `topic`, at QoS 1 with packet id 0x0102 unless told. */
function publish(topic: string, payload: number, { qos = 1, id = 0x0102 } = {}): Buffer {
  const body = Buffer.concat([Buffer.from([0, topic.length]), Buffer.from(topic), Buffer.from([id >> 8, id & 0xff]), Buffer.alloc(payload, 0x61)]);
  const length: number[] = [];
  for (let n = body.length; ; ) {
    const byte = n % 128;
    n = Math.floor(n / 128);
    length.push(n > 0 ? byte | 0x80 : byte);
    if (n === 0) break;
  }
  return Buffer.concat([Buffer.from([0x30 | (qos << 1), ...length]), body]);
}

describe('LimitedConnection', () => {
  it('sends what is written while corked (the parts of one mqtt.js packet) in one segment, not held by Nagle\'s algorithm', async () => {
    const chunks: Buffer[] = [];
    const server = net.createServer((socket) => socket.on('data', (d: Buffer) => chunks.push(d)));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const connection = new LimitedConnection('127.0.0.1', (server.address() as AddressInfo).port, 64 * 1024, () => {});
    try {
      // Ten packets of three parts each, as mqtt.js writes them: cork, the parts, uncork on the next tick.
      for (let p = 0; p < 10; p++) {
        connection.cork();
        for (const part of ['head', 'topic', 'payload']) connection.write(Buffer.from(`${p}:${part};`));
        await new Promise((resolve) => process.nextTick(resolve));
        connection.uncork();
        await waitUntil(() => Buffer.concat(chunks).toString().endsWith(`${p}:payload;`), `packet ${p}`, 5000, 1);
        // Part by part, the first part leaves at once and the rest wait for its ACK: two reads at least.
        assert.equal(chunks.length, p + 1, `packet ${p} came in more than one read: ${chunks.map((c) => JSON.stringify(c.toString())).join(' ')}`);
      }
    } finally {
      connection.destroy();
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it('queues the PUBACK of a skipped message behind the writes before it, and passes what is within the limit', async () => {
    const received: Buffer[] = [];
    let serverSocket: net.Socket | undefined;
    const server = net.createServer((socket) => {
      serverSocket = socket;
      socket.pause(); // the "broker" reads nothing yet: the client's big write cannot drain
      socket.write(Buffer.concat([publish('big', 2 * 1024 * 1024), publish('small', 3)]));
      socket.on('data', (d: Buffer) => received.push(d));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const skipped: SkippedMessage[] = [];
    const passed: Buffer[] = [];
    const connection = new LimitedConnection('127.0.0.1', (server.address() as AddressInfo).port, 64 * 1024, (m) => skipped.push(m));
    try {
      connection.on('data', (d: Buffer) => passed.push(d));
      // Two writes as mqtt.js makes one packet of: the first is more than the socket takes at once.
      const first = Buffer.alloc(32 * 1024 * 1024, 0x11);
      const second = Buffer.from('end of the packet');
      connection.write(first);
      connection.write(second);
      await waitUntil(() => skipped.length === 1 && Buffer.concat(passed).length > 0, 'the big PUBLISH skipped, the small one passed', 10_000);
      assert.deepEqual(skipped, [{ topic: 'big', bytes: publish('big', 2 * 1024 * 1024).length, qos: 1, retained: false }]);
      assert.deepEqual(Buffer.concat(passed), publish('small', 3));
      serverSocket!.resume();
      const total = first.length + second.length + 4;
      await waitUntil(() => Buffer.concat(received).length >= total, 'everything the client wrote', 20_000);
      const all = Buffer.concat(received);
      assert.equal(all.length, total);
      assert.deepEqual(all.subarray(first.length, first.length + second.length), second, 'the packet in two writes stays whole');
      assert.deepEqual(all.subarray(total - 4), Buffer.from([0x40, 2, 1, 2]), 'the PUBACK comes last');
    } finally {
      connection.destroy();
      serverSocket?.destroy();
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it('a broker that breaks the protocol is disconnected with the reason, as the hub logs it', async () => {
    // Answers CONNECT with a packet whose length field runs past the 4 bytes MQTT allows.
    const server = net.createServer((socket) => socket.once('data', () => socket.write(Buffer.from([0x20, 0xff, 0xff, 0xff, 0xff, 0x01]))));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const reasons: (string | undefined)[] = [];
    const connection = new BrokerConnection({
      host: '127.0.0.1', port: (server.address() as AddressInfo).port, username: '', password: '', clientId: 'vh-protocol-test',
      will: { topic: 'vh-protocol-test/status', payload: 'offline', retain: true },
      keepaliveSeconds: 30, reconnectMinMs: 60_000, reconnectMaxMs: 60_000, connectTimeoutMs: 5000,
    }, { connected: () => {}, disconnected: (reason) => reasons.push(reason), message: () => {}, skipped: () => {}, subscriptionRefused: () => {} });
    try {
      connection.start();
      await waitUntil(() => reasons.length > 0, 'the disconnect', 10_000);
      assert.deepEqual(reasons, ['MQTT protocol error: the MQTT broker sent a packet length longer than 4 bytes']);
    } finally {
      await connection.end(undefined, 1000);
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it('a broker that delivers QoS 2 messages (the hub subscribes at QoS 1) is disconnected before mqtt.js holds one', async () => {
    // Accepts the connection, then sends QoS 2 PUBLISHes under ever new packet ids and never the PUBREL
    // that would let mqtt.js forget them: 65,535 of them could be held at once.
    const qos2 = (id: number): Buffer => publish('homeassistant/status', 100_000, { qos: 2, id });
    const sockets: net.Socket[] = [];
    const server = net.createServer((socket) => {
      sockets.push(socket);
      socket.on('error', () => {});
      socket.once('data', () => socket.write(Buffer.concat([Buffer.from([0x20, 2, 0, 0]), ...Array.from({ length: 50 }, (_, i) => qos2(i + 1))])));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const reasons: (string | undefined)[] = [];
    let connected = 0;
    const connection = new BrokerConnection({
      host: '127.0.0.1', port: (server.address() as AddressInfo).port, username: '', password: '', clientId: 'vh-qos2-test',
      will: { topic: 'vh-qos2-test/status', payload: 'offline', retain: true },
      keepaliveSeconds: 30, reconnectMinMs: 60_000, reconnectMaxMs: 60_000, connectTimeoutMs: 5000,
    }, { connected: () => connected++, disconnected: (reason) => reasons.push(reason), message: () => assert.fail('no message is read'), skipped: () => {}, subscriptionRefused: () => {} });
    try {
      connection.start();
      await waitUntil(() => reasons.length > 0, 'the disconnect', 10_000);
      assert.deepEqual(reasons, ['MQTT protocol error: the MQTT broker sent a PUBLISH with QoS 2, above the QoS 1 the hub subscribed at']);
    } finally {
      await connection.end(undefined, 1000);
      for (const s of sockets) s.destroy();
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
