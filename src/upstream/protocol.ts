// The JSON text frames spoken with the upstream voice server (docs/protocol.md,
// "The upstream voice server"). Pure: encoders build frames, parsers turn text into a typed union and
// never throw.
import { OPUS_SAMPLE_RATES } from '../opus-format.js';
import { decodeBase64, isBase64, isCanonicalBase64 } from '../base64.js';
import { ILL_FORMED_TEXT, isWellFormed } from '../well-formed.js';

export interface SessionStartInfo {
  sessionId: string;
  deviceId: string;
  userId: string;
  audioFormat: string;
  sampleRate: number;
  channels: number;
  autoMode: boolean;
}

/** Frames the service sends (and the echo server parses). */
export type ServiceFrame =
  | ({ type: 'start' } & SessionStartInfo)
  | { type: 'audio'; sessionId: string; sequence: number; format: 'opus'; sampleRate: number; channels: number; data: string }
  | { type: 'text'; sessionId: string; text: string; messageType: string }
  | { type: 'stop'; sessionId: string };

/** Frames the upstream server sends, as parsed. `data` stays Base64 so it can be forwarded as received. */
export type UpstreamMessage =
  | { kind: 'audio'; data: string; packet: Buffer; sampleRate?: number; channels?: number }
  | { kind: 'text'; text: string; final: boolean }
  | { kind: 'error'; message: string; code?: string | number };

export type Invalid = { kind: 'invalid'; reason: string };

export function encodeStart(info: SessionStartInfo): string {
  return JSON.stringify({ type: 'start', ...info });
}

export function encodeAudio(
  sessionId: string, sequence: number, packet: Uint8Array, sampleRate: number, channels: number,
): string {
  const data = Buffer.from(packet.buffer, packet.byteOffset, packet.byteLength).toString('base64');
  // Written out rather than through JSON.stringify of an object, which would scan the Base64 for
  // characters to escape (it has none) on every packet; the same text, key for key.
  return `{"type":"audio","sessionId":${JSON.stringify(sessionId)},"sequence":${sequence},"format":"opus",` +
    `"sampleRate":${sampleRate},"channels":${channels},"data":"${data}"}`;
}

export function encodeText(sessionId: string, text: string, messageType: string): string {
  return JSON.stringify({ type: 'text', sessionId, text, messageType });
}

export function encodeStop(sessionId: string): string {
  return JSON.stringify({ type: 'stop', sessionId });
}

/** The upstream server's replies, as the echo server writes them. */
export function encodeUpstreamAudio(data: string, sampleRate: number, channels: number): string {
  return JSON.stringify({ type: 'audio', data, sampleRate, channels });
}
export function encodeUpstreamText(text: string, final: boolean): string {
  return JSON.stringify({ type: 'text', text, final });
}
export function encodeUpstreamError(message: string, code?: string | number): string {
  return JSON.stringify(code === undefined ? { type: 'error', message } : { type: 'error', message, code });
}

type Json = Record<string, unknown>;

/** The frame as a JSON object, or why it is not one. */
function parseObject(text: string): { kind: 'object'; obj: Json } | Invalid {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return bad('malformed JSON');
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return bad('not a JSON object');
  return { kind: 'object', obj: value as Json };
}

const bad = (reason: string): Invalid => ({ kind: 'invalid', reason });
// Whole, not clipped: a reader that must hide a secret in it (the link, the API key) can only find
// what is there in full, and clips after.
const describeType = (type: unknown): string =>
  typeof type === 'string' ? `unknown type '${type}'` : 'missing type';

/**
 * An optional property of an upstream frame: `null` is read as absent, as the HTTP API reads it, since a
 * .NET server's serializer writes `null` for every property left unset (`"final":null`), and a frame
 * refused for it would lose that server's text, errors and audio without a word to its devices.
 */
const optional = (value: unknown): unknown => value ?? undefined;

function optionalFormat(obj: Json): { sampleRate?: number; channels?: number } | Invalid {
  const out: { sampleRate?: number; channels?: number } = {};
  const sampleRate = optional(obj.sampleRate);
  const channels = optional(obj.channels);
  if (sampleRate !== undefined) {
    if (!(OPUS_SAMPLE_RATES as readonly unknown[]).includes(sampleRate)) return bad('audio with an unsupported sampleRate');
    out.sampleRate = sampleRate as number;
  }
  if (channels !== undefined) {
    if (channels !== 1 && channels !== 2) return bad('audio with an unsupported channel count');
    out.channels = channels;
  }
  return out;
}

/** A frame from the upstream server: `audio`, `text` or `error`; anything else is `invalid`. */
export function parseUpstreamMessage(text: string): UpstreamMessage | Invalid {
  const parsed = parseObject(text);
  if (parsed.kind === 'invalid') return parsed;
  const obj = parsed.obj;
  switch (obj.type) {
    case 'audio': {
      if (typeof obj.data !== 'string' || obj.data === '') return bad('audio without data');
      const packet = decodeBase64(obj.data);
      if (!packet) return bad('audio data is not Base64');
      const format = optionalFormat(obj);
      if ('reason' in format) return format;
      // Devices get the text as received, unless its padding bits make it an encoding strict decoders refuse.
      const data = isCanonicalBase64(obj.data, packet.length) ? obj.data : packet.toString('base64');
      return { kind: 'audio', data, packet, ...format };
    }
    case 'text': {
      if (typeof obj.text !== 'string') return bad('text without a text string');
      // Relayed to devices as it is: the one rule for text every transport accepts (well-formed.ts).
      if (!isWellFormed(obj.text)) return bad(`text: the text ${ILL_FORMED_TEXT}`);
      const final = optional(obj.final);
      if (final !== undefined && typeof final !== 'boolean') return bad('text with a non-boolean final');
      // A server that does not mark partial results only sends complete ones.
      return { kind: 'text', text: obj.text, final: final ?? true };
    }
    case 'error': {
      if (typeof obj.message !== 'string') return bad('error without a message string');
      if (!isWellFormed(obj.message)) return bad(`error: the message ${ILL_FORMED_TEXT}`);
      const code = optional(obj.code);
      if (code === undefined) return { kind: 'error', message: obj.message };
      if (typeof code !== 'string' && typeof code !== 'number') return bad('error with a code that is not a string or number');
      if (typeof code === 'string' && !isWellFormed(code)) return bad(`error: the code ${ILL_FORMED_TEXT}`);
      return { kind: 'error', message: obj.message, code };
    }
    default:
      return bad(describeType(obj.type));
  }
}

const str = (v: unknown): v is string => typeof v === 'string';

/** A frame from the service, as an upstream server (the echo server) reads it. */
export function parseServiceFrame(text: string): ServiceFrame | Invalid {
  const parsed = parseObject(text);
  if (parsed.kind === 'invalid') return parsed;
  const obj = parsed.obj;
  if (!str(obj.sessionId)) return bad('missing sessionId');
  const sessionId = obj.sessionId;
  switch (obj.type) {
    case 'start': {
      if (!str(obj.deviceId) || !str(obj.userId) || !str(obj.audioFormat)) return bad('start without deviceId, userId or audioFormat');
      if (!(OPUS_SAMPLE_RATES as readonly unknown[]).includes(obj.sampleRate)) return bad('start with an unsupported sampleRate');
      if (obj.channels !== 1 && obj.channels !== 2) return bad('start with an unsupported channel count');
      if (typeof obj.autoMode !== 'boolean') return bad('start without autoMode');
      return {
        type: 'start', sessionId, deviceId: obj.deviceId, userId: obj.userId, audioFormat: obj.audioFormat,
        sampleRate: obj.sampleRate as number, channels: obj.channels, autoMode: obj.autoMode,
      };
    }
    case 'audio': {
      if (!Number.isSafeInteger(obj.sequence)) return bad('audio without an integer sequence');
      if (obj.format !== 'opus') return bad('audio format is not opus');
      if (!str(obj.data) || obj.data === '' || !isBase64(obj.data)) return bad('audio data is not Base64');
      if (!(OPUS_SAMPLE_RATES as readonly unknown[]).includes(obj.sampleRate)) return bad('audio with an unsupported sampleRate');
      if (obj.channels !== 1 && obj.channels !== 2) return bad('audio with an unsupported channel count');
      return {
        type: 'audio', sessionId, sequence: obj.sequence as number, format: 'opus',
        sampleRate: obj.sampleRate as number, channels: obj.channels, data: obj.data,
      };
    }
    case 'text':
      if (!str(obj.text) || !str(obj.messageType)) return bad('text without text or messageType');
      return { type: 'text', sessionId, text: obj.text, messageType: obj.messageType };
    case 'stop':
      return { type: 'stop', sessionId };
    default:
      return bad(describeType(obj.type));
  }
}
