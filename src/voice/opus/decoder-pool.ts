// Opus decoding for the voice sessions: on a pool of decoder threads, so that the event loop does I/O only
// and decoding uses the other cores, or inline on the event loop (threads = 0, for single-core boards,
// where a thread would only add hand-over costs). Decoding is the system libopus through our addon
// (native-opus.ts) when it loaded, on the addon's own threads; otherwise the bundled wasm libopus, on
// node:worker_threads (thread-engines.ts). Each session is pinned to one thread, which keeps its decoder
// state: its packets are decoded in order. A thread's queue is bounded: a packet that finds it full is
// refused, and the session drops and counts it (upstream-inbound.ts). A worker thread that fails fails
// the packets it held, is replaced, and its sessions rebuild their decoders on the new one. Threads start
// on first use, so an idle service pays no memory for them.
import type { Worker } from 'node:worker_threads';
import { EndOfTurn } from '../../end-of-turn.js';
import { DomainError } from '../../errors.js';
import { Fifo } from '../../fifo.js';
import type { Logger } from '../../log/logger.js';
import { Op, RESULT_FIELDS, type DecodeResult, type ToPool } from './decode-messages.js';
import { corruptPacket, needsReconfigure, packetProblem, type DecoderState } from './decoder.js';
import { InlineNativeDecoder, InlineWasmDecoder } from './inline-decoders.js';
import { SlotNumbers, type NativeOpus } from './native-opus.js';
import { NativeThreads, WorkerThreadEngine, type ThreadEngine } from './thread-engines.js';

/** Called once per accepted packet: the PCM, or why there is none. */
export type DecodeDone = (error: Error | undefined, pcm: Buffer | undefined) => void;

/** One session's decoder, inline or on a thread. */
export interface AudioDecoder {
  readonly state: DecoderState;
  /** True when decode() would produce PCM at this rate and channel count without reconfiguring. */
  matches(sampleRate: number, channels: number): boolean;
  /** (Re)initialises the decoder for a format; resolves once usable. */
  reconfigure(sampleRate: number, channels: number): Promise<void>;
  /**
   * Decodes one packet; `done` is called synchronously (inline) or later (thread), for a session's
   * packets in the order of the decode() calls. False, and `done` is never called, when the packet is
   * refused because the session's thread has a full queue.
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
  /** The system libopus (loadNativeOpus); without it the bundled wasm libopus decodes. */
  native?: NativeOpus;
  /** How a wasm decoder thread is started (decode-thread.ts); tests keep a handle on the threads they start. */
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
  /** The addon's threads, when decoding is native and on threads (made with the first thread). */
  private nativeThreads: NativeThreads | undefined;
  private closed = false;

  constructor(private readonly options: DecoderPoolOptions) {
    if (!Number.isInteger(options.threads) || options.threads < 0) throw new Error(`decoder threads must be 0 or more, not ${options.threads}`);
  }

  /** Which libopus decodes, for the log and diagnostics. */
  get engine(): string {
    const where = this.options.threads === 0 ? 'inline on the event loop' : `on up to ${this.options.threads} decoder thread${this.options.threads === 1 ? '' : 's'}`;
    const native = this.options.native;
    return native ? `${native.version} (system library, ${where})` : `the bundled wasm libopus (${where})`;
  }

  /** A decoder for a new session: inline, or pinned to the thread with the fewest sessions. */
  create(): AudioDecoder {
    if (this.closed) throw new DomainError('unavailable', 'the Opus decoders have been shut down');
    if (this.options.threads === 0) return this.options.native ? new InlineNativeDecoder(this.options.native) : new InlineWasmDecoder();
    return new ThreadDecoder(this.pick());
  }

  /** Stops every thread; decoding after this fails. Idempotent. */
  async close(): Promise<void> {
    this.closed = true;
    const slots = this.slots.splice(0);
    await Promise.all(slots.map((slot) => slot.stop()));
    this.nativeThreads?.stop();
  }

  private pick(): DecodeThread {
    let best: DecodeThread | undefined;
    for (const slot of this.slots) if (!best || slot.sessions < best.sessions) best = slot;
    if (best && (best.sessions === 0 || this.slots.length >= this.options.threads)) return best;
    const slot = new DecodeThread(this, this.options, this.slots.length, (thread) => this.engineFor(thread));
    this.slots.push(slot);
    this.stats.threads = this.slots.length;
    return slot;
  }

  private engineFor(thread: DecodeThread): ThreadEngine {
    const { native, threads, logger, startThread } = this.options;
    if (!native) return new WorkerThreadEngine(thread, thread.index, logger, startThread);
    this.nativeThreads ??= new NativeThreads(native, threads, {
      deliver: (index, answer) => this.slots[index]?.answered(answer),
      waiting: () => this.slots.some((slot) => slot.waitingFor > 0),
    }, logger);
    return this.nativeThreads.engine(thread);
  }
}

/** Threads with jobs of this turn: one batch per thread per turn (or per MAX_HOLD_MS of a long one), not per packet. */
const toSend = new EndOfTurn<DecodeThread>((thread) => thread.flush());

/** One thread and the jobs it holds. */
export class DecodeThread {
  sessions = 0;
  /** Bumped when the thread is replaced: decoders made on an older one must be rebuilt. */
  generation = 0;
  /** The numbers of this thread's decoder states. */
  readonly keys = new SlotNumbers();
  private readonly engine: ThreadEngine;
  /** What each job sent and not yet answered is waiting for, in order. */
  private readonly waiting = new Fifo<(result: DecodeResult) => void>();
  /** This turn's jobs (JOB_FIELDS numbers each) and the packets of its decode jobs. */
  private jobs: number[] = [];
  private packets: Uint8Array[] = [];
  private packetBytes = 0;
  private stopping = false;

  constructor(
    private readonly pool: DecoderPool,
    private readonly options: DecoderPoolOptions,
    readonly index: number,
    engine: (thread: DecodeThread) => ThreadEngine,
  ) {
    this.engine = engine(this);
  }

  /**
   * Queues a job, sent at the end of the turn at the latest (end-of-turn.ts); `onResult` for every job
   * but close. False when a packet (`bounded`) finds the queue full.
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
    toSend.add(this);
    return true;
  }

  flush(): void {
    if (this.jobs.length === 0 || this.stopping) return;
    // The packets are copied once, into the batch's own buffer: they may be views of Node's shared pool.
    const packets = new Uint8Array(this.packetBytes);
    let offset = 0;
    for (const packet of this.packets) {
      packets.set(packet, offset);
      offset += packet.length;
    }
    const jobs = this.jobs;
    this.jobs = [];
    this.packets = [];
    this.packetBytes = 0;
    this.engine.send(jobs, packets);
  }

  async stop(): Promise<void> {
    this.stopping = true;
    this.failWaiting('the Opus decoders have been shut down');
    await this.engine.stop();
  }

  /** A batch of results: each to the job waiting for it; the PCM as views of the one buffer, not copies. */
  answered({ results, errors, pcm }: ToPool): void {
    if (this.stopping) return;
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
  replaced(): void {
    this.pool.stats.threadFailures++;
    this.jobs = [];
    this.packets = [];
    this.packetBytes = 0;
    this.generation++;
  }

  /** Jobs sent and not answered yet. */
  get waitingFor(): number {
    return this.waiting.length;
  }

  failWaiting(reason: string): void {
    const waiting = this.waiting.takeAll();
    for (const onResult of waiting) onResult({ ok: false, error: reason, lost: true });
  }
}

/** A session's decoder on a thread: its state here, its decoder there. */
class ThreadDecoder implements AudioDecoder {
  private stateValue: DecoderState = 'Unconfigured';
  private rate = 0;
  private channelCount = 0;
  /** The thread generation the decoder was made on. */
  private madeOn = -1;
  /** Bumped by every reconfigure, so that a superseded one does not win. */
  private configuring = 0;
  private readonly key: number;

  constructor(private readonly thread: DecodeThread) {
    thread.sessions++;
    this.key = thread.keys.take();
  }

  get state(): DecoderState {
    return this.stateValue === 'Ready' && this.madeOn !== this.thread.generation ? 'Unconfigured' : this.stateValue;
  }

  matches(sampleRate: number, channels: number): boolean {
    return this.state === 'Ready' && this.rate === sampleRate && this.channelCount === channels;
  }

  async reconfigure(sampleRate: number, channels: number): Promise<void> {
    if (!needsReconfigure(this, sampleRate, channels)) return;
    const attempt = ++this.configuring;
    this.stateValue = 'Configuring';
    await new Promise<void>((resolve, reject) => {
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
    const problem = packetProblem(packet.length, this.channelCount);
    // Answered through the thread all the same, so that it comes in order with the packets before it.
    if (problem) return this.thread.submit(Op.Refuse, this.key, 0, 0, undefined, () => done(problem, undefined), true);
    return this.thread.submit(Op.Decode, this.key, packet.length, 0, packet, (result) => {
      if (result.ok && result.pcm) return done(undefined, result.pcm);
      if (result.ok) return done(corruptPacket(0), undefined);
      done(result.lost ? new DecoderThreadError(result.error) : new DomainError('invalid_argument', result.error), undefined);
    }, true);
  }

  free(): void {
    if (this.stateValue === 'Freed') return;
    this.stateValue = 'Freed';
    this.configuring++;
    this.thread.sessions--;
    this.thread.submit(Op.Close, this.key, 0, 0, undefined, undefined, false);
    // Safe to hand out again at once: the thread runs this close before any later job for the number.
    this.thread.keys.release(this.key);
  }
}
