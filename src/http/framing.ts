// HTTP/1.1 message framing as RFC 9112 asks, checked on the header lines uWS hands us before anything
// reads a body or routes: one Host, at most one well-formed Content-Length, a Transfer-Encoding that is
// exactly `chunked` and never beside a Content-Length, and bounded request heads. A request that fails
// here has ambiguous framing (two parsers could split the stream differently: request smuggling behind
// a proxy), so it is answered and the connection closed; nothing after it on the connection runs.
import type { HttpRequest } from 'uWebSockets.js';
import { sameIgnoringCase } from '../ignore-case.js';
import { trimOws } from '../trim.js';

/** Kestrel's `MaxRequestLineSize` default: a longer request target is a 414. */
export const MAX_REQUEST_TARGET_BYTES = 8 * 1024;
/** Kestrel's `MaxRequestHeadersTotalSize` default: larger header fields in all are a 431. */
export const MAX_HEADER_FIELDS_BYTES = 32 * 1024;

/** Every header line in arrival order, names lower-cased by uWS; repeated names stay separate lines. */
export type HeaderLines = ReadonlyArray<readonly [string, string]>;

export function headerLines(req: HttpRequest): Array<[string, string]> {
  const lines: Array<[string, string]> = [];
  req.forEach((name, value) => {
    lines.push([name, value]);
  });
  return lines;
}

/**
 * One value per name, as the rest of the pipeline reads them. Repeated lines are joined with ", " (RFC
 * 9110 section 5.3): a duplicated singleton such as Authorization then fails its own syntax check instead
 * of one layer reading the first copy and another the last.
 */
export function joinHeaderLines(lines: HeaderLines): Record<string, string> {
  const headers: Record<string, string> = Object.create(null) as Record<string, string>;
  // A read, not `in`: on this prototype-less (dictionary) object `in` went to V8's runtime for every
  // line, 3.6 % of a status update's CPU. Values are strings, so undefined means the name is new.
  for (const [name, value] of lines) {
    const before = headers[name];
    headers[name] = before === undefined ? value : `${before}, ${value}`;
  }
  return headers;
}

/**
 * Whether the client asked for the connection to close after this answer: `close` among the options of
 * the Connection header (its lines joined, joinHeaderLines), in any letter case (RFC 9112 section 9.6). uWS
 * honours only a lone `close` (uwsClosesAfter), so `keep-alive, close` or LWP's `TE, close` kept the
 * connection open until its idle timeout.
 */
export function asksToClose(connection: string | undefined): boolean {
  return connection !== undefined && hasOption(connection, 'close');
}

/** Whether a Connection value lists `option`, in any letter case (RFC 9110 section 7.6.1). */
export const hasOption = (connection: string, option: string): boolean => connection.split(',').some((o) => sameIgnoringCase(trimOws(o), option));

/**
 * Whether uWS closes the connection after this request's answer by its own reading of the request: it
 * takes a first Connection line of five characters, whatever they are, for `close` (both addons the
 * builds ship), and then writes no `Connection: close` of its own. The answer must say it (RFC 9112
 * section 9.6; Kestrel does), so endBounded writes it.
 */
export const uwsClosesAfter = (req: HttpRequest): boolean => req.getHeader('connection').length === 5;

export interface FramingError {
  readonly status: 400 | 414 | 431;
  readonly detail: string;
}

const DIGITS = /^[0-9]+$/;

/** Undefined when the request may proceed; otherwise what to answer before closing. */
export function checkFraming(target: string, lines: HeaderLines): FramingError | undefined {
  if (Buffer.byteLength(target) > MAX_REQUEST_TARGET_BYTES) {
    return { status: 414, detail: `The request target is longer than ${MAX_REQUEST_TARGET_BYTES} bytes.` };
  }
  let fieldBytes = 0;
  const hosts: string[] = [];
  const lengths: string[] = [];
  const codings: string[] = [];
  let upgrade = false;
  for (const [name, value] of lines) {
    // Name, ": ", value and CRLF, as they were on the wire (less any OWS uWS trimmed).
    fieldBytes += name.length + Buffer.byteLength(value) + 4;
    if (name === 'host') hosts.push(value);
    else if (name === 'content-length') lengths.push(value);
    else if (name === 'transfer-encoding') codings.push(value);
    else if (name === 'upgrade' || (name === 'connection' && hasOption(value, 'upgrade'))) upgrade = true;
  }
  if (fieldBytes > MAX_HEADER_FIELDS_BYTES) {
    return { status: 431, detail: `The request header fields are larger than ${MAX_HEADER_FIELDS_BYTES} bytes in all.` };
  }
  // RFC 9112 section 3.2: a request without Host, or with more than one, is a 400.
  if (hosts.length !== 1) return { status: 400, detail: 'The request must carry exactly one Host header.' };
  if (lengths.length > 0 && codings.length > 0) {
    // Section 6.1: such a message "ought to be handled as an error"; answering it closes the connection.
    return { status: 400, detail: 'A request must not carry both Content-Length and Transfer-Encoding.' };
  }
  if (lengths.length > 1) return { status: 400, detail: 'The request carries more than one Content-Length header.' };
  if (lengths.length === 1 && !DIGITS.test(trimOws(lengths[0]!))) {
    // Section 6.3: an invalid Content-Length (a sign, a list, hex, empty) is unrecoverable framing.
    return { status: 400, detail: 'The Content-Length header is not a decimal number of bytes.' };
  }
  if (codings.length > 1 || (codings.length === 1 && !sameIgnoringCase(trimOws(codings[0]!), 'chunked'))) {
    // Chunked is the only transfer coding this server decodes, and it may be applied once (section 7).
    return { status: 400, detail: 'Transfer-Encoding must be exactly "chunked".' };
  }
  if (upgrade && (codings.length > 0 || (lengths.length === 1 && Number(trimOws(lengths[0]!)) > 0))) {
    // Kestrel's UpgradeRequestCannotHavePayload: what follows an upgrade's head is the new protocol's, not a
    // body. uWS read one behind a refused WebSocket upgrade to its end, any size, the connection kept.
    return { status: 400, detail: 'A request that asks to upgrade (Upgrade, or Connection: upgrade) must not carry a body.' };
  }
  return undefined;
}
