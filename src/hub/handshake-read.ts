// The handshake request as it arrives on a connection's first frames, read into what the connection
// does next: wait for more, refuse it (with the error its response carries), or take the protocol it
// chose. Apart from the connection because it is plain parsing over bytes, with no state of its own.
import { ErrorText, MessageTooLargeError } from './errors.js';
import { HANDSHAKE_MAX_BYTES, chooseProtocol, parseHandshakeRequest } from './handshake.js';
import type { ProtocolName } from './messages.js';
import { copy } from './reader.js';
import { RECORD_SEPARATOR } from './text-format.js';

export type HandshakeRead =
  /** No separator yet: `pending` is what to keep (a copy, never the socket's bytes). */
  | { readonly kind: 'incomplete'; readonly pending: Uint8Array }
  /** `bytes` came before the handshake was done without a request ending within HANDSHAKE_MAX_BYTES. */
  | { readonly kind: 'oversized'; readonly bytes: number }
  /** `error` goes in the handshake response; `reason` is for the log. */
  | { readonly kind: 'refused'; readonly error: string; readonly reason: string }
  /** `rest`: the bytes after the request (a view into the frame, lent as the frame was). */
  | { readonly kind: 'accepted'; readonly protocol: ProtocolName; readonly version: number; readonly rest: Uint8Array };

/** Reads the request from `pending` (bytes of an incomplete request kept from earlier frames) and then `data`. */
export function readHandshake(pending: Uint8Array, data: Uint8Array): HandshakeRead {
  if (!requestEndsWithinLimit(pending, data)) return { kind: 'oversized', bytes: pending.length + data.length };
  // Only a request split across frames is copied: a frame that starts with it is parsed where it
  // lies and the messages after it are the reader's to copy as far as it needs (a hostile frame of
  // pings behind a refused request then costs no copy at all).
  const lent = pending.length === 0;
  const buffer = lent ? data : copy(data, pending);
  let parsed: ReturnType<typeof parseHandshakeRequest>;
  try {
    parsed = parseHandshakeRequest(buffer, HANDSHAKE_MAX_BYTES);
  } catch (e) {
    // ASP.NET Core answers a request that does not end within its size limit as canceled
    // (HandshakeSizeLimitExceeded), and only a request it could read and refuse as failed.
    const error = e instanceof MessageTooLargeError ? ErrorText.handshakeCanceled : ErrorText.handshakeFailed;
    return { kind: 'refused', error, reason: `bad handshake: ${e instanceof Error ? e.message : String(e)}` };
  }
  // At most HANDSHAKE_MAX_BYTES: more without a separator was refused above.
  if (parsed.kind === 'incomplete') return { kind: 'incomplete', pending: lent ? copy(buffer) : buffer };
  const choice = chooseProtocol(parsed.request);
  if ('error' in choice) return { kind: 'refused', error: choice.error, reason: choice.error };
  return { kind: 'accepted', protocol: choice.protocol, version: parsed.request.version, rest: parsed.rest };
}

/**
 * Whether the handshake request, `pending` and then `data`, ends within HANDSHAKE_MAX_BYTES (or has
 * not come to that many bytes yet). Only the request counts: a client may send its first messages in
 * the same frame (Python clients batch a handshake, JoinSession and audio), which the reader bounds.
 */
function requestEndsWithinLimit(pending: Uint8Array, data: Uint8Array): boolean {
  if (pending.length + data.length <= HANDSHAKE_MAX_BYTES) return true;
  return data.subarray(0, Math.max(0, HANDSHAKE_MAX_BYTES - pending.length)).indexOf(RECORD_SEPARATOR) >= 0;
}
