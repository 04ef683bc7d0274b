// The body of a decoder thread (node:worker_threads): the Opus decoders of the sessions pinned to it, fed
// by batches of jobs from decoder-pool.ts. Jobs run strictly in the order they came, across sessions too,
// so each session's packets are decoded in order and the results go back in the order the pool expects
// them. Each decoded packet's PCM is written to an ArrayBuffer of its own and transferred, not copied.
import { parentPort } from 'node:worker_threads';
import { errorText } from '../../errors.js';
import { SessionOpusDecoder } from './decoder.js';
import type { DecodeJob, DecodeResult, ToPool, ToThread } from './decode-messages.js';

const port = parentPort;
if (!port) throw new Error('decode-worker runs only as a worker thread');

const decoders = new Map<number, SessionOpusDecoder>();
const jobs: DecodeJob[] = [];
let running = false;

/** Each packet's PCM in an ArrayBuffer of its own, so that it can be transferred to the event loop. */
const ownBuffer = (bytes: number): Buffer => Buffer.from(new ArrayBuffer(bytes));

port.on('message', (message: ToThread) => {
  for (const job of message.jobs) jobs.push(job);
  if (!running) void run();
});

/** Works through the jobs; a reconfigure is awaited, the jobs behind it wait for it. */
async function run(): Promise<void> {
  running = true;
  let results: DecodeResult[] = [];
  let transfer: ArrayBuffer[] = [];
  const flush = (): void => {
    if (results.length === 0) return;
    const out: ToPool = { results };
    port!.postMessage(out, transfer);
    results = [];
    transfer = [];
  };
  while (jobs.length > 0) {
    const job = jobs.shift()!;
    switch (job.op) {
      case 'open': {
        let decoder = decoders.get(job.key);
        if (!decoder) decoders.set(job.key, (decoder = new SessionOpusDecoder()));
        // Results before an await go out first: their sessions need not wait for another's decoder.
        flush();
        try {
          await decoder.reconfigure(job.sampleRate, job.channels);
          results.push({ op: 'open' });
        } catch (e) {
          results.push({ op: 'open', error: errorText(e) });
        }
        break;
      }
      case 'decode': {
        const decoder = decoders.get(job.key);
        try {
          if (!decoder) throw new Error('no decoder for this session on this thread');
          const pcm = decoder.decode(job.packet, ownBuffer);
          const buffer = pcm.buffer as ArrayBuffer;
          results.push({ op: 'decode', pcm: buffer });
          transfer.push(buffer);
        } catch (e) {
          results.push({ op: 'decode', error: errorText(e) });
        }
        break;
      }
      case 'close':
        decoders.get(job.key)?.free();
        decoders.delete(job.key);
        break;
    }
  }
  flush();
  running = false;
}
