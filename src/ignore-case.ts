// Names compared regardless of case, as ASP.NET Core compares them (StringComparer.OrdinalIgnoreCase:
// route literals, JSON property names, configuration keys, hub method names, query parameter names,
// log categories): each character by its invariant simple uppercase mapping. toLowerCase() maps
// further: the Kelvin sign (U+212A) lowers to an ASCII `k`, so `wa\u212AeWords` was taken for
// `wakeWords`, which .NET keeps apart.

/** Only ASCII: the common case, where the simple and the full mappings agree. */
const ASCII = /^[\x00-\x7f]*$/;
/** Uppercases to itself in .NET's invariant casing (to `I` in ICU's and JavaScript's). */
const DOTLESS_I = '\u0131';

/** The form two names are compared in: equal forms, equal names. Never shown; it is a key. */
export function caseKey(name: string): string {
  if (ASCII.test(name)) return name.toUpperCase();
  let out = '';
  for (const ch of name) {
    const upper = ch === DOTLESS_I ? ch : ch.toUpperCase();
    // A full mapping into more characters (ß to SS) has no simple one: the character stays.
    out += upper.length === ch.length ? upper : ch;
  }
  return out;
}
