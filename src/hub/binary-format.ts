// Binary framing of the MessagePack hub protocol (SignalR's hub protocol, binary encoding): each message is
// prefixed by its length as a VarInt, 7 bits per byte, least significant group first, at most
// 5 bytes, at most 0x7FFFFFFF (the 5th byte may only carry 3 bits).
import { InvalidDataError, tooLarge } from './errors.js';
import type { ReadMessage } from './text-format.js';

export const MAX_VARINT_BYTES = 5;

export type VarIntRead = { readonly value: number; readonly length: number } | 'incomplete';

/** Reads a length prefix at `offset`; 'incomplete' when the buffer ends inside it. */
export function readVarInt(buffer: Uint8Array, offset = 0): VarIntRead {
  let value = 0;
  for (let i = 0; i < MAX_VARINT_BYTES; i++) {
    const byte = buffer[offset + i];
    if (byte === undefined) return 'incomplete';
    if (i === MAX_VARINT_BYTES - 1) {
      if (byte & 0x80) throw new InvalidDataError('Messages over 2GB in size are not supported (length prefix too long).');
      if (byte > 0x07) throw new InvalidDataError('Messages over 2GB in size are not supported.');
    }
    // Multiplication instead of shifts: `<<` is 32-bit signed in JavaScript.
    value += (byte & 0x7f) * 2 ** (7 * i);
    if ((byte & 0x80) === 0) return { value, length: i + 1 };
  }
  // Unreachable: the 5th byte either ends the prefix or throws.
  throw new InvalidDataError('Invalid length prefix.');
}

export function writeVarInt(value: number): Uint8Array {
  const out = new Uint8Array(varIntLength(value));
  putVarInt(out, value);
  return out;
}

/** Prefixes one encoded message with its length, in one allocation (this runs for every message sent). */
export function writeBinaryMessage(body: Uint8Array): Uint8Array {
  const prefixLength = varIntLength(body.length);
  const out = new Uint8Array(prefixLength + body.length);
  putVarInt(out, body.length);
  out.set(body, prefixLength);
  return out;
}

export function varIntLength(value: number): number {
  if (!Number.isInteger(value) || value < 0 || value > 0x7fffffff) throw new RangeError(`length ${value} cannot be encoded`);
  let length = 1;
  while (value >= 2 ** (7 * length)) length++;
  return length;
}

/** Writes `value` at `offset` in `out`, which holds at least varIntLength(value) bytes from there. */
export function putVarInt(out: Uint8Array, value: number, offset = 0): void {
  let rest = value;
  let i = offset;
  do {
    const group = rest & 0x7f;
    rest = Math.floor(rest / 128);
    out[i++] = rest > 0 ? group | 0x80 : group;
  } while (rest > 0);
}

/**
 * Reads the length-prefixed message that starts at `offset`; undefined while its prefix or body is
 * incomplete. A message counts with its prefix against `maxMessageSize`; an over-long message is
 * rejected as soon as its prefix is read, without waiting for its body.
 */
export function readBinaryMessage(buffer: Uint8Array, offset: number, maxMessageSize: number): ReadMessage | undefined {
  const prefix = readVarInt(buffer, offset);
  if (prefix === 'incomplete') return undefined;
  const total = prefix.length + prefix.value;
  if (total > maxMessageSize) throw tooLarge(maxMessageSize);
  if (offset + total > buffer.length) return undefined;
  return { body: buffer.subarray(offset + prefix.length, offset + total), end: offset + total };
}

/**
 * Every complete message of `buffer` at once, and the incomplete tail: for the client side (tests and
 * tools reading what the server sent). The server itself reads one message at a time.
 */
export function splitBinaryMessages(buffer: Uint8Array, maxMessageSize: number): { messages: Uint8Array[]; rest: Uint8Array } {
  const messages: Uint8Array[] = [];
  let offset = 0;
  for (let next = readBinaryMessage(buffer, 0, maxMessageSize); next; next = readBinaryMessage(buffer, offset, maxMessageSize)) {
    messages.push(next.body);
    offset = next.end;
  }
  return { messages, rest: buffer.subarray(offset) };
}
