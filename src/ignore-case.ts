// Names compared regardless of case, as ASP.NET Core compares them (StringComparer.OrdinalIgnoreCase:
// route literals, JSON property names, configuration keys, hub method names, query parameter names,
// log categories): each character by its simple uppercase mapping (ICU's u_toupper, which .NET's ordinal
// casing table is made of). toLowerCase() maps further: the Kelvin sign (U+212A) lowers to an ASCII `k`,
// so `wa\u212AeWords` was taken for `wakeWords`, which .NET keeps apart.

/** Only ASCII: the common case, where the simple and the full mappings agree. */
const ASCII = /^[\x00-\x7f]*$/;
/**
 * Uppercase to themselves in .NET's ordinal casing, which sets them apart from ICU's mapping so that no
 * ordinal comparison acts Turkish: the dotless i (ICU: `I`) and the long s (ICU: `S`).
 */
const KEPT = new Set(['\u0131', '\u017f']);
/**
 * The characters whose simple uppercase mapping is one character while their full one, which
 * toUpperCase() gives, is two: the Greek small letters with ypogegrammeni, whose simple mapping is the
 * capital with prosgegrammeni (U+1F80 to U+1F88; the full mapping U+1F08 U+0399 is no single character).
 */
const SIMPLE_UPPER = new Map<string, string>([
  ...[0x1f80, 0x1f90, 0x1fa0].flatMap((first) => Array.from({ length: 8 }, (_, i) => [first + i, first + i + 8] as const)),
  [0x1fb3, 0x1fbc] as const,
  [0x1fc3, 0x1fcc] as const,
  [0x1ff3, 0x1ffc] as const,
].map(([from, to]) => [String.fromCodePoint(from), String.fromCodePoint(to)]));

/**
 * The supplementary characters .NET's ordinal casing uppercases (its OrdinalCasing.ToUpperSurrogate
 * names these small letters: Deseret, Osage, Old Hungarian, Warang Citi, Medefaidrin, Adlam); every
 * other one stays, though toUpperCase() maps some (Vithkuqi, U+10597 to U+10570).
 */
const SUPPLEMENTARY_SMALL: ReadonlyArray<readonly [number, number]> = [
  [0x10428, 0x1044f], [0x104d8, 0x104fb], [0x10cc0, 0x10cf2], [0x118c0, 0x118df], [0x16e60, 0x16e7f], [0x1e922, 0x1e943],
];

/** The form two names are compared in: equal forms, equal names. Never shown; it is a key. */
export function caseKey(name: string): string {
  if (ASCII.test(name)) return name.toUpperCase();
  let out = '';
  for (const ch of name) {
    const code = ch.codePointAt(0)!;
    if (KEPT.has(ch)) out += ch;
    else if (SIMPLE_UPPER.has(ch)) out += SIMPLE_UPPER.get(ch)!;
    else if (code > 0xffff) out += SUPPLEMENTARY_SMALL.some(([first, last]) => code >= first && code <= last) ? ch.toUpperCase() : ch;
    else {
      const upper = ch.toUpperCase();
      // Any other full mapping into more characters (ß to SS) has no simple one: the character stays.
      out += upper.length === ch.length ? upper : ch;
    }
  }
  return out;
}

/** Whether two names are one regardless of case, as OrdinalIgnoreCase compares them (also HTTP's tokens: `chunked`, `close`). */
export const sameIgnoringCase = (a: string, b: string): boolean => caseKey(a) === caseKey(b);
