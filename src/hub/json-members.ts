// What JSON.parse hides of a hub message's text and ASP.NET Core's Utf8JsonReader still sees: how a
// number is written (GetInt32 and GetInt64 refuse `1.0` and `1e0`, which JSON.parse makes 1) and a
// property written twice (the reader checks each occurrence as it meets it; JSON.parse keeps the
// last). The members of the message's own object are found in its text, skipping what they hold; the
// same scanning finds where a record's leading object ends (json-leading-object.ts).

const isSpace = (c: number): boolean => c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d;

/** The offset of the first character at or after `i` that is no JSON white space. */
export function skipJsonSpace(text: string, i: number): number {
  while (i < text.length && isSpace(text.charCodeAt(i))) i++;
  return i;
}

/** The offset after the string whose opening quote is at `i`; strings are skipped by search, not char by char. */
function endOfString(text: string, i: number): number {
  let from = i + 1;
  for (;;) {
    const quote = text.indexOf('"', from);
    if (quote < 0) return text.length;
    let backslashes = 0;
    while (text.charCodeAt(quote - 1 - backslashes) === 0x5c) backslashes++;
    if (backslashes % 2 === 0) return quote + 1;
    from = quote + 1;
  }
}

/**
 * The offset after the value that starts at `i`: a string, an object or array (by its brackets outside
 * strings), or a literal; the text's length when it does not end.
 */
export function endOfJsonValue(text: string, i: number): number {
  const first = text.charCodeAt(i);
  if (first === 0x22) return endOfString(text, i);
  if (first === 0x7b || first === 0x5b) {
    let depth = 0;
    while (i < text.length) {
      const c = text.charCodeAt(i);
      if (c === 0x22) {
        i = endOfString(text, i);
        continue;
      }
      if (c === 0x7b || c === 0x5b) depth++;
      else if (c === 0x7d || c === 0x5d) {
        depth--;
        if (depth === 0) return i + 1;
      }
      i++;
    }
    return i;
  }
  while (i < text.length) {
    const c = text.charCodeAt(i);
    if (c === 0x2c || c === 0x7d || c === 0x5d || isSpace(c)) return i;
    i++;
  }
  return i;
}

/** One member of the message's object: its name (escapes resolved, as the reader compares names) and its value's text. */
export interface JsonMember {
  readonly name: string;
  readonly value: string;
}

/**
 * The members of the object `text` starts with, in the order written, duplicates included. `text` is
 * one JSON.parse (or the leading-object reading) accepted, so it is well-formed up to the object's end;
 * what follows the object is not looked at.
 */
export function topLevelMembers(text: string): JsonMember[] {
  const members: JsonMember[] = [];
  let i = skipJsonSpace(text, 0);
  if (text.charCodeAt(i) !== 0x7b) return members;
  i++;
  for (;;) {
    i = skipJsonSpace(text, i);
    if (text.charCodeAt(i) !== 0x22) return members;
    const nameEnd = endOfString(text, i);
    const raw = text.slice(i + 1, nameEnd - 1);
    const name = raw.includes('\\') ? (JSON.parse(text.slice(i, nameEnd)) as string) : raw;
    i = skipJsonSpace(text, skipJsonSpace(text, nameEnd) + 1);
    const end = endOfJsonValue(text, i);
    members.push({ name, value: text.slice(i, end) });
    i = skipJsonSpace(text, end);
    if (text.charCodeAt(i) !== 0x2c) return members;
    i++;
  }
}

/** An integer as GetInt32/GetInt64 take it: digits, a minus at most, no fraction, no exponent. */
export const isIntegerToken = (value: string): boolean => /^-?\d+$/.test(value);

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;
/** Digits of the longest Int64 (9223372036854775807); JSON writes no leading zeros. */
const INT64_DIGITS = 19;

/**
 * An integer in Int64's range, as GetInt64 takes it. The parsed number cannot say: a double holds
 * 9223372036854775807 (valid) and 9223372036854775808 (not) as the same value.
 */
export function isInt64Token(value: string): boolean {
  if (!isIntegerToken(value)) return false;
  const digits = value.charCodeAt(0) === 0x2d ? value.length - 1 : value.length;
  if (digits !== INT64_DIGITS) return digits < INT64_DIGITS;
  const n = BigInt(value);
  return n >= INT64_MIN && n <= INT64_MAX;
}
