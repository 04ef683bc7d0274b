// The hub's MessagePack encoder counts long strings' UTF-8 bytes natively; what it writes must be
// byte for byte what the stock @msgpack/msgpack encoder writes, whatever the string holds.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Encoder } from '@msgpack/msgpack';
import { hubMessagePackEncoder } from '../../src/hub/msgpack-encoder.js';

const stock = new Encoder({ ignoreUndefined: true });
const hub = hubMessagePackEncoder();

const same = (value: unknown, what: string): void => {
  assert.deepEqual(Buffer.from(hub.encode(value)), Buffer.from(stock.encode(value)), what);
};

test('strings of every length around the thresholds and in every script encode as the stock encoder does', () => {
  const pieces = ['a', '+', 'é', 'ж', '€', '語', '😀', '\ud800', '\udc00', '\u0000', '\u007f', '\u0080', '\u07ff', '\u0800', '\uffff'];
  for (const piece of pieces) {
    for (const length of [0, 1, 31, 32, 49, 50, 51, 52, 100, 255, 256, 300, 1000, 65_535, 65_536, 70_000]) {
      const text = piece.repeat(Math.ceil(length / piece.length)).slice(0, length);
      same(text, `${JSON.stringify(piece)} x ${length}`);
    }
  }
  // A lone surrogate in the middle of a long string, and a pair split by the 50-character boundary.
  same(`${'x'.repeat(60)}\ud83d${'y'.repeat(60)}`, 'lone high surrogate inside');
  same(`${'x'.repeat(49)}😀${'y'.repeat(10)}`, 'pair across the threshold');
});

test('whole hub messages, with long Base64 text and a string longer than the encoder\'s first buffer, match', () => {
  const base64 = Buffer.alloc(640, 7).toString('base64');
  same([1, {}, null, 'AudioResponse', [base64], []], 'AudioResponse');
  same([1, {}, null, 'AudioData', [{ sessionId: 's', format: 'opus', sampleRate: 16000, channels: 1, data: base64 }], []], 'AudioData');
  same([3, {}, '1', 3, { text: 'ü'.repeat(200_000), n: 1.5, list: [true, null, undefined, 'short'] }], 'large completion');
  // The same encoder, used again after a large message, still writes small ones correctly.
  same([1, {}, null, 'Error', ['oops'], []], 'after the large one');
});
