// Schema versions: `PRAGMA user_version` holds how many of MIGRATIONS a file has had applied.
// Append only: never edit a released migration, add the next one.
import { errorText } from '../errors.js';
import { StoreForeignError, StoreVersionError, type SqlDb } from './database.js';
import { schemaShape, type SchemaShape } from './schema-shape.js';

export const MIGRATIONS: readonly string[] = [
  // 1: devices, the token generation of every id ever seen, sessions as history, settings per category.
  `CREATE TABLE devices (
     id TEXT PRIMARY KEY,
     name TEXT NOT NULL,
     type TEXT NOT NULL,
     capabilities TEXT NOT NULL,
     location TEXT NOT NULL,
     status TEXT NOT NULL,
     registered_at TEXT NOT NULL,
     last_seen TEXT NOT NULL,
     battery_level REAL,
     temperature REAL,
     memory_usage REAL,
     cpu_usage REAL,
     token_generation INTEGER NOT NULL
   );
   CREATE TABLE device_generations (
     id TEXT PRIMARY KEY,
     generation INTEGER NOT NULL
   );
   CREATE TABLE sessions (
     id TEXT PRIMARY KEY,
     device_id TEXT NOT NULL,
     user_id TEXT NOT NULL,
     state TEXT NOT NULL,
     start_time TEXT NOT NULL,
     end_time TEXT,
     end_reason TEXT,
     config TEXT NOT NULL,
     audio_packets_sent INTEGER NOT NULL
   );
   CREATE INDEX sessions_state ON sessions (state);
   CREATE TABLE settings (
     category TEXT PRIMARY KEY,
     json TEXT NOT NULL
   );`,
  // 2: one generation counter for all devices instead of a row per id ever seen. A deleted id kept its
  // row for good (the table grew by one row per device id that came and went, and every write of the
  // file with it); a new registration now takes the next generation of the counter, which is above any
  // generation an earlier device under its id had, so that device's tokens still never match.
  `CREATE TABLE token_generation (
     last INTEGER NOT NULL
   );
   INSERT INTO token_generation (last) VALUES (max(
     coalesce((SELECT max(generation) FROM device_generations), 0),
     coalesce((SELECT max(token_generation) FROM devices), 0)
   ));
   DROP TABLE device_generations;`,
  // 3: no counter at all: a registration takes a random 53-bit generation (src/devices/generation.ts).
  // A counter in the file went back with the file: a restored backup handed out again the generations
  // it had handed out since, and tokens from that discarded time matched the new registrations of
  // their ids.
  `DROP TABLE token_generation;`,
  // 4: a device's deletion takes its sessions' records with it (a device registered again under its id is
  // another device and must find none of them). Records of devices deleted before this are removed here.
  `DELETE FROM sessions WHERE device_id NOT IN (SELECT id FROM devices);`,
  // 5: messages for the MQTT broker that a clean stop could not deliver (it was unreachable), in publish
  // order, sent after the next start: a session's `ended` event is news that no later state repeats.
  `CREATE TABLE broker_messages (
     seq INTEGER PRIMARY KEY,
     topic TEXT NOT NULL,
     payload TEXT NOT NULL,
     retain INTEGER NOT NULL
   );`,
];

export function schemaVersion(db: SqlDb): number {
  return Number(db.one('PRAGMA user_version')?.user_version ?? 0);
}

/**
 * Brings the database up to the newest schema; returns how many migrations ran. A file from a newer
 * voice-hub is refused rather than guessed at. `migrations` is a parameter so tests can add one.
 */
export function migrate(db: SqlDb, file: string, migrations: readonly string[] = MIGRATIONS): number {
  const found = schemaVersion(db);
  if (found > migrations.length) throw new StoreVersionError(file, found, migrations.length);
  for (let version = found; version < migrations.length; version++) {
    // Each step and its version number commit together, so a step is never half applied.
    db.transaction(() => {
      db.exec(migrations[version] as string);
      db.exec(`PRAGMA user_version = ${version + 1}`);
    });
  }
  return migrations.length - found;
}

/** Tables and their columns, as SQLite has them. */
export function tablesOf(db: SqlDb): SchemaShape {
  const tables = db.all("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY rowid");
  // The PRAGMA statement, not the pragma_table_info() function: that one had sql.js compile SQLite's
  // virtual-table planning on every start, for nothing else the start needs (3-5 ms on the bench machine).
  return new Map(tables.map((t) => [String(t.name), new Set(db.all(`PRAGMA table_info(${quotedName(String(t.name))})`).map((c) => String(c.name)))]));
}

/** A table name as SQL text: a name read from a file may hold anything, quotes included. */
const quotedName = (name: string): string => `"${name.replace(/"/g, '""')}"`;

/** What a voice-hub database holds after every migration, read from their text once. */
let wanted: SchemaShape | undefined;

/**
 * Migrates a file that existed, refusing one whose tables are not ours: a valid SQLite file that another
 * program wrote failed a migration with SQLite's bare words ("table devices already exists") or, at our
 * schema version, later with "no such table". Tables of its own beside ours are kept.
 */
export function migrateExisting(db: SqlDb, file: string): number {
  assertOwnAtItsVersion(db, file);
  let applied: number;
  try {
    applied = migrate(db, file);
  } catch (e) {
    if (e instanceof StoreVersionError) throw e;
    throw new StoreForeignError(file, errorText(e));
  }
  wanted ??= schemaShape(MIGRATIONS);
  assertShape(db, file, wanted);
  return applied;
}

/**
 * Refuses a file that lacks what its schema version says it holds, before a migration (or a backup of
 * it for one) reads it: a foreign file is named as such, not by the SQL error of the first migration
 * step that needs one of our tables.
 */
function assertOwnAtItsVersion(db: SqlDb, file: string): void {
  const version = schemaVersion(db);
  // PRAGMA user_version is any 32-bit number another program chose; ours count up from 0. A negative one
  // failed in migrate() with a JavaScript TypeError as its reason (there is no migration -5).
  if (version < 0) throw new StoreForeignError(file, `its schema version ${version} is none of voice-hub's`);
  if (version > 0 && version < MIGRATIONS.length) assertShape(db, file, schemaShape(MIGRATIONS.slice(0, version)));
  // Version 0 with tables is another program's file (ours has none before its first migration): it was
  // migrated in place, our tables added beside its own and the file rewritten.
  if (version === 0) {
    const tables = [...tablesOf(db).keys()];
    if (tables.length > 0) throw new StoreForeignError(file, `it holds tables of its own (${tables.slice(0, 5).join(', ')}${tables.length > 5 ? ', ...' : ''}) and no voice-hub schema version`);
  }
}

function assertShape(db: SqlDb, file: string, shape: SchemaShape): void {
  const found = tablesOf(db);
  for (const [table, columns] of shape) {
    const have = found.get(table);
    if (!have) throw new StoreForeignError(file, `table ${table} is missing`);
    for (const column of columns) if (!have.has(column)) throw new StoreForeignError(file, `table ${table} has no column ${column}`);
  }
}
