// Memory a burst took must come back however the service is started (`make run`, the bare executable,
// the systemd unit). glibc's malloc by default raises its mmap threshold whenever a large block is
// freed, so after a burst of large buffers (WebSocket frames, request bodies) later ones come from the
// heap, where freed memory between live blocks stays with the process: RSS stayed at 540 MiB after a
// burst, 100 MiB idle. GLIBC_TUNABLES fixes that only where the environment sets it (the unit does),
// so the process sets the same thresholds itself, through our small addon (src/native/malloc-tune.c).
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { extractNativeAddon } from './assets.js';

/** Blocks of this size and more get their own mapping, unmapped on free (glibc.malloc.mmap_threshold). */
export const MMAP_THRESHOLD = 16 * 1024;
/** Free memory at the top of the heap above this is given back at once (glibc.malloc.trim_threshold). */
export const TRIM_THRESHOLD = 64 * 1024;

/** The addon's file name for this process's arch, as scripts/build-native.mjs names it. */
export const mallocAddonName = (arch: string = process.arch): string => `malloc_tune_linux_${arch}.node`;

interface MallocTune {
  setThresholds(mmapThreshold: number, trimThreshold: number): boolean;
}

/**
 * Sets the thresholds; returns where the addon came from. Throws with every place tried when it
 * cannot: the caller says so in the log (the service still works, its memory just does not shrink).
 */
export function tuneMalloc(options: { bundleDir?: string } = {}): string {
  const name = mallocAddonName();
  const tried: string[] = [];
  const files: string[] = [];
  try {
    const unpacked = extractNativeAddon(name);
    if (unpacked) files.push(unpacked);
  } catch (e) {
    tried.push(`addon embedded in ${process.execPath}: ${e instanceof Error ? e.message : String(e)}`);
  }
  if (options.bundleDir) files.push(path.join(options.bundleDir, 'native', name));
  for (const file of files) {
    if (!existsSync(file)) {
      tried.push(`${file}: not found`);
      continue;
    }
    try {
      const mod = createRequire(file)(file) as Partial<MallocTune>;
      if (typeof mod.setThresholds !== 'function') throw new Error('not the malloc-tune addon');
      if (!mod.setThresholds(MMAP_THRESHOLD, TRIM_THRESHOLD)) throw new Error('glibc refused the thresholds');
      return file;
    } catch (e) {
      tried.push(`${file}: ${e instanceof Error ? e.message.split('\n')[0] : String(e)}`);
    }
  }
  throw new Error(`the malloc-tune addon (${name}) did not load: ${tried.join('; ') || 'no place to look (not the bundle or an executable)'}`);
}

/** The same settings as an environment variable, for the log line that tells an operator what to do instead. */
export const GLIBC_TUNABLES_TEXT = `GLIBC_TUNABLES=glibc.malloc.mmap_threshold=${MMAP_THRESHOLD}:glibc.malloc.trim_threshold=${TRIM_THRESHOLD}`;
