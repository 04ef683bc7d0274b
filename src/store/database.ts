// The one file that imports sql.js: loading the wasm, opening the database file (refusing a damaged
// one), and a small query wrapper whose cached statements survive `export()` (docs/operations.md, "Storage").
import { constants, existsSync } from 'node:fs';
import initSqlJs from 'sql.js';
import type { Database, SqlJsConfig, SqlValue, Statement } from 'sql.js';
import { SQL_WASM } from '../runtime/asset-manifest.mjs';
import { requireAsset } from '../runtime/assets.js';
import { DataFileError } from '../errors.js';
import { isLinkItself } from '../path-entry.js';
import { closeFile, openFile, readOpenFile, statFile } from './fs-calls.js';

export type Param = string | number | null;
export type Row = Record<string, SqlValue>;

/**
 * A database file the service will not open, left exactly as found; the message names it and says what to
 * do, so it is reported as it is (no stack: it is the file's fault, not the program's).
 */
export class StoreFileError extends DataFileError {}

/** Where an upgrade keeps the file as schema `version` had it, beside the database. */
export const backupFileOf = (file: string, version: number): string => `${file}.v${version}.bak`;

/** The database file is damaged; it was left exactly as found. */
export class StoreCorruptError extends StoreFileError {
  constructor(readonly file: string, reason: string) {
    super(
      `database file ${file} is damaged (${reason}); it was left untouched. ` +
        'Restore it from a backup, or move it away to start with an empty database.',
    );
    this.name = 'StoreCorruptError';
  }
}

/** A valid SQLite file whose tables are not voice-hub's (another program's, or one made by hand); left untouched. */
export class StoreForeignError extends StoreFileError {
  constructor(readonly file: string, reason: string) {
    super(
      `database file ${file} is not a voice-hub database (${reason}); it was left untouched. ` +
        "Point Storage.DataDir at the folder of voice-hub's own database, or move this file away to start with an empty one.",
    );
    this.name = 'StoreForeignError';
  }
}

/** The file was written by a newer voice-hub (its schema version is higher than any migration known here). */
export class StoreVersionError extends StoreFileError {
  constructor(readonly file: string, found: number, known: number) {
    // The newer voice-hub kept the file as this version left it when it upgraded it (openStore).
    const backup = backupFileOf(file, known);
    super(
      `database file ${file} has schema version ${found}, but this voice-hub knows versions up to ${known}; ` +
        'it was left untouched. Run the newer voice-hub that wrote it, or restore a backup made by this version' +
        (existsSync(backup) ? ` (${backup} is the file as this version left it before the upgrade: copy it over ${file}; what changed since is lost)` : '') + '.',
    );
    this.name = 'StoreVersionError';
  }
}

const SQLITE_HEADER = 'SQLite format 3\0';

/**
 * A sql.js database with cached prepared statements. sql.js's `export()` closes and reopens the
 * connection, freeing every prepared statement, so the cache is dropped there and statements are
 * prepared again on next use.
 */
export class SqlDb {
  private readonly statements = new Map<string, Statement>();
  /** Counts statements that may have changed data; compared with the count at the last persist to tell "dirty". */
  private writeCount = 0;

  constructor(private readonly db: Database) {}

  get writes(): number {
    return this.writeCount;
  }

  all(sql: string, params: readonly Param[] = []): Row[] {
    const stmt = this.prepare(sql);
    try {
      stmt.bind(params as Param[]);
      const rows: Row[] = [];
      // getAsObject() asks sqlite for the column names again for every row: ask once.
      let columns: string[] | undefined;
      while (stmt.step()) {
        columns ??= stmt.getColumnNames();
        const values = stmt.get();
        const row: Row = {};
        for (let i = 0; i < columns.length; i++) row[columns[i]!] = values[i]!;
        rows.push(row);
      }
      return rows;
    } finally {
      stmt.reset();
    }
  }

  one(sql: string, params: readonly Param[] = []): Row | undefined {
    return this.all(sql, params)[0];
  }

  /** Runs a changing statement; returns the number of rows it changed. */
  run(sql: string, params: readonly Param[] = []): number {
    const stmt = this.prepare(sql);
    this.writeCount++;
    try {
      stmt.run(params as Param[]);
    } finally {
      stmt.reset();
    }
    return this.db.getRowsModified();
  }

  /**
   * Bytes the database file would have now (its pages, free ones included), and of its free pages, which
   * deletions leave in the file until a VACUUM (and are reused first); without exporting it, in one query.
   */
  pageBytes(): { total: number; free: number } {
    const row = this.one('SELECT page_count * page_size AS total, freelist_count * page_size AS free FROM pragma_page_count(), pragma_page_size(), pragma_freelist_count()');
    return { total: Number(row?.total ?? 0), free: Number(row?.free ?? 0) };
  }

  /**
   * VACUUM, not counted as a write: it changes no row, only gives free pages back, and the caller is about
   * to write the file (a count would make memory look ahead of the file it just wrote).
   */
  compact(): void {
    this.db.exec('VACUUM');
  }

  /** Runs `fn` in one transaction, so a batch of changes costs one journal cycle. */
  transaction<T>(fn: () => T): T {
    this.db.exec('BEGIN');
    try {
      const result = fn();
      this.db.exec('COMMIT');
      return result;
    } catch (e) {
      this.db.exec('ROLLBACK');
      throw e;
    }
  }

  /** Runs several statements without parameters (migrations). */
  exec(sql: string): void {
    this.writeCount++;
    this.db.exec(sql);
  }

  /**
   * Reads one row by key and returns a function that puts the row back as it was (or removes it if
   * there was none): the undo of a durable change whose persist failed. Table and column names are
   * constants of this package, never input.
   */
  captureRow(table: string, keyColumn: string, key: string): () => void {
    const before = this.one(`SELECT rowid, * FROM ${table} WHERE ${keyColumn} = ?`, [key]);
    return () => {
      this.run(`DELETE FROM ${table} WHERE ${keyColumn} = ?`, [key]);
      if (before) this.restoreRow(table, keyColumn, before);
    };
  }

  /**
   * Puts back a row read with `SELECT rowid, *`, under its rowid: that is its place in the order lists
   * and the session history follow, and put back under a new one, a device whose deletion was undone
   * moved to the end of the list. Under a new one all the same when another row has the rowid now: a
   * flush meanwhile gives the highest rowid, freed by a deletion, to the record it writes. `replace`:
   * a row with the same key is replaced (INSERT OR REPLACE).
   */
  restoreRow(table: string, keyColumn: string, row: Row, replace = false): void {
    const { rowid, ...values } = row;
    const holder = this.one(`SELECT ${keyColumn} AS k FROM ${table} WHERE rowid = ?`, [rowid as Param]);
    const columns = [...(holder === undefined || (replace && holder.k === values[keyColumn]) ? ['rowid'] : []), ...Object.keys(values)];
    this.run(
      `INSERT${replace ? ' OR REPLACE' : ''} INTO ${table} (${columns.join(', ')}) VALUES (${columns.map(() => '?').join(', ')})`,
      columns.map((c) => (c === 'rowid' ? rowid : values[c]) as Param),
    );
  }

  /** The whole database as SQLite file bytes. Must not be called inside a transaction. */
  export(): Uint8Array {
    this.statements.clear(); // export() frees them all
    return this.db.export();
  }

  close(): void {
    this.statements.clear();
    this.db.close();
  }

  private prepare(sql: string): Statement {
    let stmt = this.statements.get(sql);
    if (!stmt) {
      stmt = this.db.prepare(sql);
      this.statements.set(sql, stmt);
    }
    return stmt;
  }
}

export interface SqlEngine {
  openBytes(bytes: Uint8Array | undefined): Database;
}

type InstantiateWasm = NonNullable<SqlJsConfig['instantiateWasm']>;
type WasmImports = Parameters<InstantiateWasm>[0];
type WasmInstance = Parameters<Parameters<InstantiateWasm>[1]>[0];
/** A compiled WebAssembly.Module: only passed from compile to instantiate. */
type WasmModule = object;
/** Node's WebAssembly global: the ES2022 library types only name its types (through @types/emscripten). */
const wasm = (globalThis as unknown as {
  WebAssembly: {
    compile(bytes: Uint8Array): Promise<WasmModule>;
    instantiate(module: WasmModule, imports: WasmImports): Promise<WasmInstance>;
  };
}).WebAssembly;

/**
 * Loads the sql.js engine from `wasmBinary`, by default the asset of this build. The bytes are always
 * handed over: sql.js left to itself reads `sql-wasm.wasm` beside the running script, which inside a
 * single executable is a file that does not exist.
 */
export async function loadSqlEngine(wasmBinary: Uint8Array = requireAsset(SQL_WASM)): Promise<SqlEngine> {
  // Compiled here and handed over as a module, not as `wasmBinary`: sql.js keeps the bytes it is given
  // for the life of the process (660 KB, plus the caller's copy), and nothing needs them once compiled.
  const module = await wasm.compile(wasmBinary);
  let failed: (e: unknown) => void = () => {};
  const failure = new Promise<never>((_, reject) => (failed = reject));
  const SQL = await Promise.race([
    initSqlJs({
      instantiateWasm: (imports, done) => {
        wasm.instantiate(module, imports).then((instance) => done(instance), failed);
        return {};
      },
    }),
    failure,
  ]);
  return { openBytes: (bytes) => new SQL.Database(bytes) };
}

/** A database path that is no regular file of its own, left as found. */
export class StoreNotAFileError extends StoreFileError {
  constructor(readonly file: string, what: string, todo: string) {
    super(`database file ${file} is ${what}: refused, it was left untouched. ${todo}`);
    this.name = 'StoreNotAFileError';
  }
}

/**
 * The largest database file loaded: sql.js holds the whole database in its WebAssembly heap, which stops
 * at 2 GiB, and Node reads at most 2 GiB - 1 into one buffer. A larger file failed the start with Node's
 * bare "File size (3221225472) is greater than 2 GiB", naming no file, and exit code 1, which the unit
 * retries though every start meets the same file.
 */
export const MAX_DATABASE_BYTES = 2 ** 31 - 1;

/** A database file larger than MAX_DATABASE_BYTES, left as found. */
export class StoreTooLargeError extends StoreFileError {
  constructor(readonly file: string, size: number) {
    super(
      `database file ${file} is ${size} bytes, more than the ${MAX_DATABASE_BYTES} the database engine (sql.js) can hold in memory; ` +
        'it was left untouched. Restore a backup, or move it away to start with an empty database.',
    );
    this.name = 'StoreTooLargeError';
  }
}

/**
 * The file's bytes, undefined when there is none. Read without following a symbolic link and only from a
 * regular file: every write replaces the file by rename, which replaces a link with a file of its own and
 * leaves its target behind, so a database reached through a link would fork at the first write.
 */
async function readDatabaseBytes(file: string): Promise<Uint8Array | undefined> {
  let fd: number;
  try {
    fd = await openFile(file, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return undefined;
    if (code === 'ELOOP' && isLinkItself(file)) {
      throw new StoreNotAFileError(file, 'a symbolic link', 'Put the database file itself there (move the file it points to in its place), or point Storage.DataDir at the folder that holds it.');
    }
    throw e;
  }
  try {
    const stat = await statFile(fd);
    if (stat.isDirectory()) throw new StoreNotAFileError(file, 'a directory', 'Move it away to start with an empty database.');
    if (!stat.isFile()) throw new StoreNotAFileError(file, 'not a regular file', 'Move it away to start with an empty database.');
    if (stat.size > MAX_DATABASE_BYTES) throw new StoreTooLargeError(file, stat.size);
    return await readOpenFile(fd);
  } finally {
    await closeFile(fd);
  }
}

/**
 * Opens `file` read-only-in-spirit: the bytes are loaded into memory and checked; nothing is ever
 * written to the file here. A missing file gives an empty database; anything SQLite cannot fully
 * read gives a StoreCorruptError.
 */
export async function openDatabaseFile(engine: SqlEngine, file: string): Promise<{ db: SqlDb; existed: boolean }> {
  const bytes = await readDatabaseBytes(file);
  if (!bytes) return { db: new SqlDb(engine.openBytes(undefined)), existed: false };

  // A file we wrote always has a full header; an empty one means its content was lost.
  if (bytes.length === 0) throw new StoreCorruptError(file, 'the file is empty');
  if (Buffer.from(bytes.subarray(0, 16)).toString('latin1') !== SQLITE_HEADER) {
    throw new StoreCorruptError(file, 'not an SQLite database');
  }
  let database: Database | undefined;
  try {
    database = engine.openBytes(bytes);
    const result = database.exec('PRAGMA integrity_check');
    const problems = (result[0]?.values ?? []).map((r) => String(r[0])).filter((m) => m !== 'ok');
    if (problems.length > 0 || result.length === 0) {
      throw new Error(problems.slice(0, 3).join('; ') || 'integrity check returned nothing');
    }
  } catch (e) {
    database?.close();
    throw new StoreCorruptError(file, e instanceof Error ? e.message : String(e));
  }
  return { db: new SqlDb(database), existed: true };
}
