// Storage entry point: opens `<dataDir>/voice-hub.db`, migrates it, and runs the timed flush of
// coalesced telemetry (docs/operations.md, "Storage"). Everything sql.js stays behind these repositories.
import { join } from 'node:path';
import { DomainError, errorText } from '../errors.js';
import type { Logger } from '../log/logger.js';
import { backupFileOf, loadSqlEngine, openDatabaseFile, type SqlDb } from './database.js';
import { SqlBrokerMessageRepository } from './broker-messages.js';
import type { StoreContext } from './context.js';
import { SqlDeviceRepository } from './devices.js';
import { checkDirWritable, copyFileDurably, leftoverRemovedText, removeStaleProbeFiles, removeStaleTempFiles } from './durable-file.js';
import { MIGRATIONS, migrate, migrateExisting, schemaVersion } from './migrations.js';
import { Persister } from './persister.js';
import { assertRowsReadable } from './readable-rows.js';
import { pruneSessionHistory, SqlSessionRepository } from './sessions.js';
import { SqlSettingsRepository } from './settings.js';
import type { Store, WriteOutcome } from './types.js';
import { makeDirs } from '../runtime/make-dirs.js';

export { StoreCorruptError, StoreForeignError, StoreVersionError } from './database.js';
export type * from './types.js';

export const DATABASE_FILE_NAME = 'voice-hub.db';

/**
 * SQLite page size of the file. Every write (a registration, or the telemetry flush every few seconds)
 * rewrites the whole file, and each table and index takes at least one page even when nearly empty:
 * with 1 KiB pages instead of SQLite's 4 KiB default, a file with 100 devices is 38 KiB instead of
 * 56 KiB, and an empty one 12 KiB instead of 40 KiB (SD cards wear out).
 */
export const PAGE_SIZE = 1024;

export const DEFAULT_SESSION_HISTORY = 100;

export interface StoreOptions {
  dataDir: string;
  /** Storage.FlushInterval: telemetry reaches the disk at most this often. */
  flushIntervalMs: number;
  /** Storage.SessionHistory: ended sessions kept (default DEFAULT_SESSION_HISTORY). */
  sessionHistory?: number;
  /** Storage.MaxDatabaseBytes: writes that would grow the file past this are refused (default MAX_DATABASE_BYTES). */
  maxDatabaseBytes?: number;
  logger: Logger;
  /** The sql.js wasm bytes (the bundle ships them); by default read from node_modules/sql.js. */
  wasmBinary?: Uint8Array;
  /**
   * Asked before each write of the file, and by check(): throws when this process must not write the
   * data directory any more (its lock is no longer its own).
   */
  assertOwner?: () => void;
}

export interface OpenedStore extends Store {
  /** Path of the database file. */
  readonly file: string;
  /** Completed writes of the database file (for tests and the storage benchmark). */
  readonly persistCount: number;
}

/**
 * Opens (creating on first start) the database. Rejects with StoreCorruptError for a damaged file,
 * StoreForeignError for another program's SQLite file, StoreVersionError for a file from a newer version (both left untouched), and
 * DomainError('unavailable') when a new or migrated file cannot be written.
 */
export async function openStore(opts: StoreOptions): Promise<OpenedStore> {
  const logger = opts.logger;
  try {
    makeDirs(opts.dataDir, 0o750);
  } catch (e) {
    throw new Error(`cannot create data dir ${opts.dataDir}: ${(e as NodeJS.ErrnoException).code ?? errorText(e)}`);
  }
  const file = join(opts.dataDir, DATABASE_FILE_NAME);
  const engine = await loadSqlEngine(opts.wasmBinary);
  const { db, existed } = await openDatabaseFile(engine, file);
  try {
    for (const name of await removeStaleTempFiles(file)) logger.info(leftoverRemovedText(name));
    for (const name of await removeStaleProbeFiles(opts.dataDir)) logger.info(leftoverRemovedText(name));
    const found = schemaVersion(db);
    // A new database gets the page size before its first table; an existing one is rebuilt once.
    if (!existed) db.exec(`PRAGMA page_size = ${PAGE_SIZE}`);
    // Migrated in memory: the file on disk is still the old one (and a foreign file was refused untouched).
    const applied = existed ? migrateExisting(db, file) : migrate(db, file);
    if (existed) assertRowsReadable(db, file);
    if (existed && found > 0 && applied > 0) {
      // Keep the pre-upgrade file: an operator going back to the older voice-hub needs it.
      const backup = backupFileOf(file, found);
      // On disk before the upgraded file can replace the old one; a partial copy (a full disk) never
      // passes for the backup, and one a crash interrupted is removed here the next time.
      for (const name of await removeStaleTempFiles(backup)) logger.info(leftoverRemovedText(name));
      await copyFileDurably(file, backup);
      logger.info(`upgrading ${file} from schema version ${found} to ${MIGRATIONS.length}; previous file kept as ${backup}`);
    }
    const resized = pageSize(db) !== PAGE_SIZE;
    if (resized) {
      logger.info(`rewriting ${file} with ${PAGE_SIZE}-byte pages (smaller writes)`);
      db.exec(`PRAGMA page_size = ${PAGE_SIZE}`);
    }
    const history = opts.sessionHistory ?? DEFAULT_SESSION_HISTORY;
    const pruned = pruneSessionHistory(db, history);
    if (pruned > 0) logger.info(`removed the ${pruned} oldest ended session(s) beyond Storage.SessionHistory (${history})`);
    const compact = resized || wastesSpace(db);
    if (compact) db.exec('VACUUM');
    // The store outlives start-up; the wasm bytes it was opened with must not (see loadSqlEngine).
    const { wasmBinary: _compiled, ...kept } = opts;
    const store = new SqlStore(db, file, kept, applied === 0 && !compact && pruned === 0);
    // The file exists, at the current schema, before anything is acknowledged. Failing, it is the start
    // that fails, and its report names the file where the file system's error names none (a write).
    if (applied > 0) {
      await store.flush().catch((e: unknown) => {
        const cause = e instanceof Error ? e.cause : undefined;
        if (cause instanceof Error) (cause as NodeJS.ErrnoException).path ??= file;
        throw e;
      });
    }
    // Page size, pruning and compaction change no acknowledged data: if the file cannot be written
    // now, the next write takes them.
    else if (compact || pruned > 0) await store.flush().catch((e: unknown) => logger.warn(`rewriting ${file} failed: ${errorText(e)}`));
    logger.debug(`opened ${file} (schema version ${MIGRATIONS.length}, ${store.devices.count()} devices)`);
    return store;
  } catch (e) {
    db.close();
    throw e;
  }
}

function pageSize(db: SqlDb): number {
  return Number(db.one('PRAGMA page_size')?.page_size ?? 0);
}

/** Free pages worth a VACUUM: below this the next inserts reuse them anyway. */
const COMPACT_FREE_BYTES = 64 * 1024;

/**
 * Pages freed by deletions (a pruned history, deleted devices) stay in the file, and so in every
 * later write of it, until a VACUUM.
 */
function wastesSpace(db: SqlDb): boolean {
  return Number(db.one('PRAGMA freelist_count')?.freelist_count ?? 0) * PAGE_SIZE > COMPACT_FREE_BYTES;
}

class SqlStore implements OpenedStore {
  readonly devices: SqlDeviceRepository;
  readonly sessions: SqlSessionRepository;
  readonly settings: SqlSettingsRepository;
  readonly brokerMessages: SqlBrokerMessageRepository;
  private readonly persister: Persister;
  private readonly logger: Logger;
  private timer: NodeJS.Timeout | undefined;
  private closing: Promise<void> | undefined;
  private closed = false;
  private flushFailing = false;

  constructor(
    private readonly db: SqlDb,
    readonly file: string,
    private readonly opts: Omit<StoreOptions, 'wasmBinary'>,
    fileMatchesMemory: boolean,
  ) {
    this.logger = opts.logger;
    this.persister = new Persister(db, file, opts.logger, fileMatchesMemory, opts.assertOwner, opts.maxDatabaseBytes);
    const ctx: StoreContext = {
      db,
      commit: (undo) => this.persister.commit(undo),
      queued: () => this.scheduleFlush(),
      assertOpen: () => {
        if (this.closed) throw new DomainError('unavailable', 'storage is closed');
      },
      assertWritable: () => {
        if (this.closing) throw new DomainError('unavailable', 'storage is closed');
      },
    };
    this.sessions = new SqlSessionRepository(ctx, opts.sessionHistory ?? DEFAULT_SESSION_HISTORY);
    this.devices = new SqlDeviceRepository(ctx, (id) => this.sessions.removeDevice(id));
    this.settings = new SqlSettingsRepository(ctx);
    this.brokerMessages = new SqlBrokerMessageRepository(ctx);
  }

  get bytesWritten(): number {
    return this.persister.bytesWritten;
  }

  get persistCount(): number {
    return this.persister.persistCount;
  }

  get lastWrite(): WriteOutcome | undefined {
    return this.persister.lastWrite;
  }

  flush(): Promise<void> {
    if (this.closed) return Promise.resolve();
    if (this.devices.pendingCount + this.sessions.pendingCount > 0) {
      this.db.transaction(() => {
        this.devices.writePending();
        this.sessions.writePending();
      });
      if (wastesSpace(this.db)) this.db.exec('VACUUM');
    }
    // Resolves at once, writing nothing, when memory equals the file.
    return this.persister.persist();
  }

  async check(): Promise<void> {
    if (this.closed) throw new Error('storage is closed');
    try {
      this.db.one('SELECT count(*) AS n FROM devices');
    } catch (e) {
      throw new Error(`database ${this.file} cannot be read: ${errorText(e)}`);
    }
    this.opts.assertOwner?.();
    await checkDirWritable(this.opts.dataDir);
    // The file this process wrote is gone or changed: what it held is written again now, or the check fails.
    if (this.persister.noticeLostFile()) await this.persister.persist();
  }

  close(): Promise<void> {
    this.closing ??= this.shutDown();
    return this.closing;
  }

  private async shutDown(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    try {
      await this.flush();
    } finally {
      this.closed = true;
      this.db.close();
      this.persister.sumUpFailures();
    }
  }

  /** Telemetry is written at most once per interval; the timer exists only while something waits. */
  private scheduleFlush(): void {
    if (this.timer || this.closing) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.timedFlush();
    }, this.opts.flushIntervalMs);
    this.timer.unref(); // never keeps the process alive; close() flushes what is left
  }

  private async timedFlush(): Promise<void> {
    try {
      await this.flush();
      // The persister says it works again, after a failed timed flush as after any failed write.
      this.flushFailing = false;
    } catch (e) {
      // Log when the failure starts, not every interval; retry while memory is ahead of the file.
      if (!this.flushFailing) this.logger.error(`timed flush failed, will retry: ${errorText(e)}`);
      this.flushFailing = true;
      if (this.persister.dirty) this.scheduleFlush();
    }
  }
}
