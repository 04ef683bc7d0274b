// The MessagePack encoder the hub writes with: @msgpack/msgpack's, except that a long string's UTF-8
// length is counted by Node (Buffer.byteLength) instead of the library's JavaScript loop over every
// character. Audio goes to devices as Base64 text with either protocol (about 860 characters per
// 20 ms of 16 kHz PCM), and that loop was 4 % of the service's CPU with 16 calls in flight. The bytes
// written are the library's own: it already writes strings of more than 50 characters with
// TextEncoder, whose output length is what Buffer.byteLength counts (both replace a lone surrogate
// by U+FFFD). The override rests on the encoder's internals, so the version is pinned and a test
// compares its output with the stock encoder's.
import { Encoder, ExtensionCodec } from '@msgpack/msgpack';
import { Base64Text } from './base64-text.js';

/** The library writes strings longer than this with TextEncoder (its TEXT_ENCODER_THRESHOLD). */
const LONG_STRING = 50;
/** A str header: one type byte and up to four length bytes. */
const MAX_STR_HEADER = 5;

interface EncoderInternals {
  bytes: Uint8Array;
  pos: number;
  ensureBufferSizeToWrite(size: number): void;
  writeStringHeader(byteLength: number): void;
  encodeString(value: string): void;
}

const textEncoder = new TextEncoder();

/**
 * Base64Text is unwrapped where it belongs (an invocation's top-level arguments); anywhere else the
 * library would write it as a map with a `text` key, so encoding fails instead, saying why.
 */
const refuseNestedBase64Text = new ExtensionCodec();
refuseNestedBase64Text.register({
  type: 0,
  encode: (value: unknown) => {
    if (value instanceof Base64Text) throw new Error('Base64Text is only sent as a top-level invocation argument');
    return null;
  },
  decode: () => {
    throw new Error('the hub does not decode with this codec');
  },
});

export function hubMessagePackEncoder(): Encoder {
  // undefined inside results and arguments is dropped, as JSON drops it, so both protocols agree.
  const encoder = new Encoder({ ignoreUndefined: true, extensionCodec: refuseNestedBase64Text });
  const internals = encoder as unknown as EncoderInternals;
  const stock = internals.encodeString;
  if (typeof stock !== 'function' || typeof internals.writeStringHeader !== 'function' || typeof internals.ensureBufferSizeToWrite !== 'function') {
    throw new Error('@msgpack/msgpack changed its encoder internals: review src/hub/msgpack-encoder.ts');
  }
  internals.encodeString = function encodeString(this: EncoderInternals, value: string): void {
    if (value.length <= LONG_STRING) {
      stock.call(this, value);
      return;
    }
    const byteLength = Buffer.byteLength(value, 'utf8');
    this.ensureBufferSizeToWrite(MAX_STR_HEADER + byteLength);
    this.writeStringHeader(byteLength);
    textEncoder.encodeInto(value, this.bytes.subarray(this.pos));
    this.pos += byteLength;
  };
  return encoder;
}
