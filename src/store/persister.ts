// Group commit of the in-memory database to its file. A durable change is applied in memory, then
// waits for one persist that started after it; while a persist runs, every later request waits for
// the single next one, so a burst of writes costs two file writes, not one per write. When a persist
// fails, every change the file does not hold is undone, so memory never claims what the disk lacks.
import { statSync } from 'node:fs';
import { DomainError, errorText } from '../errors.js';
import type { Logger } from '../log/logger.js';
import { ThrottledLog } from '../log/throttled.js';
import { MAX_DATABASE_BYTES, type SqlDb } from './database.js';
import { writeFileDurably } from './durable-file.js';
import type { WriteOutcome } from './types.js';
import { monotonicMs } from '../monotonic-clock.js';

/** Failed writes logged one by one each minute; the rest are summed up (docs/operations.md, "Logging"). */
const FAILED_WRITE_LINES = 5;

/** What another program's removal, truncation or replacement of the file changes. */
interface FileMark {
  dev: number;
  ino: number;
  size: number;
  mtimeMs: number;
}

/** The file's mark now; `removed` when it is gone, undefined when it cannot be told (no search permission). */
function markOf(file: string): FileMark | 'removed' | undefined {
  try {
    const { dev, ino, size, mtimeMs } = statSync(file);
    return { dev, ino, size, mtimeMs };
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'ENOENT' ? 'removed' : undefined;
  }
}

/** What became of the file marked `was`, for the log; undefined when it is as it was. */
function changeOf(was: FileMark, now: FileMark | 'removed'): string | undefined {
  if (now === 'removed') return 'removed';
  if (now.dev !== was.dev || now.ino !== was.ino) return 'replaced';
  if (now.size !== was.size || now.mtimeMs !== was.mtimeMs) return 'changed';
  return undefined;
}

/**
 * A write refused because the database would grow past Storage.MaxDatabaseBytes. Nothing was written: the
 * change is reverted and refused as any failed write, and the file stays one the next start can load.
 */
export class DatabaseFullError extends Error {}

const tooLarge = (size: number, maxBytes: number): DatabaseFullError =>
  new DatabaseFullError(`the database would be ${size} bytes, more than Storage.MaxDatabaseBytes (${maxBytes}); delete devices (or lower Storage.SessionHistory) to make room`);

interface Waiter {
  resolve(): void;
  reject(error: Error): void;
}

export class Persister {
  /** File writes that completed. */
  persistCount = 0;
  /** Bytes written to the database file. */
  bytesWritten = 0;
  /** How the latest attempt to write the file ended; undefined before the first one. */
  lastWrite: WriteOutcome | undefined;
  /** Undo functions of durable changes applied in memory but not yet on disk, oldest first. */
  private unconfirmed: Array<() => void> = [];
  private waiting: Waiter[] = [];
  private running = false;
  /** `db.writes` as of the content last written to the file. */
  private writesOnDisk: number;
  /** Bytes of the content last written to the file, or of the database as opened. */
  private sizeOnDisk: number;
  /**
   * The file as this process last wrote (or opened) it. "Nothing changed, no write" holds only while the
   * file is still that one: removed or emptied under the running service, it no longer holds what memory
   * does, and a clean stop that wrote nothing left a service restarted on no data, or refusing to start.
   */
  private written: FileMark | undefined;
  /**
   * A write is under way: its rename has put a new file at the name before `written` describes it (the
   * directory's fsync comes between), so a check then would take this process's own file for another's.
   */
  private writing = false;
  /**
   * Failed writes, a line each: on a full disk every registration fails, and registering needs no
   * credentials, so a client could otherwise write them at its request rate.
   */
  private readonly failures: ThrottledLog;

  constructor(
    private readonly db: SqlDb,
    private readonly file: string,
    private readonly logger: Logger,
    /** False when memory is already ahead of the file (new or migrated database). */
    fileMatchesMemory: boolean,
    /** Throws when the file must not be written (StoreOptions.assertOwner). */
    private readonly assertOwner: () => void = () => {},
    /** Storage.MaxDatabaseBytes: no write makes the file larger than this (nor than it already is). */
    private readonly maxBytes = MAX_DATABASE_BYTES,
  ) {
    this.writesOnDisk = fileMatchesMemory ? db.writes : -1;
    // The size as opened: a start on a file already over a lowered limit can still write it, only not grow it.
    this.sizeOnDisk = db.pageBytes().total;
    if (fileMatchesMemory) this.markWritten();
    this.failures = new ThrottledLog(logger, FAILED_WRITE_LINES, 60_000, () => monotonicMs(),
      (count, seconds, last) => `${count} more write(s) of ${file} failed in the last ${seconds} s, each change reverted and refused; the last: ${last}`);
  }

  /** Writes the sum of failed writes not logged one by one (at shutdown). */
  sumUpFailures(): void {
    this.failures.flush();
  }

  /** Memory holds changes the file does not. */
  get dirty(): boolean {
    return this.db.writes !== this.writesOnDisk;
  }

  /**
   * Whether another program removed, truncated or replaced the file since this process last wrote it;
   * if so, memory is due to be written again (at the next persist, even one with nothing new), and the
   * log says so once. A synchronous stat(2), answered from the kernel's cache of a file written here: no
   * trip through the thread pool for /health, and next to nothing beside a write's fsync.
   */
  noticeLostFile(): boolean {
    if (this.written === undefined || this.writing) return false;
    const now = markOf(this.file);
    const change = now === undefined ? undefined : changeOf(this.written, now);
    if (change === undefined) return false;
    this.logger.critical(`${this.file} was ${change} by another program while the service ran; writing what the service holds to it again (stop the service before restoring or editing the database)`);
    this.written = undefined;
    this.writesOnDisk = -1;
    return true;
  }

  /** Notes the file as it is now as this process's own. */
  private markWritten(): void {
    const mark = markOf(this.file);
    this.written = typeof mark === 'object' ? mark : undefined;
  }

  /**
   * Registers a durable change already applied in memory, with the function that reverts it.
   * Resolves once a persist covering it is on disk; rejects with DomainError('unavailable') after
   * reverting it when that persist fails.
   */
  commit(undo: () => void): Promise<void> {
    // Judged change by change, before it joins a write: refused with the batch it was written in, a
    // registration that did not fit took the concurrent deletions that would make room down with it, so
    // registrations sent without pause (they need no credentials) kept every deletion from landing.
    // Judged by what it holds, without its free pages, which the write compacts away (a VACUUM per
    // refused registration of a flood was seconds of the service's time at the bound).
    const pages = this.db.pageBytes();
    const held = pages.total - pages.free;
    if (held <= Math.max(this.maxBytes, this.sizeOnDisk)) {
      this.unconfirmed.push(undo);
      return this.persist();
    }
    try {
      undo();
    } catch (e) {
      this.logger.critical(`reverting an unsaved change failed: ${errorText(e)}`);
    }
    const full = tooLarge(held, this.maxBytes);
    const error = new DomainError('unavailable', `storage is full: ${full.message}`, undefined, full);
    this.lastWrite = { ok: false, at: new Date().toISOString(), error: error.message };
    this.failures.error(`writing ${this.file} failed; 1 unsaved change(s) reverted: ${error.message}`);
    return Promise.reject(error);
  }

  /** Resolves once everything in memory now is on disk (at once when nothing changed). */
  persist(): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.waiting.push({ resolve, reject });
      if (!this.running) void this.run();
    });
  }

  private async run(): Promise<void> {
    this.running = true;
    try {
      while (this.waiting.length > 0) {
        const waiters = this.waiting;
        this.waiting = [];
        await this.persistOnce(waiters);
      }
    } finally {
      this.running = false;
    }
  }

  private async persistOnce(waiters: Waiter[]): Promise<void> {
    this.noticeLostFile();
    const writes = this.db.writes;
    if (writes === this.writesOnDisk) {
      for (const w of waiters) w.resolve(); // nothing changed: no write (SD cards wear out)
      return;
    }
    const covered = this.unconfirmed.length;
    let error: DomainError;
    const write = { renamed: false };
    try {
      await this.writeWhole(writes, write);
      // The journal's last word on the file must not stay "failed" once writing works again.
      if (this.lastWrite?.ok === false) {
        this.failures.flush();
        this.logger.info(`writing ${this.file} works again`);
      }
      this.lastWrite = { ok: true, at: new Date().toISOString() };
      this.unconfirmed.splice(0, covered);
      for (const w of waiters) w.resolve();
      return;
    } catch (e) {
      const what = e instanceof DatabaseFullError ? 'storage is full' : 'storage is not writable';
      error = new DomainError('unavailable', `${what}: ${errorText(e)}`, undefined, e);
      this.lastWrite = { ok: false, at: new Date().toISOString(), error: errorText(e) };
    }
    if (this.unconfirmed.length > 0) {
      this.failures.error(`writing ${this.file} failed; ${this.unconfirmed.length} unsaved change(s) reverted: ${error.message}`);
    }
    // Revert newest first, including changes made while this persist ran: they were applied on top of
    // the reverted ones and are waiting for the next persist, which is cancelled with the same error.
    const undos = this.unconfirmed.reverse();
    this.unconfirmed = [];
    for (const undo of undos) {
      try {
        undo();
      } catch (e) {
        this.logger.critical(`reverting an unsaved change failed: ${errorText(e)}`);
      }
    }
    const later = this.waiting;
    this.waiting = [];
    // Failed after its rename (the directory's fsync): the file holds the changes just reverted, which a
    // crash or power cut before the next write left there, answered 503 and present at the next start
    // (a refused registration's id then taken, and the device without its token). Written again before
    // the refusals are answered; changes made meanwhile wait for the next persist, as usual.
    if (write.renamed) await this.restoreFile();
    for (const w of [...waiters, ...later]) w.reject(error);
  }

  /** Writes memory, its refused changes reverted, over a file that holds them; the next persist writes it in any case. */
  private async restoreFile(): Promise<void> {
    // Neither the content last written nor this process's file as marked: noticeLostFile must not take
    // it for another program's, and whatever writes next writes it whole.
    this.writesOnDisk = -1;
    this.written = undefined;
    const write = { renamed: false };
    try {
      await this.writeWhole(this.db.writes, write);
    } catch (e) {
      if (!write.renamed) this.logger.critical(`${this.file} still holds the change(s) just refused, and writing it again failed: ${errorText(e)}; the next write of the file removes them`);
    }
  }

  /**
   * Throws DatabaseFullError, before anything is exported, when memory's database is larger than
   * Storage.MaxDatabaseBytes and than the file already is. The file is held whole in memory and read whole
   * at every start (sql.js), and Node writes and reads at most 2 GiB - 1 in one call: the write of a change
   * that took it past that failed with Node's `The value of "length" is out of range`. Pages freed by
   * deletions and by refused changes stay in the database until a VACUUM: without one, that refusal left
   * it over the limit for good, and every later write (the deletions that would make room, the clean stop)
   * failed the same way.
   */
  private assertFits(): void {
    // Only a write that carries a change it can refuse (and undo) is held to the bound: telemetry and
    // session counters were answered 200 already, and a row that grows by a few bytes may take a page
    // more. Refused, they stayed in memory and failed every timed flush, and every write after them.
    const allowed = this.unconfirmed.length > 0 ? Math.max(this.maxBytes, this.sizeOnDisk) : MAX_DATABASE_BYTES;
    // Compacted whenever it is over the bound, not only when that refuses the write: a file written with
    // free pages would raise the size it may keep.
    const pages = this.db.pageBytes();
    let total = pages.total;
    if (total > this.maxBytes && pages.free > 0) {
      this.db.compact();
      total = this.db.pageBytes().total;
    }
    if (total > allowed) throw tooLarge(total, this.maxBytes);
  }

  /**
   * The database as it is in memory, written over the file (durably), standing for `writes`;
   * `write.renamed` tells whether the file at the name holds it, should the write fail after the rename.
   */
  private async writeWhole(writes: number, write: { renamed: boolean }): Promise<void> {
    this.assertOwner();
    this.assertFits();
    const bytes = this.db.export();
    this.writing = true;
    try {
      await writeFileDurably(this.file, bytes, () => (write.renamed = true));
    } finally {
      this.writing = false;
    }
    this.persistCount++;
    this.bytesWritten += bytes.length;
    this.writesOnDisk = writes;
    this.sizeOnDisk = bytes.length;
    this.markWritten();
  }
}
