// The handshake (SignalR's hub protocol): the client's first message is always JSON terminated by
// 0x1E, `{"protocol":"json"|"messagepack","version":N}`; the server answers `{}` or `{"error":...}`,
// also JSON with 0x1E, and closes the connection after an error.
import { ErrorText, InvalidDataError, tooLarge } from './errors.js';
import type { ProtocolName } from './messages.js';
import { RECORD_SEPARATOR, decodeUtf8, writeRecord } from './text-format.js';

/**
 * What may arrive before the handshake is done. A request is about 40 bytes
 * (`{"protocol":"messagepack","version":1}`); this leaves room for properties a newer client may
 * add, and nothing for a payload sent before the server agreed to a protocol.
 */
export const HANDSHAKE_MAX_BYTES = 1024;

export interface HandshakeRequest {
  readonly protocol: string;
  readonly version: number;
}

export type HandshakeParse =
  | { readonly kind: 'incomplete' }
  | { readonly kind: 'request'; readonly request: HandshakeRequest; /** bytes after the handshake */ readonly rest: Uint8Array };

/**
 * Parses the handshake request at the start of `buffer`. Throws InvalidDataError for anything that
 * is not a well-formed request, or when no separator shows up within `maxMessageSize` bytes.
 */
export function parseHandshakeRequest(buffer: Uint8Array, maxMessageSize: number): HandshakeParse {
  const end = buffer.indexOf(RECORD_SEPARATOR);
  if (end < 0) {
    if (buffer.length >= maxMessageSize) throw tooLarge(maxMessageSize);
    return { kind: 'incomplete' };
  }
  if (end + 1 > maxMessageSize) throw tooLarge(maxMessageSize);
  let obj: unknown;
  try {
    obj = JSON.parse(decodeUtf8(buffer.subarray(0, end)));
  } catch {
    throw new InvalidDataError('The handshake request is not valid JSON.');
  }
  if (typeof obj !== 'object' || obj === null || Array.isArray(obj)) {
    throw new InvalidDataError('Unexpected JSON Token Type. Expected a JSON Object.');
  }
  const { protocol, version } = obj as Record<string, unknown>;
  if (typeof protocol !== 'string') throw new InvalidDataError("Missing required property 'protocol'.");
  if (typeof version !== 'number' || !Number.isInteger(version)) throw new InvalidDataError("Missing required property 'version'.");
  return { kind: 'request', request: { protocol, version }, rest: buffer.subarray(end + 1) };
}

/**
 * The newest protocol version understood. Version 2 only adds stateful reconnect, which is used
 * when negotiated; this server never offers it, so version 2 behaves as version 1.
 */
export const MAX_PROTOCOL_VERSION = 2;

export type ProtocolChoice = { readonly protocol: ProtocolName } | { readonly error: string };

export function chooseProtocol(request: HandshakeRequest): ProtocolChoice {
  const name = request.protocol;
  if (name !== 'json' && name !== 'messagepack') return { error: ErrorText.protocolNotSupported(name) };
  if (request.version < 0 || request.version > MAX_PROTOCOL_VERSION) {
    return { error: ErrorText.versionNotSupported(name, request.version) };
  }
  return { protocol: name };
}

/** `{}` + 0x1E on success, `{"error":"..."}` + 0x1E on failure. */
export function handshakeResponse(error?: string): string {
  return writeRecord(error === undefined ? '{}' : JSON.stringify({ error }));
}
