// Starting one decoder thread. A build carries the thread's code as a program part of its own
// (DECODE_WORKER_PART: build.mjs bundles decode-worker.ts apart), read through the asset lookup and
// evaluated by the Worker: a file path would not do, since inside a single executable there is no file
// to point at. Run from source (tests), the thread loads the TypeScript module through tsx, which is
// what runs the sources. node:worker_threads is loaded by the first thread started: with the system
// libopus (the usual case) no Node worker is ever started.
import { createRequire } from 'node:module';
import type { Worker } from 'node:worker_threads';
import { DECODE_WORKER_PART } from '../../runtime/asset-manifest.mjs';
import { BUNDLE_DIR, requireAsset } from '../../runtime/assets.js';

const NAME = 'opus-decoder';

export function startDecodeThread(): Worker {
  const { Worker } = createRequire(import.meta.url)('node:worker_threads') as typeof import('node:worker_threads');
  // A build (the bundle, or an executable, which runs the bundle) has a folder; tsx has none.
  if (BUNDLE_DIR !== undefined) return new Worker(requireAsset(DECODE_WORKER_PART).toString('utf8'), { eval: true, name: NAME });
  const tsx = import.meta.resolve('tsx/esm/api');
  const entry = new URL('./decode-worker.ts', import.meta.url).href;
  const boot = `import(${JSON.stringify(tsx)}).then((tsx) => { tsx.register(); return import(${JSON.stringify(entry)}); })`;
  return new Worker(boot, { eval: true, name: NAME });
}
