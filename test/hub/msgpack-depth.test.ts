// MessagePack nesting, limited as ASP.NET Core limits it (MessagePack-CSharp's UntrustedData: 500 levels
// from where a value is read, so an invocation's arguments array may hold 500 more) and found in the
// bytes before anything is decoded: a decoder builds every level before a count of them can refuse it,
// and 60,000 levels in one 64 KiB message took @msgpack/msgpack 18 ms, a hostile client's 60 of them a
// second of the event loop. Judged item by item as a value that does not decode: the arguments fail
// their invocation, an item the reader reads closes the connection, one it never reads changes nothing.
import { Decoder, encode } from '@msgpack/msgpack';
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { writeBinaryMessage } from '../../src/hub/binary-format.js';
import { MAX_MESSAGEPACK_DEPTH } from '../../src/json-depth.js';
import { createMessagePackProtocol } from '../../src/hub/msgpack-protocol.js';
import { answersTo, startHub, type TestHub } from './helpers.js';

const CLOSE = [7, 'Connection closed with an error.', true];
const ECHOED = [3, {}, 'e', 3, 1];
const UNBOUND = (id: string): unknown[] => [3, {}, id, 1, "Failed to invoke 'BytesInfo' due to an error on the server."];
/** More levels than any limit, in a message under the test hub's 32 KiB. */
const VERY_DEEP = 30_000;

/** `levels` one-item arrays, the innermost holding 1. */
const nested = (levels: number): Buffer => Buffer.concat([Buffer.alloc(levels, 0x91), Buffer.from([0x01])]);

/** A message (fixarray) of already encoded items. */
const message = (items: Uint8Array[]): Buffer => Buffer.concat([Uint8Array.from([0x90 + items.length]), ...items]);
const framed = (items: Uint8Array[]): Uint8Array => writeBinaryMessage(message(items));
/** An invocation of BytesInfo, which answers with what it was given: 'object' for an array. */
const invocation = (id: string, args: Uint8Array, extra: Uint8Array[] = []): Uint8Array[] => [encode(1), encode({}), encode(id), encode('BytesInfo'), args, ...extra];
const oneArgument = (value: Uint8Array): Buffer => Buffer.concat([Buffer.from([0x91]), value]);

describe('MessagePack nesting is limited to 500 levels, as ASP.NET Core reads it', () => {
  let hub: TestHub;
  before(async () => {
    hub = await startHub();
  });
  after(() => hub.stop());

  it('an argument nesting 500 levels is read (the arguments array makes one more)', async () => {
    const args = oneArgument(nested(MAX_MESSAGEPACK_DEPTH));
    assert.deepEqual(await answersTo(hub, 'messagepack', framed(invocation('i', args))), [[3, {}, 'i', 3, 'object'], ECHOED]);
  });

  for (const levels of [MAX_MESSAGEPACK_DEPTH + 1, VERY_DEEP]) {
    it(`an argument nesting ${levels} levels fails that invocation only`, async () => {
      assert.deepEqual(await answersTo(hub, 'messagepack', framed(invocation('i', oneArgument(nested(levels))))), [UNBOUND('i'), ECHOED]);
    });
  }

  it('headers nesting 501 levels close the connection (the reader reads them)', async () => {
    const headers = Buffer.concat([Buffer.from([0x81, 0xa1, 0x68]), nested(MAX_MESSAGEPACK_DEPTH)]);
    assert.deepEqual(await answersTo(hub, 'messagepack', framed([encode(1), headers, encode('i'), encode('BytesInfo'), encode([1])])), [CLOSE]);
  });

  const ignored: [string, Uint8Array[]][] = [
    ['a Ping with an extra item nesting 30,000 levels', [encode(6), nested(VERY_DEEP)]],
    ['a StreamItem whose item nests 30,000 levels', [encode(2), encode({}), encode('x'), nested(VERY_DEEP)]],
    ['a CancelInvocation with an extra item nesting 30,000 levels', [encode(5), encode({}), encode('x'), nested(VERY_DEEP)]],
    ['an Invocation with a seventh item nesting 30,000 levels', invocation('i', oneArgument(encode(1)), [encode([]), nested(VERY_DEEP)])],
  ];
  for (const [name, items] of ignored) {
    it(`${name} is read and ignored`, async () => {
      const answers = await answersTo(hub, 'messagepack', framed(items));
      assert.deepEqual(answers.at(-1), ECHOED);
      assert.ok(!answers.some((a) => Array.isArray(a) && a[0] === 7), `closed: ${JSON.stringify(answers)}`);
    });
  }
});

describe('MessagePack nesting is counted in the bytes, before the decoder builds it', () => {
  /** The lengths of the inputs @msgpack/msgpack was given while `run` ran. */
  function decoded(run: () => void): number[] {
    const lengths: number[] = [];
    const original = Decoder.prototype.decode;
    Decoder.prototype.decode = function (this: Decoder, bytes: Parameters<Decoder['decode']>[0]) {
      lengths.push((bytes as Uint8Array).length);
      return original.call(this, bytes);
    };
    try {
      run();
    } finally {
      Decoder.prototype.decode = original;
    }
    return lengths;
  }

  const protocol = createMessagePackProtocol(1024 * 1024);
  const deep = nested(60_000);

  it('a message with an item past the limit never has that item decoded', () => {
    // The last: a seventh item, which no message type reads (it was decoded whole with the message).
    for (const items of [invocation('i', oneArgument(deep)), [encode(6), deep], [encode(2), encode({}), encode('x'), deep], invocation('i', oneArgument(encode(1)), [encode([]), deep])]) {
      const body = message(items);
      const lengths = decoded(() => protocol.decode(body));
      assert.ok(lengths.length > 0 && lengths.every((n) => n < deep.length), `decoded inputs of ${lengths.join(', ')} bytes; the deep item has ${deep.length}`);
    }
  });

  it('a message within the limit is decoded whole', () => {
    for (const levels of [MAX_MESSAGEPACK_DEPTH - 1, MAX_MESSAGEPACK_DEPTH]) {
      const body = message(invocation('i', oneArgument(nested(levels))));
      assert.equal(decoded(() => protocol.decode(body)).at(-1), body.length);
    }
  });
});
