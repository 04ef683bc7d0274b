// One owner per data directory: the serving process holds `<dataDir>/voice-hub.lock` for its whole
// life. Two processes on one database would each keep their own copy in memory and overwrite each
// other's writes, so a second one must refuse before it writes anything there.
//
// Node has no flock(), so the lock is a file that names its holder (PID, the kernel's start time of
// that PID, the boot it ran in, its uid). It appears atomically and complete: written to a private
// temp file first, then hard-linked to the lock name, which fails if the name exists. A lock whose
// holder is gone (kill -9, power cut) is stale and is taken over; a PID reused by another process,
// before or after a reboot, is told apart by the start time and the boot id.
import { randomBytes } from 'node:crypto';
import {
  closeSync, constants, fstatSync, fsyncSync, linkSync, openSync, readdirSync, readFileSync, readSync, renameSync, rmSync, statSync, unlinkSync, writeSync,
} from 'node:fs';
import path from 'node:path';
import { DataFileError } from '../errors.js';
import { makeDirs } from '../runtime/make-dirs.js';

export const LOCK_FILE_NAME = 'voice-hub.lock';

/** What a lock file says about the process holding it. */
export interface LockHolder {
  readonly pid: number;
  /** Field 22 of /proc/<pid>/stat: clock ticks after boot; a reused PID has another. */
  readonly start?: string;
  /** /proc/sys/kernel/random/boot_id where readable. */
  readonly boot?: string;
  readonly uid?: number;
  /** When it was taken (ISO 8601), for the operator. */
  readonly since?: string;
}

/** Whether the holder is known to run (`alive`) or runs as far as this user can see (`unverified`). */
export type Liveness = 'alive' | 'unverified' | 'gone';

export class DataDirInUseError extends Error {
  constructor(
    readonly dataDir: string,
    readonly file: string,
    readonly holder: LockHolder,
    readonly liveness: Exclude<Liveness, 'gone'>,
  ) {
    const since = holder.since ? `, since ${holder.since}` : '';
    const who = liveness === 'alive'
      ? `another voice-hub (PID ${holder.pid}${since})`
      : `PID ${holder.pid}${since}, a process of another user that this user cannot inspect`;
    super(
      `data directory ${dataDir} is in use by ${who}: stop it first (lock file ${file}; ` +
        'if no voice-hub uses this directory, remove that file)',
    );
  }
}

export interface DataDirLock {
  readonly file: string;
  /**
   * Whether the lock file is still the one this process took (or the whole directory is away, where
   * nothing can be written). The lock is only a file: removed by hand, or with the whole directory (which
   * a second voice-hub then made anew and locked), it no longer keeps anyone out, and each process's
   * whole-file writes would replace the other's.
   */
  held(): boolean;
  /** Removes the lock file if it is still this process's. Idempotent; safe in an 'exit' handler. */
  release(): void;
  /** Temporary files of starters killed while they took the lock, removed as this one took it. */
  readonly leftovers: readonly string[];
}

const procStat = (pid: number | 'self'): string => readFileSync(`/proc/${pid}/stat`, 'utf8');

/**
 * What /proc/<pid>/stat says of `pid`: its state (field 3) and start time (field 22), or undefined when
 * this user cannot see it.
 */
function procState(pid: number | 'self'): { state: string; start: string | undefined } | undefined {
  let line: string;
  try {
    line = procStat(pid);
  } catch {
    return undefined;
  }
  // The command name (field 2) is in parentheses and may hold spaces and ')': count from the last ')'.
  const fields = line.slice(line.lastIndexOf(')') + 2).split(' ');
  return { state: fields[0] ?? '', start: fields[19] };
}

/**
 * A process that has exited but is not reaped yet (its parent has not waited for it) still has its PID
 * and stat line; it holds nothing any more.
 */
const EXITED_STATES = new Set(['Z', 'X']);

function bootId(): string | undefined {
  try {
    return readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim() || undefined;
  } catch {
    return undefined;
  }
}

function ownHolder(): LockHolder {
  return { pid: process.pid, start: procState('self')?.start, boot: bootId(), uid: process.getuid?.(), since: new Date().toISOString() };
}

/** Parses a lock file's text; undefined for anything that is not one (it is then treated as stale). */
export function parseHolder(text: string): LockHolder | undefined {
  try {
    const v = JSON.parse(text) as Record<string, unknown>;
    if (!Number.isInteger(v.pid) || (v.pid as number) <= 0) return undefined;
    const str = (x: unknown): string | undefined => (typeof x === 'string' && x ? x : undefined);
    return {
      pid: v.pid as number,
      start: str(v.start),
      boot: str(v.boot),
      uid: Number.isInteger(v.uid) ? (v.uid as number) : undefined,
      since: str(v.since),
    };
  } catch {
    return undefined;
  }
}

/**
 * Is the holder still running? Our own PID can only be a previous life (a PID handed out again after a
 * reboot). A process of our own uid is always visible in /proc, even under ProtectProc=invisible, so
 * not seeing it means it is gone; another user's process may be hidden from us, and then only kill(0)
 * can tell that the PID exists at all.
 */
export function holderLiveness(holder: LockHolder): Liveness {
  if (holder.pid === process.pid) return 'gone';
  const boot = bootId();
  if (holder.boot && boot && holder.boot !== boot) return 'gone';
  const seen = procState(holder.pid);
  if (seen !== undefined) {
    if (EXITED_STATES.has(seen.state)) return 'gone';
    return holder.start === undefined || sameStart(holder.start, seen.start) ? 'alive' : 'gone';
  }
  try {
    process.kill(holder.pid, 0);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ESRCH') return 'gone';
  }
  return holder.uid !== undefined && holder.uid === process.getuid?.() ? 'gone' : 'unverified';
}

/**
 * Start times (clock ticks since boot) of one process, as its holder read its own and as we read it. Equal
 * on a kernel; qemu-user, which runs the ARM builds on other machines, makes up the emulated process's
 * /proc/self/stat and was seen one tick off the kernel's own value, which took a live holder for gone.
 * A PID handed out again within a few ticks (tens of ms) would need the whole PID space to wrap meanwhile.
 */
function sameStart(recorded: string, seen: string | undefined): boolean {
  if (seen === undefined) return false;
  if (recorded === seen) return true;
  const a = Number(recorded);
  const b = Number(seen);
  return Number.isSafeInteger(a) && Number.isSafeInteger(b) && Math.abs(a - b) <= START_TICKS_SLACK;
}

const START_TICKS_SLACK = 2;

interface Seen {
  readonly text: string;
  readonly ino: number;
  readonly holder: LockHolder | undefined;
}

/**
 * The lock as found, or undefined when there is none. Opened without blocking: a FIFO at its path blocked
 * the start in open() for good, SIGTERM included; anything but a regular file is refused, left as found.
 */
function readLock(file: string): Seen | undefined {
  let fd: number;
  try {
    fd = openSync(file, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return undefined;
    throw e;
  }
  try {
    if (!fstatSync(fd).isFile()) {
      throw new DataFileError(`lock file ${file} is not a regular file: refused, it was left untouched; remove it if no voice-hub uses this directory`);
    }
    const buf = Buffer.alloc(4096);
    const n = readSync(fd, buf, 0, buf.length, 0);
    const text = buf.subarray(0, n).toString('utf8');
    return { text, ino: fstatSync(fd).ino, holder: parseHolder(text) };
  } finally {
    closeSync(fd);
  }
}

/**
 * The live holder of `dataDir`, if any, without writing anything: for commands that only read
 * (they work beside a running service) and for those that must not create what the owner creates.
 */
export function dataDirOwner(dataDir: string): { holder: LockHolder; liveness: Exclude<Liveness, 'gone'> } | undefined {
  const seen = readLock(path.join(dataDir, LOCK_FILE_NAME));
  if (!seen?.holder) return undefined;
  const liveness = holderLiveness(seen.holder);
  return liveness === 'gone' ? undefined : { holder: seen.holder, liveness };
}

/**
 * Moves a stale lock out of the way, but only the very file judged stale: another starter may have
 * replaced it meanwhile. rename() is atomic; what was moved is compared (inode and content, as inode
 * numbers are reused at once) and put back if it is not the stale one.
 */
function removeStale(file: string, stale: Seen): void {
  const aside = `${file}.stale-${process.pid}-${randomBytes(4).toString('hex')}`;
  try {
    renameSync(file, aside);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return; // someone else removed it
    throw e;
  }
  const moved = readLock(aside);
  if (moved && (moved.ino !== stale.ino || moved.text !== stale.text)) {
    try {
      linkSync(aside, file);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
    }
  }
  rmSync(aside, { force: true });
}

/**
 * Removes the temporary files (`<lock>.new-<pid>-<hex>`, `<lock>.stale-<pid>-<hex>`) of starters that died
 * while taking the lock: a kill or power cut between writing one and removing it left it for good, one
 * more each time. Those of a process that still runs are left to it (a starter that lost the race
 * removes its own as it gives up), so a PID reused meanwhile, or a killed starter not yet reaped, keeps
 * its file until a later start.
 */
function removeLeftovers(file: string): string[] {
  const dir = path.dirname(file);
  const prefix = `${path.basename(file)}.`;
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  const removed: string[] = [];
  for (const name of names) {
    const m = name.startsWith(prefix) ? /^(?:new|stale)-(\d+)-[0-9a-f]{8}$/.exec(name.slice(prefix.length)) : null;
    if (!m) continue;
    const pid = Number(m[1]);
    if (pid === process.pid || processRuns(pid)) continue;
    try {
      rmSync(path.join(dir, name), { force: true });
      removed.push(name);
    } catch {
      // left for a later start
    }
  }
  return removed;
}

/** Whether a process with this PID exists (one of another user too). */
function processRuns(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Writes the holder record to a file of its own (complete and synced before it can be seen as the lock). */
function writeTemp(file: string, text: string): string {
  const temp = `${file}.new-${process.pid}-${randomBytes(4).toString('hex')}`;
  const fd = openSync(temp, 'wx', 0o644);
  try {
    try {
      writeSync(fd, text);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
  } catch (e) {
    // Created but not written (a full disk): the caller never learns its name, so it goes here.
    rmSync(temp, { force: true });
    throw e;
  }
  return temp;
}

/** Attempts before giving up: each lost race re-reads the lock, so this bounds a pathological loop only. */
const ATTEMPTS = 20;

/**
 * Takes the data-directory lock (creating the directory if needed) or throws DataDirInUseError naming
 * the live holder. Nothing is written while a live holder is seen.
 */
export function acquireDataDirLock(dataDir: string): DataDirLock {
  const file = path.join(dataDir, LOCK_FILE_NAME);
  const own = ownHolder();
  const text = JSON.stringify(own) + '\n';
  let temp: string | undefined;
  let taken = false;
  try {
    for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
      const seen = readLock(file);
      if (seen?.holder) {
        const liveness = holderLiveness(seen.holder);
        if (liveness !== 'gone') throw new DataDirInUseError(dataDir, file, seen.holder, liveness);
      }
      if (seen) removeStale(file, seen);
      if (!temp) {
        makeDirs(dataDir, 0o750);
        temp = writeTemp(file, text);
      }
      try {
        linkSync(temp, file);
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code === 'EEXIST') continue; // another starter was quicker: look again
        throw e;
      }
      taken = true;
      break;
    }
  } finally {
    if (temp) rmSync(temp, { force: true });
  }
  if (!taken) throw new Error(`could not take the lock ${file}: it kept changing (${ATTEMPTS} attempts)`);
  return ownedLock(file, text, removeLeftovers(file));
}

/** Which file is at the lock's path, by one stat (nothing read): undefined when there is none. */
function identity(file: string): { inode: string; changed: bigint } | undefined {
  try {
    const st = statSync(file, { bigint: true });
    return { inode: `${st.dev}:${st.ino}`, changed: st.ctimeNs };
  } catch {
    return undefined;
  }
}

/** Whether `dir` is a directory now (a vanished mount, a directory moved away: it is not). */
function isDirectory(dir: string): boolean {
  try {
    return statSync(dir).isDirectory();
  } catch {
    return false;
  }
}

function ownedLock(file: string, text: string, leftovers: readonly string[]): DataDirLock {
  let held = true;
  // Taken once the temporary link is gone: its removal changed the file's change time.
  let mine = identity(file);
  return {
    file,
    leftovers,
    held: () => {
      const now = identity(file);
      // An inode number is handed out again at once to a file made after ours was removed; its change
      // time (nanoseconds) is the new file's.
      if (now && mine && now.inode === mine.inode && now.changed === mine.changed) return true;
      // No directory at all (a vanished mount): nothing there to overwrite, and a write fails on its own
      // with the system's words. It may come back with the lock in it.
      if (!now && !isDirectory(path.dirname(file))) return true;
      // A starter that took it for stale moved it aside and linked it back: the same inode saying the
      // same, only its change time moved. Any other file, or none in the directory, is not ours.
      let current: Seen | undefined;
      try {
        current = readLock(file);
      } catch {
        current = undefined;
      }
      if (now && mine && now.inode === mine.inode && current?.text === text) {
        mine = now;
        return true;
      }
      return false;
    },
    release: () => {
      if (!held) return;
      held = false;
      try {
        if (readLock(file)?.text === text) unlinkSync(file);
      } catch {
        // Already gone, or the directory went away: nothing is left to release.
      }
    },
  };
}
