// Starting one decoder thread. The bundle carries the thread's code as a string (build.mjs bundles
// decode-worker.ts on its own and defines VOICE_HUB_DECODE_WORKER), evaluated by the Worker: a file path
// would not do, since inside a single executable there is no file to point at (the bundle is a blob in
// the binary, and __filename names the binary itself). Run from source (tests), the thread loads the
// TypeScript module through tsx, which is what runs the sources. node:worker_threads is loaded by the
// first thread started: with the system libopus (the usual case) no Node worker is ever started.
import { createRequire } from 'node:module';
import type { Worker } from 'node:worker_threads';

declare const VOICE_HUB_DECODE_WORKER: string | undefined;

const NAME = 'opus-decoder';

export function startDecodeThread(): Worker {
  const { Worker } = createRequire(import.meta.url)('node:worker_threads') as typeof import('node:worker_threads');
  if (typeof VOICE_HUB_DECODE_WORKER === 'string') return new Worker(VOICE_HUB_DECODE_WORKER, { eval: true, name: NAME });
  const tsx = import.meta.resolve('tsx/esm/api');
  const entry = new URL('./decode-worker.ts', import.meta.url).href;
  const boot = `import(${JSON.stringify(tsx)}).then((tsx) => { tsx.register(); return import(${JSON.stringify(entry)}); })`;
  return new Worker(boot, { eval: true, name: NAME });
}
