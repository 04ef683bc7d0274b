// Which request bodies are JSON, and in which encoding, as ASP.NET Core MVC's JSON input formatter
// decides: its media types are application/json, text/json and application/*+json, and its encodings
// UTF-8 (without a charset too) and UTF-16 little-endian ("Unicode"), which it transcodes. A charset
// naming anything else is refused (415) rather than read as UTF-8.

/**
 * Charset names .NET resolves to its UTF-8 and UTF-16 encodings (Encoding.GetEncoding, without extra
 * encoding providers); MVC compares the encoding a name resolves to, so each alias counts. `utf8`,
 * without the hyphen, is no name .NET knows: MVC refuses it as it refuses an unknown charset.
 */
const UTF8_NAMES = new Set(['utf-8', 'unicode-1-1-utf-8', 'unicode-2-0-utf-8', 'x-unicode-1-1-utf-8', 'x-unicode-2-0-utf-8']);
const UTF16_NAMES = new Set(['utf-16', 'utf-16le', 'unicode', 'ucs-2', 'iso-10646-ucs-2']);

/**
 * Decoders as the formatter reads: a leading byte order mark of the encoding is skipped, and bytes that
 * are not valid in it make the body invalid instead of turning into U+FFFD in the stored values.
 */
export type BodyDecoder = InstanceType<typeof TextDecoder>;
const UTF8 = new TextDecoder('utf-8', { fatal: true });
/**
 * Made for the first UTF-16 body: Node decodes UTF-16 through an ICU converter, and opening one at start
 * read ICU's converter tables into an idle service that may never see such a body.
 */
let utf16: BodyDecoder | undefined;

/**
 * The media types a JSON body may have: MVC's application/json, text/json and application/*+json, and
 * text/*+json, since MVC takes a `+json` suffix as a subtype of its type's json. The API document
 * lists these for every request body.
 */
export const JSON_MEDIA_RANGES: readonly string[] = ['application/json', 'text/json', 'application/*+json', 'text/*+json'];

/** Each range as the check reads it, taken apart once rather than for every body. */
const JSON_MEDIA_CHECKS: ReadonlyArray<(type: string) => boolean> = JSON_MEDIA_RANGES.map((range) => {
  const [major, sub] = range.split('/') as [string, string];
  const prefix = `${major}/`;
  const suffix = sub.slice(1);
  return sub.startsWith('*') ? (type) => type.startsWith(prefix) && type.endsWith(suffix) : (type) => type === range;
});

function isJsonMediaType(type: string): boolean {
  return JSON_MEDIA_CHECKS.some((matches) => matches(type));
}

/** The decoder for a body of this Content-Type, or undefined when it is no JSON the API reads (415). */
export function jsonBodyDecoder(contentType: string): BodyDecoder | undefined {
  const [type, ...parameters] = contentType.split(';');
  if (!isJsonMediaType(type!.trim().toLowerCase())) return undefined;
  // The first charset parameter counts (MediaType.GetParameter); one without a value is none.
  let charset: string | undefined;
  for (const parameter of parameters) {
    const eq = parameter.indexOf('=');
    if (eq >= 0 && parameter.slice(0, eq).trim().toLowerCase() === 'charset') {
      charset = parameter.slice(eq + 1).trim().replace(/^"(.*)"$/, '$1').toLowerCase();
      break;
    }
  }
  if (!charset || UTF8_NAMES.has(charset)) return UTF8;
  return UTF16_NAMES.has(charset) ? (utf16 ??= new TextDecoder('utf-16le', { fatal: true })) : undefined;
}
