// Text framing of the JSON hub protocol and the handshake (HubProtocol.md "JSON encoding"): each
// message is terminated by the record separator 0x1E. The transport is treated as a byte stream, as
// ASP.NET does, so a message may span frames and a frame may carry many messages.
import { tooLarge } from './errors.js';

export const RECORD_SEPARATOR = 0x1e;
export const RECORD_SEPARATOR_CHAR = '\u001e';

export interface SplitResult {
  /** Complete message bodies, without their framing. */
  readonly messages: Uint8Array[];
  /** An incomplete tail to keep until more data arrives. */
  readonly rest: Uint8Array;
}

/**
 * Splits `buffer` at record separators. A message counts with its separator against
 * `maxMessageSize` (ASP.NET slices the buffer to that size before parsing), and an unterminated
 * tail longer than the limit can never become a valid message: both throw.
 */
export function splitRecords(buffer: Uint8Array, maxMessageSize: number): SplitResult {
  const messages: Uint8Array[] = [];
  let start = 0;
  for (;;) {
    const end = buffer.indexOf(RECORD_SEPARATOR, start);
    if (end < 0) break;
    if (end - start + 1 > maxMessageSize) throw tooLarge(maxMessageSize);
    messages.push(buffer.subarray(start, end));
    start = end + 1;
  }
  const rest = buffer.subarray(start);
  if (rest.length >= maxMessageSize) throw tooLarge(maxMessageSize);
  return { messages, rest };
}

export function writeRecord(json: string): string {
  return json + RECORD_SEPARATOR_CHAR;
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** Decodes UTF-8 strictly: invalid bytes are a protocol error, not replacement characters. */
export function decodeUtf8(bytes: Uint8Array): string {
  return utf8.decode(bytes);
}
