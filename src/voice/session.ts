// One voice session (DESIGN.md "Voice sessions and the upstream voice server"): the state machine
// Starting -> Active -> Stopped | Failed, its upstream link, its Opus decoder and idle timer, and the
// translation of upstream frames into events for the hub group `session-<id>`.
import { DomainError, errorText } from '../errors.js';
import type { Logger } from '../log/logger.js';
import type { SessionRecord, SessionState } from '../store/types.js';
import { MAX_PACKET_BYTES_PER_CHANNEL, SessionOpusDecoder } from './opus-decoder.js';
import { opusPacketDurationMs } from './opus-packet.js';
import { UpstreamVoiceLink, type UpstreamLinkOptions } from './upstream-link.js';
import type { UpstreamMessage } from './upstream-protocol.js';

/** Where session events go; the hub maps `sessionId` to its group `session-<id>`. */
export interface SessionEvents {
  toGroup(sessionId: string, target: string, payload: unknown): void;
}

export interface AudioSent {
  sequence: number;
  bytes: number;
  durationMs: number;
}

export type LinkTuning = Partial<Pick<UpstreamLinkOptions, 'reconnectDelaysMs' | 'maxBufferedBytes' | 'ca'>>;

export interface VoiceSessionOptions {
  /** The new session's record, in state Starting. */
  record: SessionRecord;
  /** The upstream URL to connect to (the record keeps a copy without credentials). */
  serverUrl: string;
  apiKey: string;
  connectTimeoutMs: number;
  /** No traffic either way for this long stops the session; 0 disables. */
  idleTimeoutMs: number;
  events: SessionEvents;
  logger: Logger;
  now: () => Date;
  /** Called once when the session has ended (Stopped or Failed), to persist and forget it. */
  onEnded: (session: VoiceSession) => Promise<void>;
  link?: LinkTuning;
}

export class VoiceSession {
  readonly id: string;
  readonly deviceId: string;
  private readonly record: SessionRecord;
  private readonly decoder = new SessionOpusDecoder();
  private link: UpstreamVoiceLink | undefined;
  private idleTimer: NodeJS.Timeout | undefined;
  private ending: Promise<void> | undefined;
  /** Upstream frames are handled one after another: a decoder reconfigure must not reorder audio. */
  private inbound: Promise<void> = Promise.resolve();

  constructor(private readonly options: VoiceSessionOptions) {
    this.record = { ...options.record, config: { ...options.record.config } };
    this.id = this.record.id;
    this.deviceId = this.record.deviceId;
  }

  get state(): SessionState { return this.record.state; }

  /** A copy of the record as it stands. */
  snapshot(): SessionRecord {
    return { ...this.record, config: { ...this.record.config } };
  }

  /** Upstream link statistics (frames, invalid frames, dropped audio, reconnects). */
  get linkStats(): UpstreamVoiceLink['stats'] | undefined { return this.link?.stats; }

  /**
   * Starting -> Active: initialises the decoder, then connects upstream and sends `start`.
   * On failure the session ends as Failed and the error is rethrown as a DomainError.
   */
  async open(): Promise<void> {
    const { sampleRate, channels, audioFormat, autoMode } = this.record.config;
    try {
      await this.decoder.reconfigure(sampleRate, channels);
      this.link = new UpstreamVoiceLink({
        ...this.options.link,
        url: this.options.serverUrl,
        apiKey: this.options.apiKey,
        connectTimeoutMs: this.options.connectTimeoutMs,
        start: { sessionId: this.id, deviceId: this.deviceId, userId: this.record.userId, audioFormat, sampleRate, channels, autoMode },
        logger: this.options.logger,
        onMessage: (message) => this.fromUpstream(message),
        onFailed: (reason) => void this.finish('Failed', reason),
      });
      if (this.record.state !== 'Starting') throw new Error('ended while starting');
      await this.link.connect();
    } catch (e) {
      if (this.record.state !== 'Starting') {
        await this.ending;
        throw new DomainError('conflict', `session '${this.id}' ended before it started (${this.record.endReason ?? 'stopped'})`);
      }
      const local = e instanceof DomainError;
      const reason = local ? e.message : `upstream voice server unreachable: ${errorText(e)}`;
      await this.finish('Failed', reason);
      throw local ? e : new DomainError('upstream_unavailable', reason);
    }
    this.record.state = 'Active';
    if (this.options.idleTimeoutMs > 0) {
      this.idleTimer = setTimeout(() => void this.finish('Stopped', 'idle timeout'), this.options.idleTimeoutMs);
      this.idleTimer.unref();
    }
  }

  /** Forwards one Opus packet upstream; `audioPacketsSent` counts the packets that went out. */
  sendAudio(packet: Uint8Array): AudioSent {
    const link = this.requireActive();
    const { sampleRate, channels } = this.record.config;
    const limit = MAX_PACKET_BYTES_PER_CHANNEL * channels;
    if (packet.length > limit) {
      throw new DomainError('invalid_argument', `Opus packet of ${packet.length} bytes exceeds ${limit} bytes`);
    }
    const durationMs = opusPacketDurationMs(packet);
    const sequence = this.record.audioPacketsSent + 1;
    link.sendAudio(sequence, packet, sampleRate, channels);
    this.record.audioPacketsSent = sequence;
    this.touch();
    return { sequence, bytes: packet.length, durationMs };
  }

  sendText(text: string, messageType: string): void {
    this.requireActive().sendText(text, messageType);
    this.touch();
  }

  /** Active -> Stopped (or a Starting session abandoned). Idempotent; resolves once persisted. */
  stop(reason: string): Promise<void> {
    return this.finish('Stopped', reason);
  }

  private requireActive(): UpstreamVoiceLink {
    if (this.record.state !== 'Active' || !this.link) {
      throw new DomainError('conflict', `session '${this.id}' is not active (${this.record.state})`);
    }
    return this.link;
  }

  private touch(): void {
    this.idleTimer?.refresh();
  }

  private finish(state: 'Stopped' | 'Failed', reason: string): Promise<void> {
    if (this.ending) return this.ending;
    const wasActive = this.record.state === 'Active';
    this.record.state = state;
    this.record.endTime = this.options.now().toISOString();
    this.record.endReason = reason;
    clearTimeout(this.idleTimer);
    const log = this.options.logger;
    if (state === 'Failed') log.warn(`session ${this.id} failed: ${reason}`);
    else log.info(`session ${this.id} stopped: ${reason}`);
    // Only an Active session can have listeners: its id is handed out once it is Active.
    if (wasActive) this.emit('SessionEnded', { sessionId: this.id, reason });
    this.ending = (async () => {
      this.decoder.free();
      await this.link?.close();
      await this.options.onEnded(this);
    })();
    return this.ending;
  }

  private fromUpstream(message: UpstreamMessage): void {
    this.touch();
    this.inbound = this.inbound
      .then(() => this.handle(message))
      .catch((e: unknown) => this.options.logger.error(`session ${this.id}: upstream ${message.kind}: ${errorText(e)}`));
  }

  private async handle(message: UpstreamMessage): Promise<void> {
    if (this.record.state !== 'Active') return;
    switch (message.kind) {
      case 'audio':
        return this.upstreamAudio(message);
      case 'text':
        return this.emit('TextResponse', { sessionId: this.id, text: message.text, final: message.final });
      case 'error': {
        const code = message.code === undefined ? '' : ` (code ${message.code})`;
        return this.emit('Error', `${message.message}${code}`);
      }
    }
  }

  /** SPEC.md "Upstream message handling": decode with the message's rate and channels, as AudioResponse. */
  private async upstreamAudio(message: Extract<UpstreamMessage, { kind: 'audio' }>): Promise<void> {
    const sampleRate = message.sampleRate ?? this.record.config.sampleRate;
    const channels = message.channels ?? this.record.config.channels;
    let pcm: Buffer;
    try {
      if (!this.decoder.matches(sampleRate, channels)) await this.decoder.reconfigure(sampleRate, channels);
      if (this.record.state !== 'Active') return;
      pcm = this.decoder.decode(message.packet);
    } catch (e) {
      if (this.record.state === 'Active') this.emit('Error', `upstream audio could not be decoded: ${errorText(e)}`);
      return;
    }
    this.emit('AudioResponse', pcm.toString('base64'));
    this.emit('AudioData', { sessionId: this.id, format: 'opus', sampleRate, channels, data: message.data });
  }

  private emit(target: string, payload: unknown): void {
    try {
      this.options.events.toGroup(this.id, target, payload);
    } catch (e) {
      this.options.logger.error(`session ${this.id}: delivering ${target} failed: ${errorText(e)}`);
    }
  }
}
