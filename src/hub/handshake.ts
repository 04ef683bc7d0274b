// The handshake (SignalR's hub protocol): the client's first message is always JSON terminated by
// 0x1E, `{"protocol":"json"|"messagepack","version":N}`; the server answers `{}` or `{"error":...}`,
// also JSON with 0x1E, and closes the connection after an error.
import { ErrorText, InvalidDataError, tooLarge } from './errors.js';
import { nestsDeeperThan } from '../json-depth.js';
import { parseLeadingObject } from './json-leading-object.js';
import { isIntegerToken, topLevelMembers } from './json-members.js';
import type { ProtocolName } from './messages.js';
import { RECORD_SEPARATOR, decodeUtf8, writeRecord } from './text-format.js';
import { caseKey } from '../ignore-case.js';

/**
 * What a handshake request may take, and what may arrive before its record separator. A request is
 * about 40 bytes (`{"protocol":"messagepack","version":1}`); this leaves room for properties a newer
 * client may add. Messages after the separator in the same frame are the reader's.
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
  let text: string;
  try {
    text = decodeUtf8(buffer.subarray(0, end));
    obj = parseLeadingObject(text);
  } catch {
    throw new InvalidDataError('The handshake request is not valid JSON.');
  }
  if (typeof obj !== 'object' || obj === null || Array.isArray(obj)) {
    throw new InvalidDataError('Unexpected JSON Token Type. Expected a JSON Object.');
  }
  if (nestsDeeperThan(obj)) throw new InvalidDataError('The handshake request nests too deep.');
  const { protocol, version } = obj as Record<string, unknown>;
  if (typeof protocol !== 'string') throw new InvalidDataError("Missing required property 'protocol'.");
  checkVersion(version);
  // ASP.NET reads each occurrence of the two as it meets it, and the version's as written: `1.0` is no Int32.
  for (const member of topLevelMembers(text)) {
    if (member.name === 'version' && member.value !== 'null') {
      if (!isIntegerToken(member.value)) throw new InvalidDataError("Missing required property 'version'.");
      checkVersion(JSON.parse(member.value));
    } else if (member.name === 'protocol' && member.value !== 'null' && typeof JSON.parse(member.value) !== 'string') {
      throw new InvalidDataError("Missing required property 'protocol'.");
    }
  }
  return { kind: 'request', request: { protocol, version: version as number }, rest: buffer.subarray(end + 1) };
}

/** ASP.NET reads the version as an Int32: one out of its range fails the handshake, not the version check. */
function checkVersion(version: unknown): void {
  if (typeof version !== 'number' || !Number.isInteger(version) || version < INT32_MIN || version > INT32_MAX) {
    throw new InvalidDataError("Missing required property 'version'.");
  }
}

const INT32_MIN = -(2 ** 31);
const INT32_MAX = 2 ** 31 - 1;

/**
 * The newest protocol version understood. Version 2 adds stateful reconnect, used when negotiate
 * agreed to it; without that, version 2 behaves as version 1.
 */
export const MAX_PROTOCOL_VERSION = 2;

export type ProtocolChoice = { readonly protocol: ProtocolName } | { readonly error: string };

const PROTOCOLS: readonly ProtocolName[] = ['json', 'messagepack'];


/**
 * As ASP.NET Core's DefaultHubProtocolResolver and its protocols' IsVersionSupported decide: the name
 * matched ignoring case (its protocols sit in an OrdinalIgnoreCase dictionary), and any version up to
 * the newest (`version <= Version`: older ones, 0 and below included, are taken). Error texts quote
 * the name as the client sent it.
 */
export function chooseProtocol(request: HandshakeRequest): ProtocolChoice {
  const name = request.protocol;
  const wanted = caseKey(name);
  const protocol = PROTOCOLS.find((p) => caseKey(p) === wanted);
  if (protocol === undefined) return { error: ErrorText.protocolNotSupported(name) };
  if (request.version > MAX_PROTOCOL_VERSION) return { error: ErrorText.versionNotSupported(name, request.version) };
  return { protocol };
}

/** `{}` + 0x1E on success, `{"error":"..."}` + 0x1E on failure. */
export function handshakeResponse(error?: string): string {
  return writeRecord(error === undefined ? '{}' : JSON.stringify({ error }));
}
