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
 * A file of the data directory the service will not use (the database, the signing key), left exactly
 * as found: the message names it and says what to do. The service exits 65 for it, which the unit does
 * not retry (a restart would meet the same file), and prints no stack: it is the file's fault.
 */
export class DataFileError extends Error {}

export function errorText(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/**
 * A W3C trace-context id (the form ASP.NET Core puts in a problem's `traceId`): what a client is told
 * of an unexpected failure, and what the log line with its stack names, so the two can be matched.
 */
export function newTraceId(): string {
  const b = randomBytes(24).toString('hex');
  return `00-${b.slice(0, 32)}-${b.slice(32, 48)}-00`;
}
