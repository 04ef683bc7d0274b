// Crash-safe file replacement: the main file is only ever replaced whole by rename, never written in
// place, so after a crash or power cut it holds either the old or the new content.
import { randomUUID } from 'node:crypto';
import { closeSync, constants, existsSync, fsyncSync, linkSync, openSync, readdirSync, rmSync, writeSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { closeFile, copyFileTo, openFile, readDirectory, removeFile, renameFile, syncFile, unlinkFile, writeOpenFile, writeText } from './fs-calls.js';

const tempSuffix = '.tmp-';
/** checkDirWritable's probe files: `<prefix><pid>-<uuid>`. */
const PROBE_PREFIX = '.voice-hub-check-';

/**
 * Writes `bytes` to `<file>.tmp-<pid>`, fsyncs it, renames it over `file`, then fsyncs the directory.
 * `renamed` is called once the new content is at the name: a failure after it (the directory's fsync)
 * leaves the file holding `bytes` although the promise rejects.
 */
export async function writeFileDurably(file: string, bytes: Uint8Array, renamed: () => void = () => {}): Promise<void> {
  await replaceDurably(file, renamed, async (temp) => {
    // Never blocks or writes through: a FIFO at the name (no reader) is ENXIO, a symbolic link ELOOP.
    const fd = await openFile(temp, constants.O_WRONLY | constants.O_CREAT | constants.O_TRUNC | constants.O_NOFOLLOW | constants.O_NONBLOCK, 0o640);
    try {
      await writeOpenFile(fd, bytes);
      await syncFile(fd);
    } finally {
      await closeFile(fd);
    }
  });
}

/** Copies `source` to `file` as writeFileDurably writes: whole, on disk, its name too, before it resolves. */
export async function copyFileDurably(source: string, file: string): Promise<void> {
  await replaceDurably(file, () => {}, async (temp) => {
    // A name of its own (a leftover of this pid removed first): an exclusive copy neither blocks nor follows a link.
    await removeFile(temp, { force: true });
    await copyFileTo(source, temp, constants.COPYFILE_EXCL);
    const fd = await openFile(temp, constants.O_RDONLY | constants.O_NOFOLLOW);
    try {
      await syncFile(fd);
    } finally {
      await closeFile(fd);
    }
  });
}

/** `fill` writes and syncs `<file>.tmp-<pid>`; it is then renamed over `file` (`renamed` told) and the directory synced. */
async function replaceDurably(file: string, renamed: () => void, fill: (temp: string) => Promise<void>): Promise<void> {
  const temp = `${file}${tempSuffix}${process.pid}`;
  try {
    await fill(temp);
    await renameFile(temp, file);
  } catch (e) {
    // Leave nothing half written behind; the main file was not touched.
    await unlinkFile(temp).catch(() => {});
    throw e;
  }
  renamed();
  await syncDirectory(dirname(file));
}

/**
 * Creates `file` with `bytes` (mode `mode`) unless it exists, and returns whether it did: exclusive (a
 * concurrent creator wins or loses whole), fsynced, and its directory entry synced too, before it returns;
 * on a failure nothing is left behind. Synchronous, for files made before anything else runs (the key).
 * The bytes go to `<file>.tmp-<pid>` and are linked to the name only once on disk: a file created under
 * its name and then written was, in between, an empty file there, which a process killed at that moment
 * (or a power cut before its fsync) left for good and every later start refused as damaged, and which a
 * reader meanwhile (`token admin` beside a starting service) took for the finished file.
 */
export function createFileDurablySync(file: string, bytes: Uint8Array, mode: number): boolean {
  if (existsSync(file)) return false;
  const temp = `${file}${tempSuffix}${process.pid}`;
  rmSync(temp, { force: true });
  try {
    const fd = openSync(temp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, mode);
    try {
      writeSync(fd, bytes);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    try {
      // Unlike a rename, a link never replaces: the creator that links first wins.
      linkSync(temp, file);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'EEXIST') return false;
      throw e;
    }
    syncDirectorySync(dirname(file));
  } finally {
    // A power cut before this is durable leaves the temporary file, which the next start removes.
    rmSync(temp, { force: true });
  }
  return true;
}

/** Makes a rename in `dir` durable: without it the directory entry may still point at the old file after a power cut. */
async function syncDirectory(dir: string): Promise<void> {
  const fd = await openFile(dir, 'r');
  try {
    await syncFile(fd);
  } finally {
    await closeFile(fd);
  }
}

/** syncDirectory, for the synchronous createFileDurablySync. */
function syncDirectorySync(dir: string): void {
  const fd = openSync(dir, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** The log line for a temporary file removeStaleTempFiles removed. */
export const leftoverRemovedText = (name: string): string => `removed ${name} left by an interrupted write`;

/**
 * Removes `<file>.tmp-<pid>` files left by a process that died mid-write, so they do not pile up on a
 * small SD card. Called by the service as it opens its database, with the data directory's lock held
 * (src/process/data-dir-lock.ts): no other process writes here, so every temporary file but this
 * process's own is left over. Asking whether its pid still lives kept some: a service killed with
 * SIGKILL and not yet reaped is a zombie, which kill(pid, 0) counts as alive, and a pid may be reused.
 */
export function removeStaleTempFiles(file: string): Promise<string[]> {
  return removeLeftovers(dirname(file), basename(file) + tempSuffix, false);
}

/** removeStaleTempFiles, for the synchronous createFileDurablySync's callers. */
export function removeStaleTempFilesSync(file: string): string[] {
  let entries: string[];
  try {
    entries = readdirSync(dirname(file));
  } catch {
    return [];
  }
  const names = leftoverNames(entries, basename(file) + tempSuffix, false);
  for (const name of names) {
    try {
      rmSync(join(dirname(file), name), { force: true });
    } catch {
      // left for the next start
    }
  }
  return names;
}

/**
 * Removes the probe files of checkDirWritable that a process killed mid-check left in `dir` (one per
 * /health under way at that moment; on an SD card each is an inode for good). With the data directory's
 * lock held, as removeStaleTempFiles: every probe but this process's own is left over.
 */
export function removeStaleProbeFiles(dir: string): Promise<string[]> {
  return removeLeftovers(dir, PROBE_PREFIX, true);
}

/** Removes the files of `dir` that leftoverNames picks; returns their names. */
async function removeLeftovers(dir: string, prefix: string, tail: boolean): Promise<string[]> {
  const names = leftoverNames(await readDirectory(dir).catch(() => [] as string[]), prefix, tail);
  for (const name of names) await removeFile(join(dir, name), { force: true }).catch(() => {});
  return names;
}

/**
 * The names among `entries` of the form `<prefix><pid>` (a temporary file) or, with `tail`,
 * `<prefix><pid>-<more>` (a probe) whose pid is not this process's.
 */
function leftoverNames(entries: readonly string[], prefix: string, tail: boolean): string[] {
  return entries.filter((name) => {
    if (!name.startsWith(prefix)) return false;
    const rest = name.slice(prefix.length);
    const dash = rest.indexOf('-');
    if (tail !== dash >= 0) return false;
    const pid = Number(tail ? rest.slice(0, dash) : rest);
    return Number.isInteger(pid) && pid !== process.pid;
  });
}

/**
 * Creates, writes and removes a small file in `dir`; throws `data dir <dir> is not writable: <code>` when
 * any step fails. /health waits for it, and every step is a trip through libuv's thread pool that waits
 * for a core on a busy board, so the steps overlap where Linux allows: the name is removed while the
 * write runs (the open descriptor keeps the file), and the descriptor is closed after the answer.
 */
export async function checkDirWritable(dir: string): Promise<void> {
  // A name per call: concurrent checks on one name removed each other's file and reported ENOENT.
  const probe = join(dir, `${PROBE_PREFIX}${process.pid}-${randomUUID()}`);
  const notWritable = (e: unknown): Error => {
    const err = e as NodeJS.ErrnoException;
    return new Error(`data dir ${dir} is not writable: ${err.code ?? err.message}`);
  };
  let fd: number;
  try {
    fd = await openFile(probe, 'wx', 0o600);
  } catch (e) {
    throw notWritable(e);
  }
  // Both settle before the answer: on a full disk the file is created and only its write fails, and
  // each /health would otherwise leave one more file behind.
  const [written, removed] = await Promise.allSettled([writeText(fd, 'ok'), unlinkFile(probe)]);
  closeFile(fd).catch(() => {});
  if (written.status === 'rejected') throw notWritable(written.reason);
  if (removed.status === 'rejected') throw notWritable(removed.reason);
}
