// The hub's own MessagePack writer must write, for every value it takes, the bytes the library writes
// (framed with the length prefix), leave the rest to the library, and hand out frames that nothing
// else can overwrite.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Encoder, ExtData } from '@msgpack/msgpack';
import { Base64Text } from '../../src/hub/base64-text.js';
import { writeBinaryMessage } from '../../src/hub/binary-format.js';
import { invocation, completionWithResult } from '../../src/hub/messages.js';
import { encodeMessagePackMessage } from '../../src/hub/msgpack-protocol.js';
import { writeMessagePackFrame } from '../../src/hub/msgpack-writer.js';
import { FrameQueue } from '../../src/hub/stateful/frame-queue.js';

const stock = new Encoder({ ignoreUndefined: true });
const theLibrarys = (value: unknown): Buffer => Buffer.from(writeBinaryMessage(stock.encode(value)));

const same = (value: unknown, what: string): void => {
  const ours = writeMessagePackFrame(value);
  assert.ok(ours, `${what}: written`);
  assert.deepEqual(Buffer.from(ours), theLibrarys(value), what);
};

const keyed = (count: number, value: (i: number) => unknown = (i) => i): Record<string, unknown> =>
  Object.fromEntries(Array.from({ length: count }, (_, i) => [`k${i}`, value(i)]));

describe('the MessagePack writer', () => {
  it('writes every integer form at both sides of each boundary, and floats, as the library does', () => {
    const edges = [0, 0x7f, 0xff, 0xffff, 0xffffffff, 2 ** 53 - 1];
    const numbers = [-0, 1, 2 ** 53, -(2 ** 53), 0.5, -1.5, 1e300, -1e-300, NaN, Infinity, -Infinity, Number.MIN_VALUE];
    for (const edge of edges) numbers.push(edge, edge + 1, -edge, -edge - 1);
    for (const edge of [0x20, 0x80, 0x8000, 0x80000000]) numbers.push(-edge, -edge - 1, -edge + 1);
    for (const n of numbers) same(n, `number ${n}`);
    same(numbers, 'all of them in one array');
  });

  it('writes strings of every length form, in every script, as the library does', () => {
    const pieces = ['a', '+', 'é', 'ж', '€', '語', '😀', '\u0000', '\u007f', '\u0080', '\u07ff', '\u0800', '\uffff'];
    for (const piece of pieces) {
      for (const length of [0, 1, 30, 31, 32, 33, 50, 51, 254, 255, 256, 257, 1000, 65_535, 65_536, 70_000]) {
        // Whole pieces: half a surrogate pair is the next test's.
        const text = piece.repeat(Math.ceil(length / piece.length));
        same(text, `${JSON.stringify(piece)} x ${text.length}`);
      }
    }
    same(`${'x'.repeat(200)}é`, 'ASCII until its last character');
    same(`é${'x'.repeat(40)}`, 'not ASCII from its first');
  });

  it('writes a lone surrogate as U+FFFD in strings of any length, where the library wrote invalid UTF-8 in short ones', () => {
    for (const length of [1, 5, 31, 40, 255, 300]) {
      for (const lone of ['\ud800', '\udc00']) {
        const text = `${'x'.repeat(length - 1)}${lone}`;
        const ours = writeMessagePackFrame(text)!;
        assert.deepEqual(Buffer.from(ours), theLibrarys(`${'x'.repeat(length - 1)}\ufffd`), `${JSON.stringify(lone)} at ${length}`);
        assert.ok(Buffer.from(ours).includes(Buffer.from('\ufffd')), 'the replacement character is written');
      }
    }
  });

  it('writes arrays, maps and byte arrays of each size form, nested, as the library does', () => {
    for (const count of [0, 1, 15, 16, 17, 65_535, 65_536]) {
      same(Array.from({ length: count }, (_, i) => i % 3), `array of ${count}`);
      same(keyed(count), `map of ${count}`);
      same(new Uint8Array(count).fill(9), `bytes of ${count}`);
    }
    const backing = Uint8Array.from({ length: 64 }, (_, i) => i);
    same(backing.subarray(10, 30), 'bytes that are a view at an offset');
    same(new Int16Array([1, -1, 300]), 'another typed array: its bytes');
    same(new DataView(backing.buffer, 4, 8), 'a DataView: its bytes');
    same({ a: undefined, b: 1, c: undefined }, 'undefined members are dropped, as the hub asks of the library');
    same([undefined, null, true, false], 'undefined in an array is nil');
    same(keyed(16, (i) => (i % 2 ? undefined : i)), 'sixteen keys, eight of them undefined: a fixmap');
    same(Object.assign(Object.create(null) as object, { x: 1 }), 'an object without a prototype');
    same(new Map([['a', 1]]), 'a Map, as the library writes it: its own keys, none');
    same(new (class Point { constructor(readonly x = 1, readonly y = 2) {} })(), 'a class instance: its own members');
    const deep: unknown[] = [];
    let inner = deep;
    for (let depth = 1; depth < 100; depth++) inner.push((inner = []));
    same(deep, 'nested 100 deep, the most the library writes');
  });

  it('writes whole hub messages as the library does, and the protocol uses it', () => {
    const base64 = Buffer.alloc(640, 7).toString('base64');
    const messages = [
      invocation('AudioProcessed', [{ sessionId: 'b6a2f8f0-6a1c-4d55-9d0e-3c1f1a2b3c4d', sequence: 1234, bytes: 80, durationMs: 20 }]),
      invocation('AudioResponse', [Base64Text.of(Buffer.alloc(640, 7))]),
      invocation('AudioData', [{ sessionId: 's', format: 'opus', sampleRate: 16000, channels: 1, data: base64 }]),
      completionWithResult('17', { text: 'ü'.repeat(200_000), n: 1.5, list: [true, null, undefined, 'short'] }),
      invocation('Error', ['oops']),
    ];
    for (const message of messages) {
      const items = message.type === 1 ? [1, {}, null, message.target, message.arguments.map((a) => (a instanceof Base64Text ? a.text : a)), []] : [3, {}, '17', 3, message.result];
      assert.deepEqual(Buffer.from(encodeMessagePackMessage(message)), theLibrarys(items), message.type === 1 ? message.target : 'completion');
    }
  });

  it('leaves to the library what it writes with its extensions or refuses, which then writes or throws as before', () => {
    const date = new Date(1_700_000_000_123);
    for (const [value, what] of [
      [date, 'a Date'],
      [new ExtData(5, new Uint8Array([1])), 'an ExtData'],
      [[1, { nested: Base64Text.of(new Uint8Array([1])) }], 'nested Base64Text'],
      [10n, 'a bigint'],
      [() => 1, 'a function'],
      [Symbol('s'), 'a symbol'],
    ] as const) {
      assert.equal(writeMessagePackFrame(value), undefined, what);
    }
    const deep: unknown[] = [];
    let inner = deep;
    for (let depth = 1; depth < 101; depth++) inner.push((inner = []));
    assert.equal(writeMessagePackFrame(deep), undefined, 'nested past the library\'s limit');
    assert.throws(() => encodeMessagePackMessage(completionWithResult('1', deep)), /Too deep objects in depth 101/);

    const withDate = completionWithResult('1', { at: date });
    assert.deepEqual(Buffer.from(encodeMessagePackMessage(withDate)), theLibrarys([3, {}, '1', 3, { at: date }]), 'a Date is the library\'s timestamp');
    assert.throws(() => encodeMessagePackMessage(completionWithResult('1', { audio: Base64Text.of(new Uint8Array([1])) })), /Base64Text is only sent as a top-level invocation argument/);
  });

  it('hands out frames of their own: a plain Uint8Array, unchanged by later writes, copied out of the slab when kept', () => {
    const first = writeMessagePackFrame(['first', 1])!;
    const copy = Buffer.from(first);
    assert.equal(Object.getPrototypeOf(first), Uint8Array.prototype, 'not a Buffer, whose slice() shares memory');
    writeMessagePackFrame(['second', 2]);
    writeMessagePackFrame({ big: 'z'.repeat(100_000) });
    assert.deepEqual(Buffer.from(first), copy, 'later writes, a large one among them, leave it as it was');
    const many = Array.from({ length: 2000 }, (_, i) => [writeMessagePackFrame([i, 'x'.repeat(i % 200)])!, [i, 'x'.repeat(i % 200)]] as const);
    for (const [frame, value] of many) assert.deepEqual(Buffer.from(frame), theLibrarys(value), 'frames written after each other, over several slabs, each intact');
    const sliced = first.slice();
    sliced[0] = 0xff;
    assert.deepEqual(Buffer.from(first), copy, 'its slice() is a copy');

    const queue = new FrameQueue();
    queue.push(first, first.byteLength);
    const kept = queue.at(0) as Uint8Array;
    assert.deepEqual(Buffer.from(kept), copy, 'the same bytes');
    assert.equal(kept.buffer.byteLength, kept.byteLength, 'in a buffer of its own, not the slab');
    const own = new Uint8Array([1, 2, 3]);
    queue.push(own, 3);
    assert.equal(queue.at(1), own, 'an array that is already its own is kept as it is');
    const other = new FrameQueue();
    other.push(first, first.byteLength);
    assert.equal(other.at(0), kept, "a group's frame kept by another member's queue: the same copy, not a second");
  });

  it('a getter that sends while a value is written gets the library, and neither message is spoilt', () => {
    let inner: Uint8Array | undefined;
    const value = {
      a: 1,
      get b(): string {
        inner = encodeMessagePackMessage(invocation('Inner', ['x']));
        return 'b';
      },
    };
    same(value, 'the outer value');
    assert.deepEqual(Buffer.from(inner!), theLibrarys([1, {}, null, 'Inner', ['x'], []]), 'the inner message');
  });

  it('refuses a map whose members change while it is written, where the library writes a wrong size; the next frame is whole', () => {
    let reads = 0;
    const shifty = {
      a: 1,
      get b(): string | undefined {
        return reads++ === 0 ? undefined : 'now here';
      },
    };
    assert.throws(() => writeMessagePackFrame(shifty), { message: "a map's members changed while it was written: 1 counted, 2 written" });
    reads = 0;
    const twoMembers = Buffer.concat([Buffer.from([0xa1, 0x61, 0x01, 0xa1, 0x62, 0xa8]), Buffer.from('now here')]);
    assert.deepEqual(Buffer.from(stock.encode(shifty)), Buffer.concat([Buffer.from([0x81]), twoMembers]), 'the library counts 1 member and writes 2');
    same({ after: 'it' }, 'the frame after it');
    let length = 0;
    const growing = [1, 2, { get x(): number { growing.push(length++); return 3; } }];
    assert.deepEqual(Buffer.from(writeMessagePackFrame(growing)!), theLibrarys([1, 2, { x: 3 }]), 'an array grown by its own getter: the elements its header counted');
  });
});
