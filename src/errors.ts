// Domain errors carry a code; each transport maps codes at one boundary (HTTP: problem bodies,
// hub: completion errors or `Error` events). Domain modules never know about status codes.

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
  ) {
    super(message);
    this.name = 'DomainError';
  }
}

export const isDomainError = (e: unknown): e is DomainError => e instanceof DomainError;

export function errorText(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}
