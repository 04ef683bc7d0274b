// The MessagePack the hub sends, written straight into a slab behind room for the length prefix and
// handed out where it was written. The library's generic encoder cost 4x JSON's for the same
// four messages of a round trip (AudioProcessed, the Completion, AudioResponse, AudioData: 5 us
// against 1.3 us), so MessagePack devices cost the service more CPU than JSON ones, where the format
// should cost less: its dispatch asks an extension codec about every object and array, counts and
// writes every short string in a JavaScript loop, and its result was copied again to add the prefix.
//
// The values are JSON's (what hub methods return and events carry) plus byte arrays, and each is
// written in the form the library picks (smallest integer form, float64 otherwise, fixstr/str8/16/32,
// fixmap/map16/32 in Object.keys order with undefined members dropped), so the bytes are the library's:
// a test compares them over every boundary. One difference, on purpose: a lone surrogate in a short
// string is written as U+FFFD, as the library already does for long strings, where it wrote the
// surrogate's own three bytes, which are not UTF-8 and which strict readers (.NET's among them) refuse.
// Anything else (a Date, the library's ExtData, Base64Text inside a value, a bigint, a function, a
// value nested past the library's depth limit) is not written here: `undefined` is returned and the
// caller encodes with the library, which writes it or throws as before.
import { ExtData } from '@msgpack/msgpack';
import { Base64Text } from './base64-text.js';
import { MAX_VARINT_BYTES, putVarInt, varIntLength } from './binary-format.js';

/** The library's default maxDepth: deeper values are the library's to refuse. */
const MAX_DEPTH = 100;
/**
 * Frames are written one after another into a slab of this size and handed out as views of it: a
 * typed array of its own costs ten times more to allocate than a frame takes to write (~600 ns), and
 * a copy out of Node's pool about half as much again. A frame lives until its turn's writes go out; one
 * kept longer (a stateful connection's replay) is copied out by whoever keeps it (frame-queue.ts), so a
 * slab is let go once its frames are sent. A frame larger than the rest of its slab moves to a new
 * slab, as large as it needs; one larger than SLAB_BYTES is not written into again.
 */
const SLAB_BYTES = 64 * 1024;

/** A frame starts in a new slab when less than this is left of the current one: most frames are larger. */
const LEAST_ROOM = 256;
/** Strings shorter than this are tried as ASCII first: the str8 form's limit. */
const SHORT_STRING = 0x100;
/** Thrown inside a write for a value this writer leaves to the library. */
const NOT_OURS = Symbol('not written here');

/** Empty until the first frame: a service without MessagePack clients never allocates one. */
let slab = Buffer.alloc(0);
/** Where the frame being written starts in `slab` (room for the longest length prefix first). */
let start = 0;
/** Where the next byte goes. */
let pos = 0;
/** A write in progress: a getter or proxy that sends a message from inside it gets the library's encoder. */
let writing = false;

/**
 * The frame for `value` (MessagePack, prefixed by its length as the binary hub protocol frames it), as
 * a Uint8Array view (not a Buffer, whose slice() would share the slab rather than copy); undefined when
 * the library must encode it.
 */
export function writeMessagePackFrame(value: unknown): Uint8Array | undefined {
  if (writing) return undefined;
  writing = true;
  if (slab.length - pos < LEAST_ROOM) {
    slab = Buffer.allocUnsafeSlow(SLAB_BYTES);
    pos = 0;
  }
  start = pos;
  pos += MAX_VARINT_BYTES;
  try {
    writeValue(value, 1);
    const length = pos - start - MAX_VARINT_BYTES;
    const from = start + MAX_VARINT_BYTES - varIntLength(length);
    putVarInt(slab, length, from);
    return new Uint8Array(slab.buffer, slab.byteOffset + from, pos - from);
  } catch (e) {
    // What was written of it is written over by the next frame.
    pos = start;
    if (e === NOT_OURS) return undefined;
    throw e;
  } finally {
    writing = false;
    if (slab.length > SLAB_BYTES) {
      slab = Buffer.alloc(0);
      pos = 0;
    }
  }
}

/** Makes room for `bytes` more: a frame that does not fit moves, as written so far, to a slab of its own. */
function room(bytes: number): void {
  if (pos + bytes <= slab.length) return;
  const written = pos - start;
  const next = Buffer.allocUnsafeSlow(Math.max(SLAB_BYTES, 2 * (written + bytes)));
  slab.copy(next, 0, start, pos);
  slab = next;
  start = 0;
  pos = written;
}

function writeValue(value: unknown, depth: number): void {
  if (depth > MAX_DEPTH) throw NOT_OURS;
  if (value === null || value === undefined) {
    room(1);
    slab[pos++] = 0xc0;
  } else if (typeof value === 'string') writeString(value);
  else if (typeof value === 'number') writeNumber(value);
  else if (typeof value === 'boolean') {
    room(1);
    slab[pos++] = value ? 0xc3 : 0xc2;
  } else if (typeof value !== 'object') throw NOT_OURS;
  else if (Array.isArray(value)) writeArray(value, depth);
  else if (ArrayBuffer.isView(value)) writeBinary(value);
  // What the library's extensions write (a Date is a timestamp) or refuse (msgpack-encoder.ts); any
  // other object is a map of its own enumerable keys, as the library writes it.
  else if (value instanceof Date || value instanceof ExtData || value instanceof Base64Text) throw NOT_OURS;
  else writeMap(value as Record<string, unknown>, depth);
}

/** The type byte and the big-endian size after it: the smallest of the three forms that holds `size`. */
function writeHeader(size: number, fix: number, fixLimit: number, form16: number): void {
  room(5);
  if (size < fixLimit) slab[pos++] = fix + size;
  else if (size < 0x10000) {
    slab[pos++] = form16;
    slab.writeUInt16BE(size, pos);
    pos += 2;
  } else {
    slab[pos++] = form16 + 1;
    slab.writeUInt32BE(size, pos);
    pos += 4;
  }
}

function writeString(value: string): void {
  const n = value.length;
  // Short ASCII (every key, target, session id, invocation id): one pass in JavaScript writes and checks
  // it, cheaper than the two calls into Node below. A non-ASCII character sends it there after all.
  if (n < SHORT_STRING) {
    const header = n < 32 ? 1 : 2;
    room(header + n);
    let at = pos + header;
    let i = 0;
    for (; i < n; i++) {
      const c = value.charCodeAt(i);
      if (c >= 0x80) break;
      slab[at++] = c;
    }
    if (i === n) {
      if (header === 1) slab[pos] = 0xa0 + n;
      else {
        slab[pos] = 0xd9;
        slab[pos + 1] = n;
      }
      pos = at;
      return;
    }
  }
  const bytes = Buffer.byteLength(value, 'utf8');
  room(5 + bytes);
  if (bytes < 32) slab[pos++] = 0xa0 + bytes;
  else if (bytes < 0x100) {
    slab[pos++] = 0xd9;
    slab[pos++] = bytes;
  } else writeHeader(bytes, 0, 0, 0xda);
  pos += slab.write(value, pos, bytes, 'utf8');
}

function writeNumber(value: number): void {
  room(9);
  if (Number.isSafeInteger(value)) {
    if (value >= 0) {
      if (value < 0x80) slab[pos++] = value;
      else if (value < 0x100) {
        slab[pos++] = 0xcc;
        slab[pos++] = value;
      } else if (value < 0x10000) {
        slab[pos++] = 0xcd;
        pos = slab.writeUInt16BE(value, pos);
      } else if (value < 0x100000000) {
        slab[pos++] = 0xce;
        pos = slab.writeUInt32BE(value, pos);
      } else {
        slab[pos++] = 0xcf;
        pos = slab.writeUInt32BE(Math.floor(value / 0x100000000), pos);
        pos = slab.writeUInt32BE(value >>> 0, pos);
      }
    } else if (value >= -0x20) slab[pos++] = 0xe0 | (value + 0x20);
    else if (value >= -0x80) {
      slab[pos++] = 0xd0;
      pos = slab.writeInt8(value, pos);
    } else if (value >= -0x8000) {
      slab[pos++] = 0xd1;
      pos = slab.writeInt16BE(value, pos);
    } else if (value >= -0x80000000) {
      slab[pos++] = 0xd2;
      pos = slab.writeInt32BE(value, pos);
    } else {
      // Two's complement over 64 bits: the high word is the floor, the low word what remains.
      slab[pos++] = 0xd3;
      pos = slab.writeInt32BE(Math.floor(value / 0x100000000), pos);
      pos = slab.writeUInt32BE(value >>> 0, pos);
    }
  } else {
    slab[pos++] = 0xcb;
    pos = slab.writeDoubleBE(value, pos);
  }
}

function writeArray(value: readonly unknown[], depth: number): void {
  // The length the header says, whatever a getter does to the array on the way.
  const n = value.length;
  writeHeader(n, 0x90, 16, 0xdc);
  for (let i = 0; i < n; i++) writeValue(value[i], depth + 1);
}

function writeMap(value: Record<string, unknown>, depth: number): void {
  const keys = Object.keys(value);
  let size = 0;
  for (const key of keys) if (value[key] !== undefined) size++;
  writeHeader(size, 0x80, 16, 0xde);
  let written = 0;
  for (const key of keys) {
    const member = value[key];
    if (member === undefined) continue;
    writeString(key);
    writeValue(member, depth + 1);
    written++;
  }
  // A getter that answered undefined once and a value the other time: the header says another size, and
  // the library, which also reads each member twice, would write the same wrong frame.
  if (written !== size) throw new Error(`a map's members changed while it was written: ${size} counted, ${written} written`);
}

function writeBinary(value: ArrayBufferView): void {
  const size = value.byteLength;
  room(5 + size);
  if (size < 0x100) {
    slab[pos++] = 0xc4;
    slab[pos++] = size;
  } else writeHeader(size, 0, 0, 0xc5);
  slab.set(new Uint8Array(value.buffer, value.byteOffset, size), pos);
  pos += size;
}
