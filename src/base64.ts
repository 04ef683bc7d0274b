// Strict Base64, the one rule for every Base64 text the service accepts (audio from devices, the upstream
// server's answers, `bytes` hub parameters). Buffer.from(text, 'base64') is lenient: it skips characters
// outside the alphabet and takes the URL-safe `-` and `_`, so garbage would decode to some bytes and be
// forwarded. Accepted: the standard alphabet in whole groups of four, with `=` or `==` padding the last,
// and, as .NET's Convert.FromBase64String and Base64.DecodeFromUtf8 take them, spaces, tabs, CR and LF
// anywhere (MIME encoders such as Python's base64.encodebytes break lines every 76 characters).
//
// Checked with a table rather than a regular expression: the expression's repeated four-character group
// ran 2-3x slower, and every audio packet is checked once on the way in and once on the way back.

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
const PAD = 0x3d; // '='

const DATA = 1;
const SPACE = 2;
/** DATA for each ASCII code of the alphabet, SPACE for the white space that is skipped, 0 elsewhere. */
const KIND = new Uint8Array(128);
for (let i = 0; i < ALPHABET.length; i++) KIND[ALPHABET.charCodeAt(i)] = DATA;
for (const c of ' \t\r\n') KIND[c.charCodeAt(0)] = SPACE;

/** True when `text` is strict Base64 (the empty string is: callers that need bytes say so themselves). */
export function isBase64(text: string): boolean {
  return isUnbrokenBase64(text) || isSpacedBase64(text);
}

/** Without white space: what encoders write, checked by position alone (every audio packet takes this path). */
function isUnbrokenBase64(text: string): boolean {
  const length = text.length;
  if ((length & 3) !== 0) return false;
  let end = length;
  if (length > 0 && text.charCodeAt(length - 1) === PAD) end = text.charCodeAt(length - 2) === PAD ? length - 2 : length - 1;
  for (let i = 0; i < end; i++) {
    const code = text.charCodeAt(i);
    if (code > 127 || KIND[code] !== DATA) return false;
  }
  return true;
}

function isSpacedBase64(text: string): boolean {
  let significant = 0;
  let padding = 0;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    const kind = code > 127 ? 0 : KIND[code]!;
    if (kind === SPACE) continue;
    if (code === PAD) {
      if (++padding > 2) return false;
    } else if (kind !== DATA || padding > 0) {
      return false;
    }
    significant++;
  }
  return (significant & 3) === 0;
}

/** The bytes of strict Base64 `text`; undefined when it is not. */
export function decodeBase64(text: string): Buffer | undefined {
  return isBase64(text) ? Buffer.from(text, 'base64') : undefined;
}

/** The alphabet index of each ASCII code of the alphabet (0 elsewhere). */
const VALUE = new Uint8Array(128);
for (let i = 0; i < ALPHABET.length; i++) VALUE[ALPHABET.charCodeAt(i)] = i;

/**
 * True when strict Base64 `text`, which decodes to `byteLength` bytes, is the one encoding of them: no
 * white space (the text is no longer than the encoding), and the bits that padding leaves unused in its
 * last character are zero, as every encoder writes them. `AB==` and `AA==` decode to the same byte, and
 * decoders may refuse the first (RFC 4648, 3.5; .NET 9's Base64.DecodeFromUtf8, which its JSON reader
 * uses for byte[], does), so text passed on as received must be `AA==`.
 */
export function isCanonicalBase64(text: string, byteLength: number): boolean {
  const length = text.length;
  if (length !== Math.ceil(byteLength / 3) * 4) return false;
  if (length === 0 || text.charCodeAt(length - 1) !== PAD) return true;
  return text.charCodeAt(length - 2) === PAD
    ? (VALUE[text.charCodeAt(length - 3)]! & 0x0f) === 0
    : (VALUE[text.charCodeAt(length - 2)]! & 0x03) === 0;
}
