// Text framing of the JSON hub protocol and the handshake (SignalR's hub protocol, JSON encoding): each
// message is terminated by the record separator 0x1E. The transport is treated as a byte stream, as
// ASP.NET does, so a message may span frames and a frame may carry many messages.
import { tooLarge } from './errors.js';

export const RECORD_SEPARATOR = 0x1e;
export const RECORD_SEPARATOR_CHAR = '\u001e';

/** One complete message read at an offset: its body (without framing) and where the next one starts. */
export interface ReadMessage {
  readonly body: Uint8Array;
  readonly end: number;
}

/**
 * Reads the record that starts at `offset`; undefined when its separator has not arrived yet. A
 * message counts with its separator against `maxMessageSize` (ASP.NET slices the buffer to that
 * size before parsing), so the search never looks further than that, and an unterminated tail that
 * can no longer fit throws: the work per message is bounded however large the frame.
 */
export function readRecord(buffer: Uint8Array, offset: number, maxMessageSize: number): ReadMessage | undefined {
  const window = buffer.subarray(offset, Math.min(buffer.length, offset + maxMessageSize));
  const at = window.indexOf(RECORD_SEPARATOR);
  if (at >= 0) return { body: window.subarray(0, at), end: offset + at + 1 };
  if (window.length >= maxMessageSize) throw tooLarge(maxMessageSize);
  return undefined;
}

export function writeRecord(json: string): string {
  return json + RECORD_SEPARATOR_CHAR;
}

// ignoreBOM keeps a leading byte order mark in the text, where JSON.parse refuses it: ASP.NET's
// Utf8JsonReader takes a BOM for an invalid start of a value, and the decoder's default drops it.
const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** Decodes UTF-8 strictly: invalid bytes are a protocol error, not replacement characters; a BOM stays. */
export function decodeUtf8(bytes: Uint8Array): string {
  return utf8.decode(bytes);
}
