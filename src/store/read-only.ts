// The stored configuration categories, read without writing: for `config check`, which runs beside a
// running service. Opening the store for writing there would remove the service's in-flight temp
// file, prune or migrate the file under it; this copy lives in memory and is thrown away.
import { join } from 'node:path';
import { DomainError } from '../errors.js';
import { loadSqlEngine, openDatabaseFile } from './database.js';
import type { StoreContext } from './context.js';
import { DATABASE_FILE_NAME } from './index.js';
import { migrateExisting } from './migrations.js';
import { assertRowsReadable } from './readable-rows.js';
import { SqlSettingsRepository } from './settings.js';
import type { SettingsRepository } from './types.js';

export interface ReadOnlySettings {
  readonly settings: SettingsRepository;
  close(): void;
}

/** Undefined when there is no database file yet. Throws StoreCorruptError / StoreForeignError / StoreVersionError as openStore does. */
export async function openSettingsReadOnly(dataDir: string, wasmBinary?: Uint8Array): Promise<ReadOnlySettings | undefined> {
  const file = join(dataDir, DATABASE_FILE_NAME);
  const engine = await loadSqlEngine(wasmBinary);
  const { db, existed } = await openDatabaseFile(engine, file);
  if (!existed) {
    db.close();
    return undefined;
  }
  const readOnly = (): never => {
    throw new DomainError('unavailable', 'the database is open read-only');
  };
  try {
    // An older file is brought to the current schema in memory only, so the categories read alike.
    migrateExisting(db, file);
    assertRowsReadable(db, file);
  } catch (e) {
    db.close();
    throw e;
  }
  const ctx: StoreContext = { db, commit: async () => readOnly(), queued: readOnly, assertOpen: () => {}, assertWritable: readOnly };
  return { settings: new SqlSettingsRepository(ctx), close: () => db.close() };
}
