// Opus decoding for the voice sessions: on a pool of decoder threads (node:worker_threads), so that the
// event loop does I/O only and decoding uses the other cores, or inline on the event loop (threads = 0,
// for single-core boards, where a thread would only add hand-over costs). Each session is pinned to one
// thread, which keeps its decoder state: its packets are decoded in order. A thread's queue is bounded:
// a packet that finds it full is refused, and the session drops and counts it (upstream-inbound.ts).
// A thread that fails fails the packets it held, is replaced, and its sessions rebuild their decoders
// on the new one. Threads start on first use, so an idle service pays no memory for them.
import type { Worker } from 'node:worker_threads';
import { DomainError, errorText } from '../../errors.js';
import type { Logger } from '../../log/logger.js';
import { JOB_FIELDS, Op, RESULT_FIELDS, type DecodeResult, type ToPool, type ToThread } from './decode-messages.js';
import { startDecodeThread } from './decode-thread.js';
import { SessionOpusDecoder, checkFormat, type DecoderState } from './decoder.js';

/** Called once per accepted packet, in the order of the decode() calls: the PCM, or why there is none. */
export type DecodeDone = (error: Error | undefined, pcm: Buffer | undefined) => void;

/** One session's decoder, inline or on a thread. */
export interface AudioDecoder {
  readonly state: DecoderState;
  /** True when decode() would produce PCM at this rate and channel count without reconfiguring. */
  matches(sampleRate: number, channels: number): boolean;
  /** (Re)initialises the decoder for a format; resolves once usable. */
  reconfigure(sampleRate: number, channels: number): Promise<void>;
  /**
   * Decodes one packet; `done` is called synchronously (inline) or later (thread). False, and `done` is
   * never called, when the packet is refused because the session's thread has a full queue.
   */
  decode(packet: Uint8Array, done: DecodeDone): boolean;
  /** Releases the decoder. Idempotent. */
  free(): void;
}

/** A packet lost because its decoder thread failed (not because the packet was bad). */
export class DecoderThreadError extends Error {}

export interface DecoderPoolOptions {
  /** Decoder threads at most; 0 decodes inline on the event loop (VoiceService.DecoderThreads). */
  threads: number;
  /** Jobs one thread may hold before it refuses packets (VoiceService.DecoderQueuePerThread). */
  queuePerThread: number;
  logger: Logger;
  /** How a thread is started (decode-thread.ts); tests keep a handle on the threads they start. */
  startThread?: () => Worker;
}

export interface DecoderPoolStats {
  threads: number;
  /** Threads that failed and were replaced. */
  threadFailures: number;
  /** Packets refused because their thread's queue was full. */
  refused: number;
}

export class DecoderPool {
  readonly stats: DecoderPoolStats = { threads: 0, threadFailures: 0, refused: 0 };
  private readonly slots: DecodeThread[] = [];
  private nextKey = 1;
  private flushScheduled = false;
  private closed = false;

  constructor(private readonly options: DecoderPoolOptions) {
    if (!Number.isInteger(options.threads) || options.threads < 0) throw new Error(`decoder threads must be 0 or more, not ${options.threads}`);
  }

  /** A decoder for a new session: inline, or pinned to the thread with the fewest sessions. */
  create(): AudioDecoder {
    if (this.closed) throw new DomainError('unavailable', 'the Opus decoders have been shut down');
    if (this.options.threads === 0) return new InlineDecoder();
    return new ThreadDecoder(this.pick(), this.nextKey++);
  }

  /** Stops every thread; decoding after this fails. Idempotent. */
  async close(): Promise<void> {
    this.closed = true;
    const slots = this.slots.splice(0);
    await Promise.all(slots.map((slot) => slot.stop()));
  }

  /** Sends the jobs of this event-loop turn: one message per thread per turn, not one per packet. */
  scheduleFlush(): void {
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    setImmediate(() => {
      this.flushScheduled = false;
      for (const slot of this.slots) slot.flush();
    });
  }

  private pick(): DecodeThread {
    let best: DecodeThread | undefined;
    for (const slot of this.slots) if (!best || slot.sessions < best.sessions) best = slot;
    if (best && (best.sessions === 0 || this.slots.length >= this.options.threads)) return best;
    const slot = new DecodeThread(this, this.options, this.slots.length);
    this.slots.push(slot);
    this.stats.threads = this.slots.length;
    return slot;
  }
}

/** One thread and the jobs it holds; the thread is restarted if it fails. */
class DecodeThread {
  sessions = 0;
  /** Bumped when the thread is replaced: decoders made on an older one must be rebuilt. */
  generation = 0;
  private worker: Worker;
  /** What each job sent and not yet answered is waiting for, in order. */
  private readonly waiting: ((result: DecodeResult) => void)[] = [];
  /** This turn's jobs (JOB_FIELDS numbers each) and the packets of its decode jobs. */
  private jobs: number[] = [];
  private packets: Uint8Array[] = [];
  private packetBytes = 0;
  private stopping = false;

  constructor(
    private readonly pool: DecoderPool,
    private readonly options: DecoderPoolOptions,
    private readonly index: number,
  ) {
    this.worker = this.start();
  }

  /**
   * Queues a job, sent at the end of the turn; `onResult` for every job but close. False when a packet
   * (`bounded`) finds the queue full.
   */
  submit(op: Op, key: number, a: number, b: number, packet: Uint8Array | undefined, onResult: ((result: DecodeResult) => void) | undefined, bounded: boolean): boolean {
    if (this.stopping) {
      onResult?.({ ok: false, error: 'the Opus decoders have been shut down', lost: true });
      return true;
    }
    if (bounded && this.waiting.length >= this.options.queuePerThread) {
      this.pool.stats.refused++;
      return false;
    }
    this.jobs.push(op, key, a, b);
    if (packet) {
      this.packets.push(packet);
      this.packetBytes += packet.length;
    }
    if (onResult) this.waiting.push(onResult);
    this.pool.scheduleFlush();
    return true;
  }

  flush(): void {
    if (this.jobs.length === 0 || this.stopping) return;
    // The packets are copied once, into the batch's own ArrayBuffer: they may be views of Node's shared pool.
    const packets = new Uint8Array(this.packetBytes);
    let offset = 0;
    for (const packet of this.packets) {
      packets.set(packet, offset);
      offset += packet.length;
    }
    const message: ToThread = { jobs: this.jobs, packets: packets.buffer };
    this.jobs = [];
    this.packets = [];
    this.packetBytes = 0;
    this.worker.postMessage(message, [packets.buffer]);
  }

  async stop(): Promise<void> {
    this.stopping = true;
    this.failWaiting('the Opus decoders have been shut down');
    await this.worker.terminate();
  }

  private start(): Worker {
    const worker = (this.options.startThread ?? startDecodeThread)();
    // The sockets keep the service running; a decoder thread alone must not keep a process alive.
    worker.unref();
    worker.on('message', (message: ToPool) => {
      if (worker === this.worker) this.answered(message);
    });
    worker.on('error', (e) => {
      if (worker === this.worker && !this.stopping) this.options.logger.error(`Opus decoder thread ${this.index + 1} failed: ${e.stack ?? errorText(e)}`);
    });
    worker.on('exit', (code) => {
      if (worker === this.worker && !this.stopping) this.replace(code);
    });
    return worker;
  }

  /** A batch of results: each to the job waiting for it; the PCM as views of the one buffer, not copies. */
  private answered({ results, errors, pcm }: ToPool): void {
    let failures = 0;
    for (let r = 0; r < results.length; r += RESULT_FIELDS) {
      const onResult = this.waiting.shift();
      if (!onResult) return;
      if (results[r] === 1) {
        const bytes = results[r + 2]!;
        onResult({ ok: true, pcm: bytes > 0 ? Buffer.from(pcm, results[r + 1]!, bytes) : undefined });
      } else {
        onResult({ ok: false, error: errors[failures++] ?? 'failed', lost: false });
      }
    }
  }

  /** The thread died: what it held is lost, its sessions start again on a new thread. */
  private replace(code: number): void {
    this.pool.stats.threadFailures++;
    this.jobs = [];
    this.packets = [];
    this.packetBytes = 0;
    this.failWaiting(`the decoder thread stopped (exit code ${code})`);
    this.generation++;
    this.options.logger.warn(`Opus decoder thread ${this.index + 1} stopped with exit code ${code}; starting a new one (its ${this.sessions} sessions rebuild their decoders)`);
    this.worker = this.start();
  }

  private failWaiting(reason: string): void {
    const waiting = this.waiting.splice(0);
    for (const onResult of waiting) onResult({ ok: false, error: reason, lost: true });
  }
}

/** A session's decoder on a thread: its state here, its wasm decoder there. */
class ThreadDecoder implements AudioDecoder {
  private stateValue: DecoderState = 'Unconfigured';
  private rate = 0;
  private channelCount = 0;
  /** The thread generation the decoder was made on. */
  private madeOn = -1;
  /** Bumped by every reconfigure, so that a superseded one does not win. */
  private configuring = 0;

  constructor(private readonly thread: DecodeThread, private readonly key: number) {
    thread.sessions++;
  }

  get state(): DecoderState {
    return this.stateValue === 'Ready' && this.madeOn !== this.thread.generation ? 'Unconfigured' : this.stateValue;
  }

  matches(sampleRate: number, channels: number): boolean {
    return this.state === 'Ready' && this.rate === sampleRate && this.channelCount === channels;
  }

  reconfigure(sampleRate: number, channels: number): Promise<void> {
    if (this.stateValue === 'Freed') return Promise.reject(new DomainError('unavailable', 'Opus decoder has been freed'));
    checkFormat(sampleRate, channels);
    if (this.matches(sampleRate, channels)) return Promise.resolve();
    const attempt = ++this.configuring;
    this.stateValue = 'Configuring';
    return new Promise((resolve, reject) => {
      this.thread.submit(Op.Open, this.key, sampleRate, channels, undefined, (result) => {
        // free() or another reconfigure() came meanwhile: this one no longer matters.
        if (attempt !== this.configuring || this.stateValue === 'Freed') return resolve();
        if (!result.ok) {
          this.stateValue = 'Unconfigured';
          return reject(new DomainError('unavailable', `Opus decoder could not be initialised: ${result.error}`));
        }
        this.stateValue = 'Ready';
        this.rate = sampleRate;
        this.channelCount = channels;
        this.madeOn = this.thread.generation;
        resolve();
      }, false);
    });
  }

  decode(packet: Uint8Array, done: DecodeDone): boolean {
    if (this.state !== 'Ready') {
      done(new DomainError('unavailable', `Opus decoder is not ready (${this.state})`), undefined);
      return true;
    }
    return this.thread.submit(Op.Decode, this.key, packet.length, 0, packet, (result) => {
      if (result.ok && result.pcm) return done(undefined, result.pcm);
      if (result.ok) return done(new DomainError('invalid_argument', 'corrupt Opus packet: no samples decoded'), undefined);
      done(result.lost ? new DecoderThreadError(result.error) : new DomainError('invalid_argument', result.error), undefined);
    }, true);
  }

  free(): void {
    if (this.stateValue === 'Freed') return;
    this.stateValue = 'Freed';
    this.configuring++;
    this.thread.sessions--;
    this.thread.submit(Op.Close, this.key, 0, 0, undefined, undefined, false);
  }
}

/** The decoder on the event loop: SessionOpusDecoder, answering at once. */
class InlineDecoder implements AudioDecoder {
  private readonly decoder = new SessionOpusDecoder();

  get state(): DecoderState { return this.decoder.state; }

  matches(sampleRate: number, channels: number): boolean {
    return this.decoder.matches(sampleRate, channels);
  }

  reconfigure(sampleRate: number, channels: number): Promise<void> {
    return this.decoder.reconfigure(sampleRate, channels);
  }

  decode(packet: Uint8Array, done: DecodeDone): boolean {
    let pcm: Buffer;
    try {
      pcm = this.decoder.decode(packet);
    } catch (e) {
      done(e instanceof Error ? e : new Error(errorText(e)), undefined);
      return true;
    }
    done(undefined, pcm);
    return true;
  }

  free(): void {
    this.decoder.free();
  }
}
