// Reading request bodies from uWS: the only place that touches onData. Chunks are copied (uWS
// neuters them on return) and the limit is enforced while reading, so an oversized body is refused
// without being buffered (an HTTP 413).
import type { HttpResponse } from 'uWebSockets.js';
import { DomainError } from '../errors.js';
import type { InFlightRequests } from './in-flight.js';

export interface ResponseState {
  aborted: boolean;
  done: boolean;
  /** Reading from the connection is paused until this response is written (see server.ts). */
  paused: boolean;
  /** Counts the request until its response is written or it is aborted (in-flight.ts). */
  readonly inFlight?: InFlightRequests;
}

/**
 * How much of a body over the limit is read, and thrown away, before the 413 goes out. The 413 closes the
 * connection, and uWS closes a socket at once after such an answer: a client still sending its body then
 * draws a TCP reset, which discards the answer it had not read yet (an upload of 512 KiB got EPIPE
 * instead of the 413 nearly every time). Read to its end, the body is off the wire and the client is
 * waiting for the answer. A body larger than this still gets the 413 at once, and may lose it.
 */
export const REFUSED_BODY_READ_BYTES = 1024 * 1024;

/**
 * Must be called synchronously inside the uWS handler (uWS drops body data that arrives before a
 * handler is attached). A body over `maxBytes` is not kept: it is refused (413) when it ends, or as soon
 * as it passes REFUSED_BODY_READ_BYTES more; a declared Content-Length past that is the pipeline's
 * refusal, before this.
 */
export function readBody(res: HttpResponse, state: ResponseState, maxBytes: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    let chunks: Buffer[] = [];
    let size = 0;
    let failed = false;
    res.onData((chunk, isLast) => {
      if (failed || state.aborted) return;
      size += chunk.byteLength;
      if (size > maxBytes) {
        chunks = [];
        if (isLast || size > maxBytes + REFUSED_BODY_READ_BYTES) {
          failed = true;
          reject(tooLarge(maxBytes));
        }
        return;
      }
      if (chunk.byteLength > 0) chunks.push(Buffer.copyBytesFrom(new Uint8Array(chunk)));
      if (isLast) resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size));
    });
  });
}

export function tooLarge(maxBytes: number): DomainError {
  return new DomainError('payload_too_large', `The request body is larger than the limit of ${maxBytes} bytes.`);
}

/**
 * Starts reading the body the request's head announces (a Content-Length over 0, or chunked), whatever
 * its answer will be: resolves with it, or rejects with tooLarge past `maxBytes`, at once when the declared
 * length is past what readBody would read before refusing. Undefined when the head announces none. Framing
 * must have been checked (framing.ts): a length is plain digits, a coding `chunked`. An answer written
 * before its body was read left the rest to uWS, which read and dropped any amount of it with the
 * connection kept, so every answer to a request with a body waits for this.
 */
export function startBodyRead(
  contentLength: string | undefined,
  transferEncoding: string | undefined,
  maxBytes: number,
  read: (maxBytes: number) => Promise<Buffer>,
): Promise<Buffer> | undefined {
  const declared = contentLength !== undefined ? Number(contentLength.trim()) : undefined;
  if (declared !== undefined ? declared === 0 : transferEncoding === undefined) return undefined;
  if (declared !== undefined && declared > maxBytes + REFUSED_BODY_READ_BYTES) return Promise.reject(tooLarge(maxBytes));
  return read(maxBytes);
}
