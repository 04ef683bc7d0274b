// Finds where MessagePack values begin and end without decoding them (MessagePack spec "Formats"),
// so a hub message whose arguments do not decode can still be told apart from a broken envelope:
// ASP.NET reads the envelope first and binds the arguments on their own, failing only that
// invocation. Iterative, no recursion: nesting depth costs nothing, and every value takes at least
// one byte, so a header that announces more items than bytes are left fails at once.
import { InvalidDataError } from './errors.js';

const truncated = (): InvalidDataError => new InvalidDataError('Invalid MessagePack: the message ends inside a value.');

function uint(bytes: Uint8Array, at: number, size: 1 | 2 | 4): number {
  if (at + size > bytes.length) throw truncated();
  let value = 0;
  for (let i = 0; i < size; i++) value = value * 256 + bytes[at + i]!;
  return value;
}

/** Bytes taken by the header at `at` itself and by its payload, and how many child values follow. */
function header(bytes: Uint8Array, at: number): { size: number; children: number } {
  const b = bytes[at];
  if (b === undefined) throw truncated();
  if (b <= 0x7f || b >= 0xe0 || b === 0xc0 || b === 0xc2 || b === 0xc3) return { size: 1, children: 0 };
  if (b <= 0x8f) return { size: 1, children: 2 * (b & 0x0f) };
  if (b <= 0x9f) return { size: 1, children: b & 0x0f };
  if (b <= 0xbf) return { size: 1 + (b & 0x1f), children: 0 };
  switch (b) {
    case 0xc4: case 0xd9: return { size: 2 + uint(bytes, at + 1, 1), children: 0 };
    case 0xc5: case 0xda: return { size: 3 + uint(bytes, at + 1, 2), children: 0 };
    case 0xc6: case 0xdb: return { size: 5 + uint(bytes, at + 1, 4), children: 0 };
    case 0xc7: return { size: 3 + uint(bytes, at + 1, 1), children: 0 };
    case 0xc8: return { size: 4 + uint(bytes, at + 1, 2), children: 0 };
    case 0xc9: return { size: 6 + uint(bytes, at + 1, 4), children: 0 };
    case 0xca: return { size: 5, children: 0 };
    case 0xcb: return { size: 9, children: 0 };
    case 0xcc: case 0xd0: return { size: 2, children: 0 };
    case 0xcd: case 0xd1: return { size: 3, children: 0 };
    case 0xce: case 0xd2: return { size: 5, children: 0 };
    case 0xcf: case 0xd3: return { size: 9, children: 0 };
    case 0xd4: return { size: 3, children: 0 };
    case 0xd5: return { size: 4, children: 0 };
    case 0xd6: return { size: 6, children: 0 };
    case 0xd7: return { size: 10, children: 0 };
    case 0xd8: return { size: 18, children: 0 };
    case 0xdc: return { size: 3, children: uint(bytes, at + 1, 2) };
    case 0xdd: return { size: 5, children: uint(bytes, at + 1, 4) };
    case 0xde: return { size: 3, children: 2 * uint(bytes, at + 1, 2) };
    case 0xdf: return { size: 5, children: 2 * uint(bytes, at + 1, 4) };
    default: throw new InvalidDataError(`Invalid MessagePack: byte 0x${b.toString(16)} is not a format.`);
  }
}

/** The offset just after the value that starts at `at`. */
export function skipValue(bytes: Uint8Array, at: number): number {
  let pos = at;
  let pending = 1;
  while (pending > 0) {
    const { size, children } = header(bytes, pos);
    pos += size;
    pending += children - 1;
    if (pos > bytes.length || pending > bytes.length - pos) throw truncated();
  }
  return pos;
}

/**
 * The byte ranges of the items of the array that is `body`. Throws InvalidDataError when the
 * structure is broken: truncated, a byte that is no format, or bytes after the array.
 */
export function arrayItems(body: Uint8Array): [number, number][] {
  const { size, children } = header(body, 0);
  const b = body[0]!;
  if (!((b >= 0x90 && b <= 0x9f) || b === 0xdc || b === 0xdd)) throw new InvalidDataError('Invalid payload: expected a non-empty array.');
  const ranges: [number, number][] = [];
  let pos = size;
  for (let i = 0; i < children; i++) {
    const end = skipValue(body, pos);
    ranges.push([pos, end]);
    pos = end;
  }
  if (pos !== body.length) throw new InvalidDataError('Invalid MessagePack: bytes after the message.');
  return ranges;
}

const isIntegerFormat = (b: number): boolean => b <= 0x7f || b >= 0xe0 || (b >= 0xcc && b <= 0xd3);
const isStrFormat = (b: number | undefined): boolean => b !== undefined && ((b >= 0xa0 && b <= 0xbf) || b === 0xd9 || b === 0xda || b === 0xdb);

/** Where item `index` of the array that is `body` starts; undefined when the array is broken or shorter. */
function itemOffset(body: Uint8Array, index: number): number | undefined {
  const b = body[0];
  if (b === undefined || !((b >= 0x90 && b <= 0x9f) || b === 0xdc || b === 0xdd)) return undefined;
  try {
    const { size, children } = header(body, 0);
    if (index >= children) return undefined;
    let pos = size;
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
