// Domain errors carry a code; each transport maps codes at one boundary (HTTP: problem bodies,
// hub: completion errors or `Error` events). Domain modules never know about status codes.
import { randomBytes } from 'node:crypto';

export type ErrorCode =
  | 'invalid_argument'      // 400
  | 'unauthenticated'       // 401
  | 'forbidden'             // 403
  | 'not_found'             // 404
  | 'conflict'              // 409
  | 'payload_too_large'     // 413
  | 'unsupported_media'     // 415
  | 'upstream_unavailable'  // 502
  | 'unavailable';          // 503

export class DomainError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    /** Field -> messages, for validation failures. */
    readonly fields?: Readonly<Record<string, string[]>>,
    /** The failure behind it (a file system's error), for a caller that reports more than the client is told. */
    cause?: unknown,
  ) {
    super(message, cause === undefined ? undefined : { cause });
    this.name = 'DomainError';
  }
}

export const isDomainError = (e: unknown): e is DomainError => e instanceof DomainError;

/**
 * A file of the data directory the service will not use (the database, the signing key, the lock, the
 * hub instance id), left exactly
 * as found: the message names it and says what to do. The service exits 65 for it, which the unit does
 * not retry (a restart would meet the same file), and prints no stack: it is the file's fault.
 */
export class DataFileError extends Error {}

export function errorText(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/**
 * Readable text of a failed network connection (the upstream voice server, its health probe, the MQTT
 * broker), one line. Node's happy-eyeballs connect (`localhost` -> ::1 and 127.0.0.1, as a Raspberry
 * Pi's hosts file has it) fails with an AggregateError whose own message is empty: its parts say what
 * happened. A TLS failure below the certificate checks comes as OpenSSL's error queue, a code, a
 * function, a source file and a newline (`write EPROTO 80EC...:error:0A00010B:SSL
 * routines:ssl3_get_record:wrong version number:../deps/openssl/...:350:`): its reason is what it says.
 */
export function connectionErrorText(e: unknown, now: () => Date = () => new Date()): string {
  if (e instanceof AggregateError && !e.message) {
    const parts = e.errors.map((x: unknown) => connectionErrorText(x, now));
    return [...new Set(parts)].join('; ') || 'connection failed';
  }
  const text = e instanceof Error ? e.message || e.name : String(e);
  const clock = certificateDatesNote(e, now);
  if (clock) return text.trim() + clock;
  const at = text.indexOf(OPENSSL_MARK);
  const openssl = at < 0 ? null : OPENSSL_ENTRY.exec(text.slice(at + OPENSSL_MARK.length));
  if (!openssl) return text.trim();
  const [, reason, detail] = openssl;
  // Before the entry: what failed (`write EPROTO`), then the entry's thread id in hex.
  let end = at;
  while (end > 0 && HEX_DIGITS.includes(text[end - 1]!)) end--;
  const before = text.slice(0, end).trim();
  return `${before ? `${before}: ` : ''}TLS failed: ${reason}${detail!.trim() ? ` (${detail!.trim()})` : ''}`;
}

/**
 * Node's codes for a certificate outside its validity period, which is judged by this machine's clock:
 * a Raspberry Pi has no real-time clock and starts in the past (the time it saved at shutdown, or 1970)
 * until NTP sets it, and every connection to a `wss://` voice server then failed with a bare "certificate
 * is not yet valid", which reads as the server's fault. What follows the clock's reading, per code.
 */
const CERTIFICATE_DATES = new Map<unknown, string>([
  ['CERT_NOT_YET_VALID', ': if that is in the past, it is this machine that is wrong, until NTP sets its clock'],
  ['CERT_HAS_EXPIRED', ''],
]);

/** What to add to the text of `e` when it is a certificate outside its validity period: the clock that judged it. */
export function certificateDatesNote(e: unknown, now: () => Date = () => new Date()): string {
  const dates = CERTIFICATE_DATES.get((e as { code?: unknown } | null | undefined)?.code);
  return dates === undefined ? '' : ` (this machine's clock says ${now().toISOString()}${dates})`;
}

/** An entry of OpenSSL's error queue: `<thread>:error:<code>:<library>:<function>:<reason>:<file>:<line>:<detail>`. */
const OPENSSL_MARK = ':error:';
const HEX_DIGITS = '0123456789ABCDEF';
const OPENSSL_ENTRY = /^[0-9A-F]{1,8}:[^:\n]*:[^:\n]*:([^:\n]+):[^:\n]*:\d+:([^\n]*)/;

/**
 * A W3C trace-context id (the form ASP.NET Core puts in a problem's `traceId`): what a client is told
 * of an unexpected failure, and what the log line with its stack names, so the two can be matched.
 */
export function newTraceId(): string {
  const b = randomBytes(24).toString('hex');
  return `00-${b.slice(0, 32)}-${b.slice(32, 48)}-00`;
}
