// Memory a burst took must come back however the service is started (`make run`, the bare executable,
// the systemd unit). glibc's malloc by default raises its mmap threshold whenever a large block is
// freed, so after a burst of large buffers (WebSocket frames, request bodies) later ones come from the
// heap, where freed memory between live blocks stays with the process: RSS stayed at 540 MiB after a
// burst, 100 MiB idle. GLIBC_TUNABLES fixes that only where the environment sets it (the unit does),
// so the process sets the same thresholds itself, through our small addon (src/native/malloc-tune.c).
import { createRequire } from 'node:module';
import { mallocAddonFileName } from './asset-manifest.mjs';
import { assetFile } from './assets.js';

/**
 * Blocks of this size and more get their own mapping, unmapped on free (glibc.malloc.mmap_threshold).
 * Above 64 KiB: Node allocates a 64 KiB buffer for every read of a stream socket (each upstream link's
 * socket), and at 16 KiB each of those reads cost an mmap and a munmap, the munmap interrupting the
 * process's other threads to flush their TLBs: 7 % of the service's CPU at 300 talking devices, and
 * 8-10 % of its CPU per packet came back above 64 KiB. Blocks that large in a burst (1 MB frames and
 * bodies) still get their own mapping.
 */
export const MMAP_THRESHOLD = 72 * 1024;
/** Free memory at the top of the heap above this is given back at once (glibc.malloc.trim_threshold). */
export const TRIM_THRESHOLD = 64 * 1024;

/**
 * The trim threshold until the service listens; then TRIM_THRESHOLD, and one trim. Start-up allocates
 * and frees in waves (V8 compiling the program; sql.js' first statements compiling sqlite's functions),
 * and at 64 KiB each wave's free top went back to the kernel only to be taken again: 324 brk calls
 * against 53, 2,000 more page faults and 20-40 ms more before listening, here. What start-up leaves free
 * goes back all the same, when it is done: the main heap's with the trim, and the other threads' heaps'
 * tops, which no trim reaches, by a free in each (the addon's trimThreadHeaps).
 */
export const STARTUP_TRIM_THRESHOLD = 16 * 1024 * 1024;

/**
 * Heaps (arenas) for all threads (glibc.malloc.arena_max): the main thread's and one the others share
 * (V8's helpers, libuv's pool, the decoder threads). Each arena keeps its free memory resident; by
 * default glibc makes up to eight per core, and idle RSS was 0.4 MiB higher. CPU per packet at 150
 * talking devices was the same with two. Set from inside the process it caps only the threads started
 * after it: V8's helpers, started before the service's code runs, already have theirs (an idle service
 * started without GLIBC_TUNABLES had three or four thread heaps, one with the unit's environment).
 */
export const ARENA_MAX = 2;

/**
 * How often free memory inside the heap is given back (malloc_trim): the thresholds return only the top
 * of the heap, and the holes start-up and V8's collections leave below live blocks stay resident
 * (about 2 MiB of an idle service). A walk of a small heap takes well under a millisecond.
 */
export const TRIM_INTERVAL_MS = 15_000;

/**
 * How long after the service listens the steady thresholds are set and start-up's free memory given
 * back: the trim and the visits of every thread heap took 30-40 ms of the main thread here, and a
 * service that did them as it began to listen answered its first request (systemd's or a technician's
 * /health) that much later.
 */
export const SETTLE_DELAY_MS = 1_000;

interface MallocTune {
  setThresholds(mmapThreshold: number, trimThreshold: number, arenaMax: number): boolean;
  trim(): boolean;
  trimThreadHeaps(): boolean;
}

/** What settle() did: whether the trim gave memory back (nothing to give is no failure), and what failed. */
export interface Settled {
  readonly released: boolean;
  /** Set when glibc refused the steady thresholds or the thread heaps could not all be visited. */
  readonly problem: string | undefined;
}

/**
 * Sets the thresholds, the start-up trim threshold first; returns the addon's file, its trim() (true
 * when memory went back), and settle(), which sets the steady thresholds and gives back what start-up
 * left free in every thread's heap. Throws saying why when it cannot: the caller says so in the log (the
 * service still works, its memory just does not shrink after a burst).
 */
export function tuneMalloc(bundleDir?: string): { file: string; trim: () => boolean; settle: () => Settled } {
  const file = assetFile(`native/${mallocAddonFileName(process.arch)}`, bundleDir);
  let mod: Partial<MallocTune>;
  try {
    mod = createRequire(file)(file) as Partial<MallocTune>;
  } catch (e) {
    throw new Error(`the malloc-tune addon ${file} did not load: ${e instanceof Error ? e.message.split('\n')[0] : String(e)}`);
  }
  if (typeof mod.setThresholds !== 'function' || typeof mod.trim !== 'function' || typeof mod.trimThreadHeaps !== 'function') {
    throw new Error(`${file} is not the malloc-tune addon of this build`);
  }
  const { setThresholds, trim, trimThreadHeaps } = mod as MallocTune;
  if (!setThresholds(MMAP_THRESHOLD, STARTUP_TRIM_THRESHOLD, ARENA_MAX)) throw new Error('glibc refused the malloc thresholds');
  // The thread heaps' tops first, at the steady threshold (their trim checks the threshold of the moment).
  const settle = (): Settled => {
    const steady = setThresholds(MMAP_THRESHOLD, TRIM_THRESHOLD, ARENA_MAX);
    const problem = !steady
      ? 'glibc refused the steady malloc thresholds: the start-up ones stay'
      : trimThreadHeaps() ? undefined : 'not every thread heap could be visited: some may keep what start-up freed';
    return { released: trim(), problem };
  };
  return { file, trim, settle };
}

/** The same settings as an environment variable, for the log line that tells an operator what to do instead. */
export const GLIBC_TUNABLES_TEXT = `GLIBC_TUNABLES=glibc.malloc.mmap_threshold=${MMAP_THRESHOLD}:glibc.malloc.trim_threshold=${TRIM_THRESHOLD}:glibc.malloc.arena_max=${ARENA_MAX}`;
