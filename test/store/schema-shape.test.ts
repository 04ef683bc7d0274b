// The tables and columns read from the migrations' text (schema-shape.ts) must be what SQLite makes of
// the same SQL: checked for the real migrations and for the forms a later migration may take.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { loadSqlEngine, SqlDb } from '../../src/store/database.js';
import { MIGRATIONS, migrate, tablesOf } from '../../src/store/migrations.js';
import { schemaShape, type SchemaShape } from '../../src/store/schema-shape.js';

const plain = (shape: SchemaShape): Record<string, string[]> =>
  Object.fromEntries([...shape].map(([table, columns]) => [table, [...columns].sort()]).sort(([a], [b]) => String(a).localeCompare(String(b))));

async function whatSqliteMakes(migrations: readonly string[]): Promise<SchemaShape> {
  const db = new SqlDb((await loadSqlEngine()).openBytes(undefined));
  try {
    migrate(db, ':memory:', migrations);
    return tablesOf(db);
  } finally {
    db.close();
  }
}

test('the migrations read as SQLite runs them', async () => {
  const read = plain(schemaShape(MIGRATIONS));
  assert.deepEqual(read, plain(await whatSqliteMakes(MIGRATIONS)));
  assert.deepEqual(Object.keys(read), ['broker_messages', 'devices', 'sessions', 'settings']);
});

test('later migrations: constraints, quoted names, added and dropped columns and tables', async () => {
  const later = [
    ...MIGRATIONS,
    `CREATE TABLE IF NOT EXISTS "audit log" (
       at TEXT NOT NULL DEFAULT (datetime('now', 'localtime')),
       "who, exactly" TEXT CHECK (length("who, exactly") > 0),
       note TEXT DEFAULT 'a; b, (c)',
       PRIMARY KEY (at, "who, exactly"),
       UNIQUE (note),
       CONSTRAINT known FOREIGN KEY (note) REFERENCES devices (id)
     ) WITHOUT ROWID;
     ALTER TABLE devices ADD COLUMN firmware TEXT;
     ALTER TABLE sessions ADD "language tag" TEXT NOT NULL DEFAULT 'en';
     CREATE INDEX audit_at ON "audit log" (at);
     CREATE TABLE scratch (x INTEGER);
     DROP TABLE scratch;`,
  ];
  assert.deepEqual(plain(schemaShape(later)), plain(await whatSqliteMakes(later)));
});

// A foreign file's table names are read too (migrations.ts, assertOwnAtItsVersion): each is quoted into PRAGMA table_info.
test('tables whose names hold quotes are read with their columns', async () => {
  const db = new SqlDb((await loadSqlEngine()).openBytes(undefined));
  try {
    db.exec('CREATE TABLE "say ""hi""" (a TEXT, "b ""c""" INTEGER); CREATE TABLE """" (x TEXT)');
    assert.deepEqual(plain(tablesOf(db)), { '"': ['x'], 'say "hi"': ['a', 'b "c"'] });
  } finally {
    db.close();
  }
});

test('a statement about tables it cannot read is refused, not guessed at', () => {
  assert.throws(() => schemaShape([...MIGRATIONS, 'ALTER TABLE devices RENAME TO gadgets;']), {
    message: 'schemaShape cannot read this migration statement: ALTER TABLE devices RENAME TO gadgets',
  });
  assert.throws(() => schemaShape(['ALTER TABLE nowhere ADD COLUMN x TEXT']), {
    message: 'migration adds a column to nowhere, which no earlier migration made',
  });
});
