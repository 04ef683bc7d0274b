// The body of a decoder thread (node:worker_threads): the Opus decoders of the sessions pinned to it, fed
// by batches of jobs from decoder-pool.ts. Jobs run strictly in the order they came, across sessions too,
// so each session's packets are decoded in order and the results go back in the order the pool expects
// them. A batch's PCM is written straight into one ArrayBuffer, which is transferred, not copied.
import { parentPort } from 'node:worker_threads';
import { errorText } from '../../errors.js';
import { SessionOpusDecoder } from './decoder.js';
import { JOB_FIELDS, Op, type ToPool, type ToThread } from './decode-messages.js';
import { OpusTrapError } from './opus-wasm.js';

const port = parentPort;
if (!port) throw new Error('decode-worker runs only as a worker thread');

const decoders = new Map<number, SessionOpusDecoder>();
const batches: ToThread[] = [];
let running = false;

port.on('message', (message: ToThread) => {
  batches.push(message);
  // A decoder lost to a wasm trap that cannot be made anew ends the thread with the error: see rebuildLost().
  if (!running) run().catch((e: unknown) => setImmediate(() => { throw e; }));
});

/** The results being gathered, sent at the end of a batch or before waiting for a decoder to open. */
class Results {
  results: number[] = [];
  errors: string[] = [];
  private pcm = new ArrayBuffer(16 * 1024);
  private used = 0;

  /** `pcm` is a view alloc() gave (a packet may take more room than its PCM: see toInt16Pcm). */
  ok(pcm: Buffer | undefined): void {
    this.results.push(1, pcm?.byteOffset ?? 0, pcm?.length ?? 0);
  }

  failed(error: string): void {
    this.results.push(0, 0, 0);
    this.errors.push(error);
  }

  /** Room for the next packet's PCM, at the end of the batch's buffer (grown by doubling when short). */
  readonly alloc = (bytes: number): Buffer => {
    if (this.used + bytes > this.pcm.byteLength) {
      const grown = new ArrayBuffer(Math.max(2 * this.pcm.byteLength, this.used + bytes));
      new Uint8Array(grown).set(new Uint8Array(this.pcm, 0, this.used));
      this.pcm = grown;
    }
    const out = Buffer.from(this.pcm, this.used, bytes);
    this.used += bytes;
    return out;
  };

  send(): void {
    if (this.results.length === 0) return;
    const pcm = this.pcm;
    const message: ToPool = { results: this.results, errors: this.errors, pcm };
    port!.postMessage(message, [pcm]);
    this.results = [];
    this.errors = [];
    this.pcm = new ArrayBuffer(Math.max(16 * 1024, this.used));
    this.used = 0;
  }
}

const out = new Results();

/** Works through the batches; an open is awaited, the jobs behind it wait for it. */
async function run(): Promise<void> {
  running = true;
  while (batches.length > 0) {
    const { jobs, packets } = batches.shift()!;
    let offset = 0;
    for (let j = 0; j < jobs.length; j += JOB_FIELDS) {
      const op = jobs[j]!;
      const key = jobs[j + 1]!;
      if (op === Op.Open) {
        let decoder = decoders.get(key);
        if (!decoder) decoders.set(key, (decoder = new SessionOpusDecoder()));
        // Results before an await go out first: their sessions need not wait for another's decoder.
        out.send();
        try {
          await decoder.reconfigure(jobs[j + 2]!, jobs[j + 3]!);
          out.ok(undefined);
        } catch (e) {
          out.failed(errorText(e));
          if (e instanceof OpusTrapError) await rebuildLost();
        }
      } else if (op === Op.Decode) {
        const length = jobs[j + 2]!;
        const packet = new Uint8Array(packets, offset, length);
        offset += length;
        const decoder = decoders.get(key);
        try {
          if (!decoder) throw new Error('no decoder for this session on this thread');
          out.ok(decoder.decode(packet, out.alloc));
        } catch (e) {
          out.failed(errorText(e));
          if (e instanceof OpusTrapError) await rebuildLost();
        }
      } else if (op === Op.Refuse) {
        out.failed('refused');
      } else {
        decoders.get(key)?.free();
        decoders.delete(key);
      }
    }
    out.send();
  }
  running = false;
}

/**
 * A wasm trap took the decoder states of its instance with it (opus-wasm.ts), those of other sessions on
 * this thread too, which the pool does not know of: it would go on sending their packets to states that
 * are gone. So every decoder that lost its state is made anew, in its format, before the next job (the
 * answers so far go out first), and its session goes on with a fresh decoder, as after a rebuild. One
 * that cannot be made ends the thread with the error: the pool replaces it and its sessions rebuild there.
 */
async function rebuildLost(): Promise<void> {
  out.send();
  for (const decoder of decoders.values()) {
    if (decoder.state === 'Unconfigured' && decoder.sampleRate !== 0) await decoder.reconfigure(decoder.sampleRate, decoder.channels);
  }
}
