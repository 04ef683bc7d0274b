// Upstream frames of one session on their way to its listeners, in order and with bounded work: audio is
// decoded with the sampleRate/channels its frame names (the session's where it names none), text and
// error frames become session events. Decoding happens at once (inline) or on a decoder thread
// (decoder-pool.ts); frames behind a packet still being decoded wait for it in `outbox`, so that events
// keep the upstream's order. A format change rebuilds the Opus decoder (asynchronous), and frames that
// arrive meanwhile wait in a queue bounded in frames and bytes. Rebuilds are rate-limited: an upstream that changes format on every packet would
// otherwise make every packet pay for a new decoder while the queue behind it grew without limit. What
// does not fit is dropped, counted and reported once per burst (upstream-drops.ts).
import { errorText } from '../errors.js';
import type { Logger } from '../log/logger.js';
import { DecoderThreadError, type AudioDecoder } from './opus/decoder-pool.js';
import { opusPacketDurationMs } from './opus/packet.js';
import type { AudioFormat, SessionListener } from './session-events.js';
import { DropReporter, type DropReason } from './upstream-drops.js';
import type { UpstreamMessage } from '../upstream/protocol.js';
import { monotonicMs } from '../monotonic-clock.js';

/** VoiceService.DecodeQueuePackets, DecodeQueueBytes, DecoderRebuildsPerSecond and DecoderQueuePerThread. */
export interface DecodeBudget {
  /** Frames (and bytes) that may wait behind a decoder rebuild. */
  queuePackets: number;
  /** ...and the bytes waiting behind packets on a decoder thread at which reading upstream pauses. */
  queueBytes: number;
  rebuildsPerSecond: number;
  /** Frames that may wait behind packets still being decoded on a thread. */
  inFlightFrames: number;
}

export interface InboundStats {
  decoderRebuilds: number;
  /** The most frames that waited at once. */
  queuePeak: number;
}

export interface UpstreamInboundOptions {
  sessionId: string;
  decoder: AudioDecoder;
  /** The session's format, for audio frames that do not name theirs. */
  format: AudioFormat;
  budget: DecodeBudget;
  /** Where the session's events go. */
  emit: SessionListener;
  /** False once the session has ended: nothing more is delivered. */
  isActive: () => boolean;
  /**
   * Told when the frames waiting for the decoder pass BACKLOG_PAUSE, their bytes the budget's queueBytes
   * or what they will make BACKLOG_OUTPUT_BYTES, or a decoder rebuild starts (true), and when they are
   * down to BACKLOG_RESUME and to the same share of the bytes with no rebuild running (false): the
   * session stops reading from upstream meanwhile, so that TCP holds the upstream back instead of frames
   * being dropped, or held here without limit when they are large.
   */
  onBacklog?: (behind: boolean) => void;
  logger: Logger;
  /** Where the lines about drop bursts go (upstream-drops.ts); `logger` when not given. */
  dropLog?: Pick<Logger, 'warn'>;
}

/**
 * Frames waiting behind packets on a decoder thread at which the session stops reading upstream (64:
 * 1.3 s of 20 ms audio, a few KiB)... At 16 and 4, a session with 16 calls in flight paused and resumed
 * all the time, and 15-25 % fewer round trips per CPU-second were answered (bench/compare.ts --window 16).
 */
export const BACKLOG_PAUSE = 64;
/** ...and at which it reads again. */
export const BACKLOG_RESUME = 16;
/**
 * What the frames waiting for the decoder will make for each receiver (AudioResponse: PCM in Base64) at
 * which reading pauses as well. The receivers' pace (receiver-pace.ts) stops reading once 256 KiB wait
 * for a member, but frames already being decoded still go out: 64 of 120 ms at 48 kHz stereo make 2 MB,
 * past the 1 MiB a member may be owed. Bounded here, the pace's mark plus this stays well under it.
 */
export const BACKLOG_OUTPUT_BYTES = 256 * 1024;

const REBUILD_WINDOW_MS = 1000;

type Audio = Extract<UpstreamMessage, { kind: 'audio' }>;

/** A frame whose event waits for the packets ahead of it to be decoded; `ready` once it can go. */
interface Pending {
  message: UpstreamMessage;
  ready: boolean;
  /** What its event will weigh for each receiver (outputOf). */
  output: number;
  format?: { sampleRate: number; channels: number };
  pcm?: Buffer;
  error?: Error;
}

export class UpstreamInbound {
  readonly stats: InboundStats = { decoderRebuilds: 0, queuePeak: 0 };
  readonly drops: DropReporter;
  private readonly queue: UpstreamMessage[] = [];
  private queuedBytes = 0;
  /** Frames handled, in order, whose events wait for a decode ahead of them (or their own) to finish. */
  private readonly outbox: Pending[] = [];
  private outboxBytes = 0;
  private outboxOutput = 0;
  /** The outbox passed a pause mark and has not yet come down to the resume marks. */
  private outboxBehind = false;
  /** onBacklog(true) was the last call. */
  private behind = false;
  /** A decoder rebuild is in progress: frames wait in the queue so that audio keeps its order. */
  private rebuilding = false;
  /** Times of the rebuilds within the last second. */
  private readonly rebuildTimes: number[] = [];

  /** The bytes in the outbox at which reading resumes: the budget's share that BACKLOG_RESUME is of BACKLOG_PAUSE. */
  private readonly resumeBytes: number;
  private readonly resumeOutput = Math.floor((BACKLOG_OUTPUT_BYTES * BACKLOG_RESUME) / BACKLOG_PAUSE);

  constructor(private readonly options: UpstreamInboundOptions) {
    this.resumeBytes = Math.floor((options.budget.queueBytes * BACKLOG_RESUME) / BACKLOG_PAUSE);
    const { sessionId, emit } = options;
    this.drops = new DropReporter({ sessionId, report: (reason, message) => emit({ type: 'framesDropped', sessionId, reason, message }), logger: options.dropLog ?? options.logger });
  }

  /** One frame from upstream: delivered now, queued behind a rebuild, or dropped. */
  push(message: UpstreamMessage): void {
    const { queuePackets, queueBytes, inFlightFrames } = this.options.budget;
    if (this.rebuilding) {
      const bytes = sizeOf(message);
      if (this.queue.length >= queuePackets || this.queuedBytes + bytes > queueBytes) {
        return this.drop('queue', `upstream ${message.kind} dropped: the decode queue is full (${this.queue.length} frames, ${this.queuedBytes} bytes waiting for the decoder)`);
      }
      this.queue.push(message);
      this.queuedBytes += bytes;
      if (this.queue.length > this.stats.queuePeak) this.stats.queuePeak = this.queue.length;
      return;
    }
    // Behind packets still on a decoder thread: as many as a thread may hold, so that a burst (speech
    // synthesised faster than real time) goes through whole, while a flood still meets a limit.
    if (this.outbox.length >= inFlightFrames) {
      return this.drop('queue', `upstream ${message.kind} dropped: the decoder is behind (${this.outbox.length} frames, ${this.outboxBytes} bytes waiting for it)`);
    }
    this.handle(message);
  }

  /** The session ended: queued frames are let go and a drop burst in progress is logged. */
  close(): void {
    this.queue.length = 0;
    this.queuedBytes = 0;
    this.outbox.length = 0;
    this.outboxBytes = 0;
    this.outboxOutput = 0;
    this.drops.close();
  }

  private handle(message: UpstreamMessage): void {
    if (!this.options.isActive()) return;
    if (message.kind === 'audio') return this.audio(message);
    // Behind a packet still being decoded, text and errors wait their turn.
    if (this.outbox.length > 0) return this.enqueue({ message, ready: true, output: 0 });
    this.emitFrame({ message, ready: true, output: 0 });
  }

  private enqueue(pending: Pending): void {
    this.outbox.push(pending);
    this.outboxBytes += sizeOf(pending.message);
    this.outboxOutput += pending.output;
    if (this.outbox.length > this.stats.queuePeak) this.stats.queuePeak = this.outbox.length;
    if (!this.outboxBehind && (this.outbox.length >= BACKLOG_PAUSE || this.outboxBytes >= this.options.budget.queueBytes ||
      this.outboxOutput >= BACKLOG_OUTPUT_BYTES)) {
      this.outboxBehind = true;
      this.updateBacklog();
    }
  }

  private dequeued(pending: Pending): void {
    this.outboxBytes -= sizeOf(pending.message);
    this.outboxOutput -= pending.output;
  }

  /**
   * Reading pauses while the outbox is behind and while the decoder is being rebuilt: frames that came
   * meanwhile waited in a queue of 32 and the rest were dropped; paused, they wait in TCP instead.
   */
  private updateBacklog(): void {
    const behind = this.outboxBehind || this.rebuilding;
    if (behind === this.behind) return;
    this.behind = behind;
    this.options.onBacklog?.(behind);
  }

  /** Events of the frames at the head of the outbox that are ready, in order. */
  private flushOutbox(): void {
    while (this.outbox.length > 0 && this.outbox[0]!.ready) {
      const pending = this.outbox.shift()!;
      this.dequeued(pending);
      this.emitFrame(pending);
    }
    if (this.outboxBehind && this.outbox.length <= BACKLOG_RESUME && this.outboxBytes <= this.resumeBytes && this.outboxOutput <= this.resumeOutput) {
      this.outboxBehind = false;
      this.updateBacklog();
    }
  }

  private emitFrame(pending: Pending): void {
    if (!this.options.isActive()) return;
    const { sessionId, emit } = this.options;
    const message = pending.message;
    switch (message.kind) {
      case 'audio': {
        if (pending.error) return this.undecodable(pending.error);
        const format = pending.format!;
        // Decoded first: devices have always received the PCM ahead of the packet it came from.
        emit({ type: 'decodedAudio', sessionId, pcm: pending.pcm!, format });
        emit({ type: 'upstreamAudio', sessionId, packet: message.packet, base64: message.data, format });
        return;
      }
      case 'text':
        return emit({ type: 'text', sessionId, text: message.text, final: message.final });
      case 'error':
        return emit({
          type: 'upstreamError', sessionId, message: message.message, ...(message.code === undefined ? {} : { code: message.code }),
        });
    }
  }

  private audio(message: Audio): void {
    const sampleRate = message.sampleRate ?? this.options.format.sampleRate;
    const channels = message.channels ?? this.options.format.channels;
    const decoder = this.options.decoder;
    if (decoder.matches(sampleRate, channels)) return this.deliver(message, sampleRate, channels);
    if (!this.mayRebuild()) {
      return this.drop('format', `upstream audio dropped: its format changed more than ${this.options.budget.rebuildsPerSecond} ` +
        `times within a second (now ${sampleRate} Hz, ${channels} channel${channels === 1 ? '' : 's'})`);
    }
    this.rebuilding = true;
    this.updateBacklog();
    this.stats.decoderRebuilds++;
    this.options.logger.debug(`session ${this.options.sessionId}: Opus decoder rebuilt for ${sampleRate} Hz, ${channels} channels`);
    decoder.reconfigure(sampleRate, channels).then(
      () => this.deliver(message, sampleRate, channels),
      (e: unknown) => this.drop('corrupt', `upstream audio could not be decoded: ${errorText(e)}`),
    ).finally(() => {
      this.rebuilding = false;
      this.drain();
      this.updateBacklog();
    }).catch((e: unknown) => this.options.logger.error(`session ${this.options.sessionId}: upstream audio: ${errorText(e)}`));
  }

  /** Frames that waited behind a rebuild, in order, until the queue is empty or another rebuild starts. */
  private drain(): void {
    while (!this.rebuilding && this.queue.length > 0) {
      const message = this.queue.shift()!;
      this.queuedBytes -= sizeOf(message);
      this.handle(message);
    }
  }

  private deliver(message: Audio, sampleRate: number, channels: number): void {
    if (!this.options.isActive()) return;
    const pending: Pending = { message, ready: false, format: { sampleRate, channels }, output: outputOf(message, sampleRate, channels) };
    this.enqueue(pending);
    // Inline decoding answers within this call, so the event goes out at once when nothing is ahead of it.
    const accepted = this.options.decoder.decode(message.packet, (error, pcm) => {
      pending.ready = true;
      if (error) pending.error = error;
      else pending.pcm = pcm;
      this.flushOutbox();
    });
    if (!accepted) {
      // Refused packets never answer: it is still the last in the outbox.
      this.dequeued(this.outbox.pop()!);
      this.drop('queue', 'upstream audio dropped: the decoder threads are behind (their queues are full)');
    }
  }

  private undecodable(e: unknown): void {
    if (e instanceof DecoderThreadError) this.drop('thread', `upstream audio lost: ${errorText(e)}`);
    else this.drop('corrupt', `upstream audio could not be decoded: ${errorText(e)}`);
  }

  private drop(reason: DropReason, message: string): void {
    // A decode or rebuild that settles after the session ended must not report for it: its Error would
    // reach a group that is gone and its burst timer would outlive the session.
    if (!this.options.isActive()) return;
    this.drops.drop(reason, message);
  }

  /** At most `rebuildsPerSecond` rebuilds in any second; a permitted one is recorded. */
  private mayRebuild(): boolean {
    const now = monotonicMs();
    while (this.rebuildTimes.length > 0 && now - this.rebuildTimes[0]! >= REBUILD_WINDOW_MS) this.rebuildTimes.shift();
    if (this.rebuildTimes.length >= this.options.budget.rebuildsPerSecond) return false;
    this.rebuildTimes.push(now);
    return true;
  }
}

/** What a queued frame holds in memory, roughly: its texts and the decoded packet. */
function sizeOf(message: UpstreamMessage): number {
  switch (message.kind) {
    case 'audio':
      return message.data.length + message.packet.length;
    case 'text':
      return message.text.length * 2;
    case 'error':
      return message.message.length * 2;
  }
}

/**
 * What an audio frame's AudioResponse weighs for each receiver: its PCM (16-bit samples for the packet's
 * duration at the rate it is decoded at) in Base64. Read from the packet's header; a packet that has
 * none readable will not decode, and weighs nothing.
 */
function outputOf(message: Audio, sampleRate: number, channels: number): number {
  let durationMs: number;
  try {
    durationMs = opusPacketDurationMs(message.packet);
  } catch {
    return 0;
  }
  return Math.ceil(((durationMs * sampleRate) / 1000) * channels * 2 * 4 / 3);
}
