// Table tests for the framing layers: 0x1E records (JSON, handshake) and VarInt length prefixes
// (MessagePack), including limits, truncation and hostile prefixes.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { readVarInt, splitBinaryMessages, writeBinaryMessage, writeVarInt } from '../../src/hub/binary-format.js';
import { InvalidDataError, MessageTooLargeError } from '../../src/hub/errors.js';
import { readRecord, writeRecord } from '../../src/hub/text-format.js';

/** Reads record after record as the server does, one at a time: the bodies and the unread tail. */
function splitRecords(buffer: Uint8Array, max: number): { messages: Uint8Array[]; rest: Uint8Array } {
  const messages: Uint8Array[] = [];
  let offset = 0;
  for (let next = readRecord(buffer, 0, max); next; next = readRecord(buffer, offset, max)) {
    messages.push(next.body);
    offset = next.end;
  }
  return { messages, rest: buffer.subarray(offset) };
}

const bytes = (s: string): Uint8Array => new TextEncoder().encode(s);
const text = (b: Uint8Array): string => new TextDecoder().decode(b);

describe('text records', () => {
  const cases: { name: string; input: string; max?: number; messages?: string[]; rest?: string; throws?: typeof MessageTooLargeError }[] = [
    { name: 'one record', input: '{"a":1}\u001e', messages: ['{"a":1}'], rest: '' },
    { name: 'several records in one frame', input: 'a\u001eb\u001ec\u001e', messages: ['a', 'b', 'c'], rest: '' },
    { name: 'incomplete tail is kept', input: 'a\u001ebc', messages: ['a'], rest: 'bc' },
    { name: 'nothing complete', input: 'abc', messages: [], rest: 'abc' },
    { name: 'empty record', input: '\u001e', messages: [''], rest: '' },
    { name: 'record exactly at the limit (separator counts)', input: 'abcd\u001e', max: 5, messages: ['abcd'], rest: '' },
    { name: 'record one over the limit', input: 'abcde\u001e', max: 5, throws: MessageTooLargeError },
    { name: 'many small records over the limit in total', input: 'ab\u001e'.repeat(10), max: 5, messages: Array(10).fill('ab'), rest: '' },
    { name: 'unterminated tail that can no longer fit', input: 'a\u001ebcdef', max: 5, throws: MessageTooLargeError },
    { name: 'unterminated tail that still may fit', input: 'a\u001ebcd', max: 5, messages: ['a'], rest: 'bcd' },
    { name: 'a separator beyond the limit is not looked for', input: `${'x'.repeat(20)}\u001e`, max: 5, throws: MessageTooLargeError },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const max = c.max ?? 1024;
      if (c.throws) {
        assert.throws(() => splitRecords(bytes(c.input), max), c.throws);
        return;
      }
      const result = splitRecords(bytes(c.input), max);
      assert.deepEqual(result.messages.map(text), c.messages);
      assert.equal(text(result.rest), c.rest);
    });
  }

  it('reads at an offset and says where the next record starts', () => {
    const buffer = bytes('ab\u001ecd\u001e');
    const first = readRecord(buffer, 0, 10)!;
    assert.deepEqual([text(first.body), first.end], ['ab', 3]);
    const second = readRecord(buffer, first.end, 10)!;
    assert.deepEqual([text(second.body), second.end], ['cd', 6]);
    assert.equal(readRecord(buffer, second.end, 10), undefined);
  });

  it('writes a record with its separator', () => {
    assert.equal(writeRecord('{}'), '{}\u001e');
  });
});

describe('VarInt length prefix', () => {
  const table: [number, number[]][] = [
    [0, [0x00]],
    [0x35, [0x35]],
    [127, [0x7f]],
    [128, [0x80, 0x01]],
    [0x1480, [0x80, 0x29]], // the hub protocol's own example: 5248
    [16_383, [0xff, 0x7f]],
    [16_384, [0x80, 0x80, 0x01]],
    [0x7fffffff, [0xff, 0xff, 0xff, 0xff, 0x07]], // the largest: 2 GB - 1
  ];
  for (const [value, encoded] of table) {
    it(`${value} <-> ${encoded.map((b) => b.toString(16)).join(' ')}`, () => {
      assert.deepEqual([...writeVarInt(value)], encoded);
      assert.deepEqual(readVarInt(Uint8Array.from(encoded)), { value, length: encoded.length });
    });
  }

  const hostile: [string, number[]][] = [
    ['a 5th byte with more than 3 bits (over 2 GB)', [0xff, 0xff, 0xff, 0xff, 0x08]],
    ['a 5th byte with the continuation bit (6+ bytes)', [0xff, 0xff, 0xff, 0xff, 0x87, 0x01]],
    ['all continuation bits', [0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80]],
  ];
  for (const [name, prefix] of hostile) {
    it(`rejects ${name}`, () => {
      assert.throws(() => readVarInt(Uint8Array.from(prefix)), InvalidDataError);
    });
  }

  it('reports a truncated prefix as incomplete', () => {
    assert.equal(readVarInt(Uint8Array.from([0x80])), 'incomplete');
    assert.equal(readVarInt(Uint8Array.from([0xff, 0xff, 0xff, 0xff])), 'incomplete');
    assert.equal(readVarInt(new Uint8Array(0)), 'incomplete');
  });

  it('refuses to encode what the format cannot carry', () => {
    assert.throws(() => writeVarInt(-1), RangeError);
    assert.throws(() => writeVarInt(2 ** 31), RangeError);
    assert.throws(() => writeVarInt(1.5), RangeError);
  });
});

describe('binary messages', () => {
  const frame = (...bodies: number[][]): Uint8Array => {
    const parts = bodies.map((b) => writeBinaryMessage(Uint8Array.from(b)));
    const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
    let offset = 0;
    for (const p of parts) {
      out.set(p, offset);
      offset += p.length;
    }
    return out;
  };

  it('prefixes each body with writeVarInt of its length, at every prefix-length boundary', () => {
    for (const length of [0, 1, 127, 128, 129, 16_383, 16_384, 16_385, 2_097_151, 2_097_152]) {
      const body = new Uint8Array(length).fill(0xab);
      const out = writeBinaryMessage(body);
      const prefix = writeVarInt(length);
      assert.deepEqual([...out.subarray(0, prefix.length)], [...prefix], `prefix of ${length}`);
      assert.equal(out.length, prefix.length + length, `length of ${length}`);
      assert.ok(out.subarray(prefix.length).every((b) => b === 0xab), `body of ${length}`);
    }
  });

  it('loops over several messages in one frame', () => {
    const { messages, rest } = splitBinaryMessages(frame([1], [2, 3], []), 100);
    assert.deepEqual(messages.map((m) => [...m]), [[1], [2, 3], []]);
    assert.equal(rest.length, 0);
  });

  it('keeps a truncated body for the next frame', () => {
    const whole = frame([1, 2, 3, 4]);
    const { messages, rest } = splitBinaryMessages(whole.subarray(0, 3), 100);
    assert.equal(messages.length, 0);
    assert.deepEqual([...rest], [...whole.subarray(0, 3)]);
  });

  it('keeps a truncated prefix for the next frame', () => {
    const big = writeBinaryMessage(new Uint8Array(300));
    const { messages, rest } = splitBinaryMessages(big.subarray(0, 1), 1000);
    assert.equal(messages.length, 0);
    assert.equal(rest.length, 1);
  });

  it('rejects a message whose prefix announces more than the limit, without waiting for its body', () => {
    assert.throws(() => splitBinaryMessages(Uint8Array.from([0xff, 0xff, 0x03]), 1000), MessageTooLargeError);
  });

  it('counts the prefix against the limit', () => {
    assert.equal(splitBinaryMessages(frame([1, 2, 3]), 4).messages.length, 1);
    assert.throws(() => splitBinaryMessages(frame([1, 2, 3, 4]), 4), MessageTooLargeError);
  });

  it('many small messages may exceed the limit together', () => {
    const bodies = Array.from({ length: 50 }, () => [9, 9, 9]);
    assert.equal(splitBinaryMessages(frame(...bodies), 10).messages.length, 50);
  });
});
