// What the event loop and a decoder thread (decode-worker.ts) tell each other. Sessions are numbered
// per pool (`key`); every job but `close` gets exactly one result, in the order the jobs were sent.

export type DecodeJob =
  /** Makes (or remakes) the session's decoder for this format; later jobs of the session wait for it. */
  | { op: 'open'; key: number; sampleRate: number; channels: number }
  /** The packet in an ArrayBuffer of its own, transferred. */
  | { op: 'decode'; key: number; packet: Uint8Array }
  /** The session ended: its decoder is freed. No result. */
  | { op: 'close'; key: number };

export type DecodeResult =
  | { op: 'open'; error?: string }
  /** 16-bit little-endian interleaved PCM, transferred; or why the packet could not be decoded. */
  | { op: 'decode'; pcm?: ArrayBuffer; error?: string }
  /** Made by the pool, never by a thread: the thread failed or was stopped before it answered. */
  | { op: 'lost'; error: string };

export interface ToThread {
  jobs: DecodeJob[];
}

export interface ToPool {
  results: DecodeResult[];
}
