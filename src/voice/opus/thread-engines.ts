// What carries a decoder thread's batches (decoder-pool.ts) there and its answers back: a node:worker_threads
// thread running the wasm decoder (decode-worker.ts), or one of the addon's native threads. A batch is the
// jobs of one event-loop turn (JOB_FIELDS numbers each) with their packets one after another; an answer
// is ToPool (decode-messages.ts), whichever engine made it.
import type { Worker } from 'node:worker_threads';
import { errorText } from '../../errors.js';
import type { Logger } from '../../log/logger.js';
import { ThrottledLog } from '../../log/throttled.js';
import { monotonicMs } from '../../monotonic-clock.js';
import { RESULT_FIELDS, type ToPool, type ToThread } from './decode-messages.js';
import { startDecodeThread } from './decode-thread.js';
import type { DecodeThread } from './decoder-pool.js';
import { MAX_PACKET_BYTES_PER_CHANNEL } from './decoder.js';
import { decodeFailureText, NativeStatus, OPEN_OFFSET, openFailureText, type NativeOpus, type NativePoolHandle } from './native-opus.js';

export interface ThreadEngine {
  /** Hands a batch over; `packets` is the batch's own buffer, which the engine may keep or transfer. */
  send(jobs: number[], packets: Uint8Array): void;
  stop(): Promise<void>;
}

/**
 * A worker thread with the wasm decoder, started by the first batch; if it dies, its sessions' decoders
 * are rebuilt on the next one, which the next batch starts. Starting a thread can fail (Node throws
 * EAGAIN when the process may have no more threads): the batch's jobs then fail as lost, and the next
 * batch tries again. So a thread that cannot start, or dies as it starts, costs a try per batch sent to
 * it, not a loop of restarts, and never an exception on the event loop.
 */
export class WorkerThreadEngine implements ThreadEngine {
  private worker: Worker | undefined;
  private stopping = false;
  private readonly startFailures: ThrottledLog;

  constructor(
    private readonly thread: DecodeThread,
    private readonly index: number,
    private readonly logger: Logger,
    private readonly startThread: () => Worker = startDecodeThread,
  ) {
    this.startFailures = startFailureLog(logger);
  }

  send(jobs: number[], packets: Uint8Array): void {
    if (!this.worker) {
      try {
        this.worker = this.start();
      } catch (e) {
        return startFailed(this.thread, this.startFailures, e);
      }
    }
    const message: ToThread = { jobs, packets: packets.buffer as ArrayBuffer };
    this.worker.postMessage(message, [message.packets]);
  }

  async stop(): Promise<void> {
    this.stopping = true;
    await this.worker?.terminate();
  }

  private start(): Worker {
    const worker = this.startThread();
    // The sockets keep the service running; a decoder thread alone must not keep a process alive.
    worker.unref();
    worker.on('message', (message: ToPool) => {
      if (worker === this.worker) this.thread.answered(message);
    });
    worker.on('error', (e) => {
      if (worker === this.worker && !this.stopping) this.logger.error(`Opus decoder thread ${this.index + 1} failed: ${e.stack ?? errorText(e)}`);
    });
    worker.on('exit', (code) => {
      if (worker === this.worker && !this.stopping) this.stopped(code);
    });
    return worker;
  }

  /** The thread died: what it held is lost, its sessions start again on a new thread (the next batch starts it). */
  private stopped(code: number): void {
    this.worker = undefined;
    this.thread.replaced();
    this.thread.failWaiting(`the decoder thread stopped (exit code ${code})`);
    this.logger.warn(`Opus decoder thread ${this.index + 1} stopped with exit code ${code}; a new one starts with the next packet for it (its ${this.thread.sessions} sessions rebuild their decoders)`);
  }
}

/** Every batch of a thread that cannot start tries again: a line each would be 50 a second per session. */
const startFailureLog = (logger: Logger): ThrottledLog => new ThrottledLog(logger, 5, 60_000, () => monotonicMs(),
  (count, seconds, last) => `${count} more time(s) in the last ${seconds} s an Opus decoder thread could not be started; the last: ${last}`);

/**
 * A thread that could not be started for a batch (Node's EAGAIN, or the addon's `cannot start a decoder
 * thread`, when the process may have no more threads): logged, and the batch's jobs failed as lost, so
 * that the sessions waiting for them go on (a decoder being opened fails, a voice start with it answers
 * 503). The next batch tries again. Thrown instead, the error reached the event loop and ended the process.
 */
function startFailed(thread: DecodeThread, log: ThrottledLog, e: unknown): void {
  log.error(`Opus decoder thread ${thread.index + 1} could not be started: ${errorText(e)}`);
  thread.failWaiting(`the decoder thread could not be started (${errorText(e)})`);
}

/**
 * The addon's decoder threads of one pool (started on first use by the addon). Each answer comes back on
 * the event loop through one Node-API thread-safe call per batch of results.
 */
export class NativeThreads {
  private readonly handle: NativePoolHandle;
  private stopped = false;
  /** Whether the process waits for the threads' answers: while any job is unanswered (pool.waiting()). */
  private waitedFor = false;
  private readonly startFailures: ThrottledLog;

  constructor(
    private readonly native: NativeOpus,
    threads: number,
    private readonly pool: { deliver: (index: number, answer: ToPool) => void; waiting: () => boolean },
    logger: Logger,
  ) {
    this.startFailures = startFailureLog(logger);
    this.handle = native.addon.createPool(threads, MAX_PACKET_BYTES_PER_CHANNEL, (index, results, pcm) => {
      if (this.stopped) return;
      pool.deliver(index, nativeAnswer(new Int32Array(results), pcm));
      this.waitFor(pool.waiting());
    });
  }

  engine(thread: DecodeThread): ThreadEngine {
    return {
      send: (jobs, packets) => {
        try {
          this.native.addon.submit(this.handle, thread.index, Int32Array.from(jobs), packets);
        } catch (e) {
          startFailed(thread, this.startFailures, e);
        }
        this.waitFor(this.pool.waiting());
      },
      // The threads are the pool's, stopped with it (stop()).
      stop: () => Promise.resolve(),
    };
  }

  private waitFor(waiting: boolean): void {
    if (waiting === this.waitedFor) return;
    this.waitedFor = waiting;
    this.native.addon.setWaiting(this.handle, waiting);
  }

  /** Stops and joins the threads; answers still on their way are dropped. Idempotent. */
  stop(): void {
    if (this.stopped) return;
    this.stopped = true;
    this.native.addon.stopPool(this.handle);
  }
}

/**
 * The addon's (status, offset, bytes) triples as ToPool: a status other than 1 is a failure, its text in
 * `errors`, worded for the kind of job (an open answers with offset -1).
 */
function nativeAnswer(results: Int32Array, pcm: ArrayBuffer): ToPool {
  const errors: string[] = [];
  for (let r = 0; r < results.length; r += RESULT_FIELDS) {
    const status = results[r]!;
    if (status !== NativeStatus.Ok) errors.push(results[r + 1] === OPEN_OFFSET ? openFailureText(status) : decodeFailureText(status));
  }
  return { results, errors, pcm };
}
