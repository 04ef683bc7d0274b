// Finds where MessagePack values begin and end without decoding them (MessagePack spec "Formats"),
// so a hub message whose arguments do not decode can still be told apart from a broken envelope:
// ASP.NET reads the envelope first and binds the arguments on their own, failing only that
// invocation. Iterative, no recursion: nesting depth costs nothing, and every value takes at least
// one byte, so a header that announces more items than bytes are left fails at once.
import { isUtf8 } from 'node:buffer';
import { InvalidDataError } from './errors.js';

/**
 * Bytes that do not hold together as MessagePack. `detail` says where they break, for a text that names the
 * place itself ("Invalid MessagePack in 'arguments': ..."), so the prefix is never written twice.
 */
export class MalformedMessagePackError extends InvalidDataError {
  constructor(readonly detail: string) {
    super(`Invalid MessagePack: ${detail}`);
  }
}

const truncated = (): MalformedMessagePackError => new MalformedMessagePackError('the message ends inside a value.');

function uint(bytes: Uint8Array, at: number, size: 1 | 2 | 4): number {
  if (at + size > bytes.length) throw truncated();
  let value = 0;
  for (let i = 0; i < size; i++) value = value * 256 + bytes[at + i]!;
  return value;
}

/** A format that is the whole value: a fixint, nil, false or true. */
const isOneByteValue = (b: number): boolean => b <= 0x7f || b >= 0xe0 || b === 0xc0 || b === 0xc2 || b === 0xc3;
/** A map or an array, whatever its count. */
const isContainer = (b: number): boolean => (b >= 0x80 && b <= 0x9f) || (b >= 0xdc && b <= 0xdf);

/**
 * How many child values follow the header header() read last. A variable beside it, not a returned
 * object: a walk reads a header per value, and 60,000 small values made as many objects.
 */
let childCount = 0;

/** Bytes taken by the header at `at` itself and by its payload; how many child values follow goes to `childCount`. */
function header(bytes: Uint8Array, at: number): number {
  const b = bytes[at];
  if (b === undefined) throw truncated();
  childCount = 0;
  if (isOneByteValue(b)) return 1;
  if (b <= 0x8f) {
    childCount = 2 * (b & 0x0f);
    return 1;
  }
  if (b <= 0x9f) {
    childCount = b & 0x0f;
    return 1;
  }
  if (b <= 0xbf) return 1 + (b & 0x1f);
  switch (b) {
    case 0xc4: case 0xd9: return 2 + uint(bytes, at + 1, 1);
    case 0xc5: case 0xda: return 3 + uint(bytes, at + 1, 2);
    case 0xc6: case 0xdb: return 5 + uint(bytes, at + 1, 4);
    case 0xc7: return 3 + uint(bytes, at + 1, 1);
    case 0xc8: return 4 + uint(bytes, at + 1, 2);
    case 0xc9: return 6 + uint(bytes, at + 1, 4);
    case 0xca: return 5;
    case 0xcb: return 9;
    case 0xcc: case 0xd0: return 2;
    case 0xcd: case 0xd1: return 3;
    case 0xce: case 0xd2: return 5;
    case 0xcf: case 0xd3: return 9;
    case 0xd4: return 3;
    case 0xd5: return 4;
    case 0xd6: return 6;
    case 0xd7: return 10;
    case 0xd8: return 18;
    case 0xdc: childCount = uint(bytes, at + 1, 2); return 3;
    case 0xdd: childCount = uint(bytes, at + 1, 4); return 5;
    case 0xde: childCount = 2 * uint(bytes, at + 1, 2); return 3;
    case 0xdf: childCount = 2 * uint(bytes, at + 1, 4); return 5;
    default: throw new MalformedMessagePackError(`byte 0x${b.toString(16)} is not a format.`);
  }
}

/**
 * Walks the value that starts at `at` to its end and returns the offset just after it; `onValue`, when
 * given, sees the start and end of each value within that takes more than one byte.
 */
function walkValue(bytes: Uint8Array, at: number, onValue?: (start: number, end: number) => void): number {
  let pos = at;
  let pending = 1;
  while (pending > 0) {
    const b = bytes[pos];
    // One-byte values (small integers, nil, booleans) inline: the most numerous in a long array.
    if (b !== undefined && isOneByteValue(b)) {
      pos++;
      pending--;
      continue;
    }
    const start = pos;
    pos += header(bytes, pos);
    pending += childCount - 1;
    if (pos > bytes.length || pending > bytes.length - pos) throw truncated();
    onValue?.(start, pos);
  }
  return pos;
}

/** The offset just after the value that starts at `at`. */
export const skipValue = (bytes: Uint8Array, at: number): number => walkValue(bytes, at);

/**
 * Whether the value at `at` nests more than `max` maps and arrays (itself included), read from the
 * bytes: a decoder builds every level before anything can count them (60,000 levels in a 64 KiB
 * message cost @msgpack/msgpack 18 ms), where this walk stops at level `max` + 1. It reads one header
 * per value, one-byte values inline: it runs over every message longer than the limit.
 */
export function nestsDeeperAt(bytes: Uint8Array, at: number, max: number): boolean {
  // Children still to read at each open level, levels [0, depth); a level closes when its count is 0.
  const open: number[] = [];
  let depth = 0;
  let pos = at;
  do {
    const b = bytes[pos];
    if (b === undefined) throw truncated();
    if (depth > 0) open[depth - 1]!--;
    if (isOneByteValue(b)) pos++;
    else {
      pos += header(bytes, pos);
      if (isContainer(b)) {
        if (depth === max) return true;
        open[depth++] = childCount;
      }
    }
    while (depth > 0 && open[depth - 1] === 0) depth--;
  } while (depth > 0);
  return false;
}

/**
 * The array header at the start of `body`: how many items it announces and where the first begins.
 * Throws InvalidDataError when `body` is no array, or announces more items than bytes are left (each
 * item takes one at least), as MessagePack-CSharp's ReadArrayHeader does. Bytes after the last item
 * are never looked at: ASP.NET's reader stops at the items it reads.
 */
export function arrayHeader(body: Uint8Array): { readonly count: number; readonly first: number } {
  const b = body[0];
  if (b === undefined || !((b >= 0x90 && b <= 0x9f) || b === 0xdc || b === 0xdd)) throw new InvalidDataError('Invalid payload: expected a non-empty array.');
  const first = header(body, 0);
  if (childCount > body.length - first) throw truncated();
  return { count: childCount, first };
}

const isIntegerFormat = (b: number): boolean => b <= 0x7f || b >= 0xe0 || (b >= 0xcc && b <= 0xd3);
const isStrFormat = (b: number | undefined): boolean => b !== undefined && ((b >= 0xa0 && b <= 0xbf) || b === 0xd9 || b === 0xda || b === 0xdb);

/** Where item `index` of the array that is `body` starts; undefined when the array is broken or shorter. */
function itemOffset(body: Uint8Array, index: number): number | undefined {
  try {
    const { count, first } = arrayHeader(body);
    if (index >= count) return undefined;
    let pos = first;
    for (let i = 0; i < index; i++) pos = skipValue(body, pos);
    return pos < body.length ? pos : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Whether item `index` of the array that is `body` is written in an integer format; undefined when the
 * array is broken or shorter (the decoder reports that). A decoded 1.0 cannot be told from a decoded 1:
 * only the bytes say it came as a float, which ASP.NET's integer reads refuse.
 */
export function isIntegerItem(body: Uint8Array, index: number): boolean | undefined {
  const at = itemOffset(body, index);
  return at === undefined ? undefined : isIntegerFormat(body[at]!);
}

/**
 * Whether item `index` of the array that is `body` is an integer in Int64's range, as ReadInt64 takes
 * it (a uint64 past 2^63 - 1 overflows); undefined when the array is broken or shorter. The decoded
 * number cannot say: a double holds 2^63 - 1 and 2^63 as the same value.
 */
export function isInt64Item(body: Uint8Array, index: number): boolean | undefined {
  const at = itemOffset(body, index);
  if (at === undefined) return undefined;
  const b = body[at]!;
  return isIntegerFormat(b) && (b !== 0xcf || ((body[at + 1] ?? 0) & 0x80) === 0);
}

/**
 * Whether every key of the map that is item `index` is written as a str; undefined when it is no map,
 * or broken. The decoder makes a key 1 and a key "1" the same property: only the bytes tell them apart.
 */
export function mapKeysAreStrings(body: Uint8Array, index: number): boolean | undefined {
  const at = itemOffset(body, index);
  if (at === undefined) return undefined;
  try {
    const b = body[at]!;
    let entries: number;
    let pos: number;
    if (b >= 0x80 && b <= 0x8f) [entries, pos] = [b & 0x0f, at + 1];
    else if (b === 0xde) [entries, pos] = [uint(body, at + 1, 2), at + 3];
    else if (b === 0xdf) [entries, pos] = [uint(body, at + 1, 4), at + 5];
    else return undefined;
    for (let i = 0; i < entries; i++) {
      if (!isStrFormat(body[pos])) return false;
      pos = skipValue(body, skipValue(body, pos));
    }
    return true;
  } catch {
    return undefined;
  }
}

/** Thrown from the walk at the first str that is not UTF-8, to end it there. */
const NOT_UTF8 = Symbol('not UTF-8');

/** Bytes of a str's header, before its UTF-8 bytes; 0 when `b` begins no str. */
function strHeaderLength(b: number): number {
  if (b >= 0xa0 && b <= 0xbf) return 1;
  return b === 0xd9 ? 2 : b === 0xda ? 3 : b === 0xdb ? 5 : 0;
}

/**
 * Whether every str in the value that `bytes` holds (map keys included) is UTF-8; undefined when the
 * value does not hold together (the decoder says how). The decoder reads the bytes of a short str as
 * they come, so an overlong form (C1 8A) made an ASCII letter and a stray byte (FF) made U+00FF, where
 * .NET's UTF-8 reading knows them for what they are: not text.
 */
export function strsAreUtf8(bytes: Uint8Array): boolean | undefined {
  try {
    walkValue(bytes, 0, (start, end) => {
      const text = strHeaderLength(bytes[start]!);
      if (text > 0 && !isUtf8(bytes.subarray(start + text, end))) throw NOT_UTF8;
    });
  } catch (e) {
    return e === NOT_UTF8 ? false : undefined;
  }
  return true;
}
