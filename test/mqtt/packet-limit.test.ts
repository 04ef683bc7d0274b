// The scanner that keeps oversized MQTT packets away from mqtt.js' parser (src/mqtt/packet-limit.ts):
// packets within the limit pass byte for byte, an oversized PUBLISH is reported (topic, size, QoS, the
// acknowledgement its QoS asks for) and left out, whatever the chunks the socket delivers.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { IncomingPacketLimit, type SkippedMessage } from '../../src/mqtt/packet-limit.js';

/** A packet: fixed header (type, flags, remaining length as MQTT's variable-length integer) and body. */
function packet(type: number, flags: number, body: Buffer): Buffer {
  const length: number[] = [];
  let n = body.length;
  do {
    let byte = n % 128;
    n = Math.floor(n / 128);
    if (n > 0) byte |= 0x80;
    length.push(byte);
  } while (n > 0);
  return Buffer.concat([Buffer.from([(type << 4) | flags, ...length]), body]);
}

function publish(topic: string, payloadBytes: number, qos = 0, id = 0x1234, retain = false): Buffer {
  const t = Buffer.from(topic, 'utf8');
  const head = Buffer.alloc(2);
  head.writeUInt16BE(t.length);
  const parts = [head, t];
  if (qos > 0) parts.push(Buffer.from([id >> 8, id & 0xff]));
  parts.push(Buffer.alloc(payloadBytes, 0x61));
  return packet(3, (qos << 1) | (retain ? 1 : 0), Buffer.concat(parts));
}

const suback = packet(9, 0, Buffer.from([0, 1, 1]));
const pingresp = packet(13, 0, Buffer.alloc(0));

interface Run { passed: Buffer; skipped: SkippedMessage[]; acks: Buffer[] }

/** Feeds `stream` in chunks of the given sizes (cycled) and gathers what comes out. */
function feed(limit: number, stream: Buffer, sizes: number[]): Run {
  const skipped: SkippedMessage[] = [];
  const acks: Buffer[] = [];
  const scanner = new IncomingPacketLimit(limit, (m, ack) => {
    skipped.push({ ...m });
    if (ack) acks.push(ack);
  });
  const out: Buffer[] = [];
  for (let at = 0, k = 0; at < stream.length; k++) {
    const size = sizes[k % sizes.length]!;
    out.push(...scanner.filter(stream.subarray(at, at + size)));
    at += size;
  }
  return { passed: Buffer.concat(out), skipped, acks };
}

const CHUNKINGS = [[1], [2], [3], [7], [64], [1000], [1 << 20], [1, 5, 2, 300, 3]];

describe('IncomingPacketLimit', () => {
  it('passes packets within the limit byte for byte, however the stream is cut', () => {
    const stream = Buffer.concat([suback, publish('a/b', 10), pingresp, publish('homeassistant/status', 6, 1), publish('x', 200, 0)]);
    for (const sizes of CHUNKINGS) {
      const run = feed(1024, stream, sizes);
      assert.deepEqual(run.passed, stream, `chunks of ${sizes.join(',')}`);
      assert.deepEqual(run.skipped, []);
    }
  });

  it('a packet of exactly the limit passes; one byte more is skipped', () => {
    const exact = publish('t', 100);
    const over = publish('t', 101);
    assert.deepEqual(feed(exact.length, exact, [13]).passed, exact);
    const run = feed(exact.length, over, [13]);
    assert.equal(run.passed.length, 0);
    assert.deepEqual(run.skipped, [{ topic: 't', bytes: over.length, qos: 0, retained: false }]);
  });

  it('leaves out an oversized QoS 0 PUBLISH between other packets, and reports it once', () => {
    const big = publish('homeassistant/status', 300_000);
    const stream = Buffer.concat([suback, big, publish('a', 5), pingresp]);
    for (const sizes of CHUNKINGS) {
      const run = feed(1024, stream, sizes);
      assert.deepEqual(run.passed, Buffer.concat([suback, publish('a', 5), pingresp]), `chunks of ${sizes.join(',')}`);
      assert.deepEqual(run.skipped, [{ topic: 'homeassistant/status', bytes: big.length, qos: 0, retained: false }]);
      assert.deepEqual(run.acks, [], 'QoS 0 is not acknowledged');
    }
  });

  it('answers a skipped QoS 1 PUBLISH with PUBACK, for its packet id', () => {
    const stream = Buffer.concat([publish('q/1', 5000, 1, 0xbeef), publish('q/2', 5000, 1, 0x0102), pingresp]);
    for (const sizes of CHUNKINGS) {
      const run = feed(1024, stream, sizes);
      assert.deepEqual(run.passed, pingresp);
      assert.deepEqual(run.skipped.map((m) => [m.topic, m.qos]), [['q/1', 1], ['q/2', 1]]);
      assert.deepEqual(run.acks, [Buffer.from([0x40, 2, 0xbe, 0xef]), Buffer.from([0x40, 2, 0x01, 0x02])]);
    }
  });

  it('ends the connection on a QoS 2 PUBLISH of any size: the hub subscribes at QoS 1, and mqtt.js holds each QoS 2 message until the broker releases it', () => {
    for (const payload of [5, 5000]) {
      const scanner = new IncomingPacketLimit(1024, () => assert.fail('not skipped: refused'));
      assert.deepEqual(scanner.filter(pingresp), [pingresp]);
      assert.throws(() => scanner.filter(publish('homeassistant/status', payload, 2)), {
        message: 'the MQTT broker sent a PUBLISH with QoS 2, above the QoS 1 the hub subscribed at',
      });
    }
  });

  it('reports the whole of a long topic, and whether the message was retained', () => {
    const topic = `homeassistant/sensor/${'n'.repeat(5000)}/x/config`;
    for (const sizes of CHUNKINGS) {
      const run = feed(1024, Buffer.concat([publish(topic, 100, 1, 7, true), publish('t', 2000)]), sizes);
      assert.deepEqual(run.skipped.map((m) => [m.topic, m.retained]), [[topic, true], ['t', false]], `chunks of ${sizes.join(',')}`);
    }
  });

  it('a PUBLISH shorter than its own topic length is reported as far as it goes, without an ack, and the next packet passes', () => {
    // Topic length 60,000 in a packet of 2,000 body bytes: no room for the topic, let alone a packet id.
    const body = Buffer.alloc(2000, 0x62);
    body.writeUInt16BE(60_000);
    const broken = packet(3, 2, body);
    const run = feed(1024, Buffer.concat([broken, pingresp]), [100]);
    assert.deepEqual(run.passed, pingresp);
    assert.equal(run.skipped.length, 1);
    assert.equal(run.skipped[0]!.topic, 'b'.repeat(1998));
    assert.deepEqual(run.acks, []);
  });

  it('ends the connection on an oversized packet of any other type', () => {
    const scanner = new IncomingPacketLimit(1024, () => assert.fail('not a PUBLISH'));
    assert.throws(() => scanner.filter(packet(9, 0, Buffer.alloc(2000))), /the MQTT broker sent a packet of type 9 and 2003 bytes/);
  });

  it('ends the connection on a remaining length of more than four bytes', () => {
    const scanner = new IncomingPacketLimit(1024, () => {});
    assert.throws(() => scanner.filter(Buffer.from([0x30, 0xff, 0xff, 0xff, 0xff, 0x01])), /packet length longer than 4 bytes/);
  });

  it('ends the connection on a PUBLISH with QoS 3', () => {
    const scanner = new IncomingPacketLimit(16, () => {});
    assert.throws(() => scanner.filter(packet(3, 6, Buffer.alloc(100))), /QoS 3/);
  });
});
