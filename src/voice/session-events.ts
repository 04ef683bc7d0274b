// What happens in a voice session, as the domain says it: a typed union delivered to registered
// listeners. Which of these reach devices, under what name and in what encoding, is the adapters'
// business (the hub bridge, the MQTT publisher); nothing here names a wire format.
import { errorText } from '../errors.js';
import type { Logger } from '../log/logger.js';
import type { DropReason } from './upstream-drops.js';

/** An audio format as a session or an upstream frame names it. */
export interface AudioFormat {
  sampleRate: number;
  channels: number;
}

export type SessionEvent =
  /** Starting -> Active: the session takes audio from now on. */
  | { type: 'started'; sessionId: string; deviceId: string; userId: string; at: Date }
  /** One device packet went upstream (`sequence` counts them from 1). */
  | { type: 'audioProcessed'; sessionId: string; sequence: number; bytes: number; durationMs: number }
  /** Upstream audio, decoded: 16-bit little-endian PCM, interleaved, in the format the frame was decoded at. */
  | { type: 'decodedAudio'; sessionId: string; pcm: Uint8Array; format: AudioFormat }
  /**
   * The same upstream audio as it arrived: one Opus packet, and the Base64 text the upstream carried it in
   * (so that adapters sending Base64 need not encode it again). Follows its `decodedAudio`.
   */
  | { type: 'upstreamAudio'; sessionId: string; packet: Uint8Array; base64: string; format: AudioFormat }
  | { type: 'text'; sessionId: string; text: string; final: boolean }
  /** The upstream server reported an error; the session goes on. */
  | { type: 'upstreamError'; sessionId: string; message: string; code?: string | number }
  /** The first upstream frame of a burst of dropped ones (the rest of the burst is only counted). */
  | { type: 'framesDropped'; sessionId: string; reason: DropReason; message: string }
  /**
   * The session's upstream connection: `reconnecting` after it dropped, `open` once a reconnect worked,
   * `unreachable` when a start could not connect or reconnects ran out (its `ended` follows, if it was Active).
   */
  | { type: 'upstreamLink'; sessionId: string; state: 'reconnecting' | 'open' | 'unreachable' }
  /** Every listener of a joined session is gone; the session waits `graceMs` for one to join again. */
  | { type: 'deviceAway'; sessionId: string; deviceId: string; graceMs: number; at: Date }
  /** A listener joined a session that was waiting for its device, `awayMs` after the last one left. */
  | { type: 'deviceReturned'; sessionId: string; deviceId: string; awayMs: number; at: Date }
  /** Active -> Stopped or Failed. Only a session that was Active ends with this event. */
  | { type: 'ended'; sessionId: string; deviceId: string; state: 'Stopped' | 'Failed'; reason: string; at: Date };

export type SessionEventType = SessionEvent['type'];

/** Told about every session event, synchronously and in order. Must not block; a throw is logged. */
export type SessionListener = (event: SessionEvent) => void;

/** The registered listeners of the session service; one listener's failure never reaches another. */
export class SessionListeners {
  private readonly listeners: SessionListener[];

  constructor(private readonly logger: Logger, listeners: readonly SessionListener[] = []) {
    this.listeners = [...listeners];
  }

  add(listener: SessionListener): void {
    this.listeners.push(listener);
  }

  readonly emit = (event: SessionEvent): void => {
    for (const listener of this.listeners) {
      try {
        listener(event);
      } catch (e) {
        // A bug in an adapter: logged with its stack; the session and the other listeners carry on.
        const detail = e instanceof Error ? (e.stack ?? e.message) : errorText(e);
        this.logger.error(`session ${event.sessionId}: a listener failed on '${event.type}': ${detail}`);
      }
    }
  };
}
