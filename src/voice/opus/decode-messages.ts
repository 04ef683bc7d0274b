// What the event loop and a decoder thread (decode-worker.ts) tell each other, one message per batch
// each way: the jobs of one event-loop turn, and their results. Packets travel in one ArrayBuffer per
// batch and the PCM comes back in one ArrayBuffer per batch, both transferred: a transfer per packet,
// or a structured clone of an object per job, cost more than the decoding they carry.
// Every job but `close` gets exactly one result, in the order the jobs were sent.

/**
 * Refuse stands for a packet refused before decoding (empty, or too large): the thread answers it with a
 * failure without looking at anything, so that its answer comes in order with its session's others.
 */
export const Op = { Open: 0, Decode: 1, Close: 2, Refuse: 3 } as const;
export type Op = (typeof Op)[keyof typeof Op];

/** Numbers per job in ToThread.jobs: op, session key, then (open) sample rate and channels, (decode) packet length. */
export const JOB_FIELDS = 4;
/** Numbers per result in ToPool.results: 1 for success (0 for failure, its text in `errors`), PCM offset and bytes in `pcm`. */
export const RESULT_FIELDS = 3;

export interface ToThread {
  jobs: number[];
  /** The decode jobs' packets, one after another. */
  packets: ArrayBuffer;
}

export interface ToPool {
  /** A plain array from a worker thread; an Int32Array from the addon's threads. */
  results: ArrayLike<number>;
  /** Why each failed job failed, in order. */
  errors: string[];
  /** The decoded packets' 16-bit little-endian interleaved PCM, one after another. */
  pcm: ArrayBuffer;
}

/** One result as the pool hands it to whoever waits for it; `lost`: the thread failed or was stopped. */
export type DecodeResult =
  | { ok: true; pcm: Buffer | undefined }
  | { ok: false; error: string; lost: boolean };
