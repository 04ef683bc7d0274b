// One voice session: the state machine
// Starting -> Active -> Stopped | Failed, its upstream link, its Opus decoder and idle timer. What happens
// is told to its listeners as SessionEvents (session-events.ts); upstream frames become events through
// upstream-inbound.ts.
import { DomainError, errorText } from '../errors.js';
import type { Logger } from '../log/logger.js';
import type { SessionRecord, SessionState } from '../store/types.js';
import { copySessionRecord } from '../store/session-record.js';
import { MAX_PACKET_BYTES_PER_CHANNEL } from './opus/decoder.js';
import type { AudioDecoder } from './opus/decoder-pool.js';
import { opusPacketDurationMs } from './opus/packet.js';
import type { ReconnectPolicy } from '../upstream/reconnect-budget.js';
import type { SessionListener } from './session-events.js';
import { ReceiverPace, type ReceiversUnsent } from './receiver-pace.js';
import { UpstreamInbound, type DecodeBudget, type InboundStats } from './upstream-inbound.js';
import type { DropCounts } from './upstream-drops.js';
import { notBefore } from './session-dates.js';
import { UpstreamVoiceLink, type LinkStats, type UpstreamLinkOptions } from '../upstream/link.js';

export interface AudioSent {
  sequence: number;
  bytes: number;
  durationMs: number;
}

export type LinkTuning = Partial<Pick<UpstreamLinkOptions, 'maxBufferedBytes' | 'ca' | 'invalidFrameLog' | 'reconnectLog'>>;

/** The per-session budgets against a misbehaving upstream (VoiceService.DecodeQueue*, Reconnect*, ...). */
export interface SessionBudgets {
  decode: DecodeBudget;
  reconnect: ReconnectPolicy;
}

/** What a session's upstream cost it: link counters, decoder rebuilds and dropped upstream frames. */
export interface SessionStats {
  link: LinkStats | undefined;
  inbound: InboundStats;
  upstreamDropped: DropCounts;
}

export interface VoiceSessionOptions {
  /** The new session's record, in state Starting. */
  record: SessionRecord;
  /** The token generation of the device the session was started for (a device registered again under its id has another). */
  deviceGeneration: number;
  /** The upstream URL to connect to (the record keeps only its public form). */
  serverUrl: string;
  apiKey: string;
  connectTimeoutMs: number;
  /** No traffic either way for this long stops the session; 0 disables. */
  idleTimeoutMs: number;
  /** Where the session's events go; must not throw (SessionListeners.emit does not). */
  emit: SessionListener;
  logger: Logger;
  /**
   * Where the line of a start that failed goes: a device can ask for starts as fast as it likes while the
   * upstream is down, so these are throttled (a session that was Active fails at most once).
   */
  startFailures: Pick<Logger, 'warn'>;
  /** Where the lines about bursts of dropped upstream frames go, shared by the sessions (throttled); `logger` when not given. */
  dropLog?: Pick<Logger, 'warn'>;
  /**
   * Where the line of a session that stopped goes, shared by the sessions (throttled): a device can start
   * sessions, each replacing the last, as fast as the upstream takes connections. `logger` when not given.
   */
  endLines?: Pick<Logger, 'info'>;
  now: () => Date;
  /** Called once when the session has ended (Stopped or Failed), to persist and forget it. */
  onEnded: (session: VoiceSession) => Promise<void>;
  budgets: SessionBudgets;
  /** The session's Opus decoder (from the service's DecoderPool); the session frees it when it ends. */
  decoder: AudioDecoder;
  link?: LinkTuning;
  /** Each receiver of the session's events and the bytes it has been given and not yet sent (ReceiverPace). */
  receiversUnsent?: ReceiversUnsent;
}

export class VoiceSession {
  readonly id: string;
  readonly deviceId: string;
  readonly deviceGeneration: number;
  private readonly record: SessionRecord;
  private readonly decoder: AudioDecoder;
  private link: UpstreamVoiceLink | undefined;
  private idleTimer: NodeJS.Timeout | undefined;
  private ending: Promise<void> | undefined;
  private readonly inbound: UpstreamInbound;
  private readonly pace: ReceiverPace | undefined;
  /** Reading upstream is paused on the decoder's account (its queue is full). */
  private decoderBehind = false;
  /** The latest time the record or its events are dated with (ms since the epoch): see session-dates.ts. */
  private datedUpTo: number;

  constructor(private readonly options: VoiceSessionOptions) {
    this.record = copySessionRecord(options.record);
    this.id = this.record.id;
    this.deviceId = this.record.deviceId;
    this.deviceGeneration = options.deviceGeneration;
    this.decoder = options.decoder;
    this.datedUpTo = Date.parse(this.record.startTime);
    const { sampleRate, channels } = this.record.config;
    const unsent = options.receiversUnsent;
    this.pace = unsent ? new ReceiverPace(unsent, () => this.applyPause()) : undefined;
    this.inbound = new UpstreamInbound({
      sessionId: this.id,
      decoder: this.decoder,
      format: { sampleRate, channels },
      budget: options.budgets.decode,
      // What it hands on is what piles up for slow receivers: checked as it goes out.
      emit: this.pace ? (event) => {
        options.emit(event);
        this.pace!.check();
      } : options.emit,
      isActive: () => this.record.state === 'Active',
      onBacklog: (behind) => {
        this.decoderBehind = behind;
        this.applyPause();
      },
      logger: options.logger,
      dropLog: options.dropLog,
    });
  }

  /** Upstream is read while neither the decoder nor the receivers are behind. */
  private applyPause(): void {
    this.link?.pauseReading(this.decoderBehind || this.pace?.paused === true);
  }

  get state(): SessionState { return this.record.state; }

  /** `snapshot` bound once, for the store's saveLater: a packet sent must not allocate a closure of its own. */
  readonly latestRecord = (): SessionRecord => this.snapshot();

  /** A copy of the record as it stands. */
  snapshot(): SessionRecord {
    return copySessionRecord(this.record);
  }

  /** Counters of the upstream side: link frames and reconnects, decoder rebuilds, dropped frames. */
  get stats(): SessionStats {
    return { link: this.link?.stats, inbound: this.inbound.stats, upstreamDropped: { ...this.inbound.drops.total } };
  }

  /**
   * Initialises the decoder, then connects upstream and sends `start`; the session stays Starting
   * until `activate`. On failure it ends as Failed and the error is rethrown as a DomainError; ended
   * meanwhile (a shutdown, its device deleted, a stop), it throws the 409 of confirmStarted.
   */
  async connect(): Promise<void> {
    const { sampleRate, channels, audioFormat, autoMode } = this.record.config;
    try {
      await this.decoder.reconfigure(sampleRate, channels);
      const tuning = this.options.link;
      // Every key given, in one order, rather than spread from the tuning: one map for every link's options.
      this.link = new UpstreamVoiceLink({
        url: this.options.serverUrl,
        apiKey: this.options.apiKey,
        connectTimeoutMs: this.options.connectTimeoutMs,
        reconnect: this.options.budgets.reconnect,
        start: { sessionId: this.id, deviceId: this.deviceId, userId: this.record.userId, audioFormat, sampleRate, channels, autoMode },
        logger: this.options.logger,
        onMessage: (message) => {
          this.touch();
          this.inbound.push(message);
        },
        onFailed: (reason) => {
          this.options.emit({ type: 'upstreamLink', sessionId: this.id, state: 'unreachable' });
          void this.finish('Failed', reason);
        },
        onStateChange: (state) =>
          this.options.emit({ type: 'upstreamLink', sessionId: this.id, state: state === 'Open' ? 'open' : 'reconnecting' }),
        ca: tuning?.ca,
        maxBufferedBytes: tuning?.maxBufferedBytes,
        invalidFrameLog: tuning?.invalidFrameLog,
        reconnectLog: tuning?.reconnectLog,
      });
      if (this.record.state !== 'Starting') throw new Error('ended while starting');
      await this.link.connect();
    } catch (e) {
      if (this.record.state !== 'Starting') throw await this.endedEarly();
      const local = e instanceof DomainError;
      const reason = local ? e.message : `upstream voice server unreachable: ${errorText(e)}`;
      if (!local) this.options.emit({ type: 'upstreamLink', sessionId: this.id, state: 'unreachable' });
      await this.finish('Failed', reason);
      throw local ? e : new DomainError('upstream_unavailable', reason);
    }
    if (this.record.state !== 'Starting') throw await this.endedEarly();
  }

  /**
   * Starting -> Active, once connected: the idle timer runs and the listeners hear it started. Nothing
   * is awaited, so the caller replaces the device's session in the same turn. A session that ended
   * meanwhile stays ended (confirmStarted says how).
   */
  activate(): void {
    if (this.record.state !== 'Starting') return;
    this.record.state = 'Active';
    if (this.options.idleTimeoutMs > 0) {
      this.idleTimer = setTimeout(() => void this.finish('Stopped', 'idle timeout'), this.options.idleTimeoutMs);
      this.idleTimer.unref();
    }
    this.options.emit({ type: 'started', sessionId: this.id, deviceId: this.deviceId, userId: this.record.userId, at: this.dated() });
  }

  /**
   * Resolves while the session is Active; else throws the 409 of a start whose session ended before
   * the start was answered (replaced by a concurrent start, stopped, its device deleted), once that
   * end is recorded.
   */
  async confirmStarted(): Promise<void> {
    if (this.record.state !== 'Active') throw await this.endedEarly();
  }

  private async endedEarly(): Promise<DomainError> {
    await this.ending;
    return new DomainError('conflict', `session '${this.id}' ended before it started (${this.record.endReason ?? 'stopped'})`);
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
    const bytes = packet.length;
    this.options.emit({ type: 'audioProcessed', sessionId: this.id, sequence, bytes, durationMs });
    return { sequence, bytes, durationMs };
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

  /** Now, for the record or an event, never before a time the session was dated with already. */
  private dated(): Date {
    const at = notBefore(this.options.now(), this.datedUpTo);
    this.datedUpTo = at.getTime();
    return at;
  }

  private touch(): void {
    this.idleTimer?.refresh();
  }

  private finish(state: 'Stopped' | 'Failed', reason: string): Promise<void> {
    if (this.ending) return this.ending;
    const wasActive = this.record.state === 'Active';
    const at = this.dated();
    this.record.state = state;
    this.record.endTime = at.toISOString();
    this.record.endReason = reason;
    clearTimeout(this.idleTimer);
    const log = this.options.logger;
    const costs = this.upstreamCosts();
    if (state === 'Failed') (wasActive ? log : this.options.startFailures).warn(`session ${this.id} failed: ${reason}${costs}`);
    else (this.options.endLines ?? log).info(`session ${this.id} stopped: ${reason}${costs}`);
    // Only a session that was Active told anyone it started: a failed start ends without events.
    if (wasActive) this.options.emit({ type: 'ended', sessionId: this.id, deviceId: this.deviceId, state, reason, at });
    this.ending = (async () => {
      this.pace?.close();
      this.inbound.close();
      this.decoder.free();
      await this.link?.close();
      await this.options.onEnded(this);
    })();
    return this.ending;
  }

  /** The session's upstream counters for its last log line, when there is anything to say. */
  private upstreamCosts(): string {
    const { link, inbound, upstreamDropped } = this.stats;
    const { queue, format, corrupt, thread } = upstreamDropped;
    const dropped = queue + format + corrupt + thread;
    const parts = [
      dropped > 0 ? `${dropped} upstream frames dropped (queue full ${queue}, format ${format}, corrupt ${corrupt}, decoder thread failed ${thread})` : '',
      inbound.decoderRebuilds > 0 ? `${inbound.decoderRebuilds} decoder rebuilds` : '',
      link && link.reconnects + link.failedReconnects > 0 ? `${link.reconnects} reconnects, ${link.failedReconnects} failed` : '',
      link && link.droppedAudio > 0 ? `${link.droppedAudio} device audio packets refused` : '',
    ].filter(Boolean);
    return parts.length > 0 ? ` (${parts.join('; ')})` : '';
  }
}
