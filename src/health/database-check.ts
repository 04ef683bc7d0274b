// The database health check: a real read, a writable data dir, the outcome of the latest write of the
// database file, and the free space left for the next one. A small probe file can
// still be written where the whole database file no longer fits, so the probe alone is not the truth.
import { statfsSync } from 'node:fs';
import type { WriteOutcome } from '../store/types.js';
import { taggedCheck, type CheckResult, type HealthCheck } from './checks.js';

/** What the check needs of the store (src/store/index.ts fits). */
export interface DatabaseStatusSource {
  /** A real read and a probe file in the data dir; throws with the reason when either fails. */
  check(): Promise<void>;
  /** Writes whatever memory holds that the file does not; rejects when that write fails. */
  flush(): Promise<void>;
  readonly lastWrite: WriteOutcome | undefined;
}

export interface DatabaseCheckOptions {
  dataDir: string;
  /** Storage.MinFreeBytes: less free space than this in the data dir is Degraded; 0 switches it off. */
  minFreeBytes: number;
}

const TAGS = ['database'];

/** `1536` -> `1.5 KiB`: free space as a technician reads it. */
export function formatBytes(bytes: number): string {
  const units = ['bytes', 'KiB', 'MiB', 'GiB', 'TiB'];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return unit === 0 ? `${value} bytes` : `${Number(value.toFixed(1))} ${units[unit]}`;
}

const messageOf = (e: unknown): string => (e instanceof Error ? e.message || e.name : String(e));

/**
 * Unhealthy when the read or the probe fails, or when the latest write of the database failed (that
 * write is tried again here, so freeing space is enough to recover, and the answer is the file's own,
 * not a probe's); Degraded when the data dir has less than `minFreeBytes` free, before writes fail.
 * Requests that arrive while a check runs share it: a burst of /health requests is one probe file (and
 * at most one retried write), not one each (SD cards wear out).
 */
export function createDatabaseCheck(store: DatabaseStatusSource, options: DatabaseCheckOptions): HealthCheck {
  let inflight: Promise<CheckResult> | undefined;
  const unhealthy = (text: string, data: Record<string, unknown> = {}): CheckResult => ({ status: 'Unhealthy', description: text, exception: text, data, tags: TAGS });

  // Synchronous: one statfs(2) answered from the kernel's memory, where the promise form's thread-pool
  // round trip cost a quarter of /health's CPU. bavail, not bfree: the service's own user cannot use the
  // blocks reserved for root.
  const readFree = (): { bytes: number } | { error: string } => {
    try {
      const fs = statfsSync(options.dataDir);
      return { bytes: fs.bavail * fs.bsize };
    } catch (e) {
      return { error: (e as NodeJS.ErrnoException).code ?? messageOf(e) };
    }
  };

  const run = async (): Promise<CheckResult> => {
    // Read before the write test: its file keeps a block until its descriptor closes, after the answer.
    let free = readFree();
    try {
      await store.check();
    } catch (e) {
      return unhealthy(messageOf(e));
    }
    if (store.lastWrite?.ok === false) {
      // Rejects with the same failure when the file still cannot be written; lastWrite says why.
      await store.flush().catch(() => {});
      const last = store.lastWrite;
      if (last?.ok === false) return unhealthy(`the last write of the database failed: ${last.error}`, { lastWriteAt: last.at });
      // The database file was just written again: what is free now is what counts.
      free = readFree();
    }
    if ('error' in free) return unhealthy(`free space of data dir ${options.dataDir} cannot be read: ${free.error}`);
    const freeBytes = free.bytes;
    const data = { freeBytes, minFreeBytes: options.minFreeBytes };
    if (freeBytes < options.minFreeBytes) {
      return {
        status: 'Degraded',
        description: `low disk space: ${formatBytes(freeBytes)} free in data dir ${options.dataDir}, below Storage.MinFreeBytes (${formatBytes(options.minFreeBytes)})`,
        data,
        tags: TAGS,
      };
    }
    return { status: 'Healthy', description: 'database readable, data directory writable', data, tags: TAGS };
  };

  return taggedCheck(TAGS, async () => {
    inflight ??= run().finally(() => (inflight = undefined));
    const result = await inflight;
    // Callers get their own object: one caller's changes must not show in another's report.
    return { ...result, data: { ...result.data }, tags: [...TAGS] };
  });
}
