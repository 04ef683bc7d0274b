// A damaged or too-new database file stops start-up with a clear message and is never modified.
import assert from 'node:assert/strict';
import { lstat, mkdir, readdir, readFile, rename, symlink, truncate, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import { loadSqlEngine, openDatabaseFile, StoreCorruptError, StoreFileError, StoreForeignError, StoreVersionError } from '../../src/store/database.js';
import { openSettingsReadOnly } from '../../src/store/read-only.js';
import { migrate, MIGRATIONS, schemaVersion } from '../../src/store/migrations.js';
import { device, open, sha256, tableRows } from './helpers.js';
import { scratchDir } from '../support/tmp.js';

async function storeWithDevices(dataDir: string, n: number): Promise<string> {
  const store = await open(dataDir);
  for (let i = 0; i < n; i++) await store.devices.insert(device(`dev-${i}`, { name: 'x'.repeat(500) }));
  await store.close();
  return join(dataDir, 'voice-hub.db');
}

const damages: Array<[string, (file: string) => Promise<void>]> = [
  ['truncated to half', async (file) => truncate(file, (await readFile(file)).length / 2)],
  ['truncated inside the header', (file) => truncate(file, 50)],
  ['garbage', (file) => writeFile(file, Buffer.alloc(16384, 'not a database at all '))],
  ['empty', (file) => truncate(file, 0)],
  ['a damaged page', async (file) => {
    const bytes = await readFile(file);
    bytes.fill(0xab, 4096, 8192);
    await writeFile(file, bytes);
  }],
];

for (const [name, damage] of damages) {
  test(`a database file ${name} is refused and left byte for byte unchanged`, async () => {
    const dir = await scratchDir();
    try {
      const file = await storeWithDevices(dir.path, 20);
      await damage(file);
      const hash = await sha256(file);
      await assert.rejects(open(dir.path), (e: unknown) => {
        assert.ok(e instanceof StoreCorruptError, String(e));
        assert.ok(e.message.includes(file), e.message);
        assert.match(e.message, /left untouched/);
        assert.match(e.message, /backup/);
        return true;
      });
      assert.equal(await sha256(file), hash);
      assert.deepEqual(await readdir(dir.path), ['voice-hub.db']);
    } finally {
      await dir.cleanup();
    }
  });
}

test('a file from a newer schema version is refused and left unchanged', async () => {
  const dir = await scratchDir();
  try {
    const file = await storeWithDevices(dir.path, 1);
    const engine = await loadSqlEngine();
    const { db } = await openDatabaseFile(engine, file);
    db.exec(`PRAGMA user_version = ${MIGRATIONS.length + 1}`);
    await writeFile(file, db.export());
    db.close();
    const hash = await sha256(file);
    await assert.rejects(open(dir.path), (e: unknown) => {
      assert.ok(e instanceof StoreVersionError, String(e));
      assert.ok(e.message.includes(file));
      assert.match(e.message, new RegExp(`schema version ${MIGRATIONS.length + 1}`));
      assert.match(e.message, /left untouched/);
      assert.ok(e.message.endsWith('restore a backup made by this version.'), e.message);
      return true;
    });
    assert.equal(await sha256(file), hash);
    // After an upgrade, the file as this version left it is beside the database: the refusal names it.
    await writeFile(`${file}.v${MIGRATIONS.length}.bak`, 'kept');
    await assert.rejects(open(dir.path), (e: unknown) => {
      assert.ok(e instanceof StoreVersionError, String(e));
      assert.ok(e.message.endsWith(`restore a backup made by this version (${file}.v${MIGRATIONS.length}.bak is the file as this version left it before the upgrade: copy it over ${file}; what changed since is lost).`), e.message);
      return true;
    });
  } finally {
    await dir.cleanup();
  }
});

test('migrations upgrade an older file step by step and keep its data', async () => {
  const dir = await scratchDir();
  try {
    const file = await storeWithDevices(dir.path, 2);
    const engine = await loadSqlEngine();
    const { db } = await openDatabaseFile(engine, file);
    assert.equal(schemaVersion(db), MIGRATIONS.length);
    const next = [...MIGRATIONS, 'ALTER TABLE devices ADD COLUMN firmware TEXT', "UPDATE devices SET firmware = '1.0'"];
    assert.equal(migrate(db, file, next), 2);
    assert.equal(schemaVersion(db), MIGRATIONS.length + 2);
    assert.deepEqual(db.all('SELECT id, firmware FROM devices ORDER BY id'), [
      { id: 'dev-0', firmware: '1.0' },
      { id: 'dev-1', firmware: '1.0' },
    ]);
    assert.equal(migrate(db, file, next), 0);
    db.close();
  } finally {
    await dir.cleanup();
  }
});

for (const version of [1, 2]) {
  test(`a schema version ${version} file: its devices keep their generations, what held the old ones goes, and a backup is kept`, async () => {
    const dir = await scratchDir();
    try {
      const engine = await loadSqlEngine();
      const { db } = await openDatabaseFile(engine, join(dir.path, 'none.db'));
      migrate(db, 'none.db', MIGRATIONS.slice(0, 1));
      db.exec(`INSERT INTO devices VALUES ('live', 'n', 't', '[]', 'l', 'online', '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z', NULL, NULL, NULL, NULL, 3);
               INSERT INTO device_generations VALUES ('live', 3), ('deleted-long-ago', 9), ('deleted', 4);`);
      migrate(db, 'none.db', MIGRATIONS.slice(0, version));
      const file = join(dir.path, 'voice-hub.db');
      await writeFile(file, db.export());
      db.close();

      const store = await open(dir.path);
      assert.equal(store.devices.get('live')?.tokenGeneration, 3, 'the live device keeps its tokens');
      await store.close();
      assert.deepEqual(await readdir(dir.path), ['voice-hub.db', `voice-hub.db.v${version}.bak`]);
      assert.deepEqual(await tableRows(file), { broker_messages: 0, devices: 1, sessions: 0, settings: 0 });
    } finally {
      await dir.cleanup();
    }
  });
}

// SQLite's integrity check passes JSON text that was cut short or made by hand; read row by row, it made every
// session start a 500 (the voice category is read for its defaults) and config check a stack trace.
const badRows: Array<[string, string, Array<string | number>, string]> = [
  ['settings JSON that is cut short', 'INSERT INTO settings (category, json) VALUES (?, ?)', ['voice', '{"audioSampleRate":16'], 'settings row "voice" has no JSON object in json'],
  ['settings JSON that is an array', 'INSERT INTO settings (category, json) VALUES (?, ?)', ['device', '[1,2]'], 'settings row "device" has no JSON object in json'],
  ['device capabilities that are no JSON', "UPDATE devices SET capabilities = ? WHERE id = ?", ['audio, wake-word', 'dev-3'], 'devices row "dev-3" has no JSON array in capabilities'],
  ['a session config that is a JSON string', "INSERT INTO sessions (id, device_id, user_id, state, start_time, config, audio_packets_sent) VALUES (?, 'dev-1', '', 'Stopped', '', ?, 0)", ['s-1', '"opus"'], 'sessions row "s-1" has no JSON object in config'],
];

for (const [name, sql, params, reason] of badRows) {
  test(`a database with ${name} is refused as damaged and left unchanged`, async () => {
    const dir = await scratchDir();
    try {
      const file = await storeWithDevices(dir.path, 5);
      const { db } = await openDatabaseFile(await loadSqlEngine(), file);
      db.run(sql, params);
      await writeFile(file, db.export());
      db.close();
      const hash = await sha256(file);
      const refusal = `database file ${file} is damaged (${reason}); it was left untouched. Restore it from a backup, or move it away to start with an empty database.`;
      await assert.rejects(open(dir.path), (e: unknown) => e instanceof StoreCorruptError && e.message === refusal);
      await assert.rejects(openSettingsReadOnly(dir.path), (e: unknown) => e instanceof StoreCorruptError && e.message === refusal);
      assert.equal(await sha256(file), hash);
      assert.deepEqual(await readdir(dir.path), ['voice-hub.db']);
    } finally {
      await dir.cleanup();
    }
  });
}

test('a file at schema version 0 (an empty SQLite file) is migrated by openStore', async () => {
  const dir = await scratchDir();
  try {
    const engine = await loadSqlEngine();
    const { db } = await openDatabaseFile(engine, join(dir.path, 'none.db'));
    db.exec('CREATE TABLE gone (x); DROP TABLE gone'); // a valid SQLite file, user_version still 0, no tables
    await writeFile(join(dir.path, 'voice-hub.db'), db.export());
    db.close();
    const store = await open(dir.path);
    await store.devices.insert(device('dev-1'));
    await store.close();
    const reopened = await open(dir.path);
    assert.equal(reopened.devices.count(), 1);
    await reopened.close();
  } finally {
    await dir.cleanup();
  }
});

// Valid SQLite files that another program wrote (or a hand-made one): tables of its own and no schema
// version of ours (it used to be migrated in place, our tables added beside its own), a table of ours
// missing or holding other columns.
const foreign: Array<[string, string, string]> = [
  ['at schema version 0 with a devices table of its own', 'CREATE TABLE devices (serial TEXT, owner TEXT)', 'it holds tables of its own (devices) and no voice-hub schema version'],
  ['at schema version 0 with tables of its own', 'CREATE TABLE recipes (name TEXT); CREATE TABLE a (x); CREATE TABLE b (x); CREATE TABLE c (x); CREATE TABLE d (x); CREATE TABLE e (x)', 'it holds tables of its own (recipes, a, b, c, d, ...) and no voice-hub schema version'],
  ['at schema version 1 without our tables', 'CREATE TABLE photos (path TEXT); PRAGMA user_version = 1', 'table devices is missing'],
  ['at a negative schema version with tables of its own', 'CREATE TABLE recipes (name TEXT); PRAGMA user_version = -5', 'its schema version -5 is none of voice-hub\'s'],
  ['at a negative schema version without tables', 'CREATE TABLE gone (x); DROP TABLE gone; PRAGMA user_version = -2147483648', 'its schema version -2147483648 is none of voice-hub\'s'],
  ['at schema version 1 with a settings table of other columns', `${MIGRATIONS[0]!.replace('json TEXT NOT NULL', 'value TEXT')}; PRAGMA user_version = 1`, 'table settings has no column json'],
];

for (const [name, sql, reason] of foreign) {
  test(`a foreign SQLite file ${name} is refused as not a voice-hub database and left unchanged`, async () => {
    const dir = await scratchDir();
    try {
      const engine = await loadSqlEngine();
      const { db } = await openDatabaseFile(engine, join(dir.path, 'none.db'));
      db.exec(sql);
      const file = join(dir.path, 'voice-hub.db');
      await writeFile(file, db.export());
      db.close();
      const hash = await sha256(file);
      await assert.rejects(open(dir.path), (e: unknown) => {
        assert.ok(e instanceof StoreForeignError, String(e));
        assert.equal(
          e.message,
          `database file ${file} is not a voice-hub database (${reason}); it was left untouched. ` +
            'Point Storage.DataDir at the folder of voice-hub\'s own database, or move this file away to start with an empty one.',
        );
        return true;
      });
      assert.equal(await sha256(file), hash);
      assert.deepEqual(await readdir(dir.path), ['voice-hub.db']);
      await assert.rejects(openSettingsReadOnly(dir.path), StoreForeignError);
    } finally {
      await dir.cleanup();
    }
  });
}

// Read through, a link was replaced by the first write's rename: the service went on in a fork and its
// target kept the old data. Both the service's open and config check's read-only one refuse it.
// Node read at most 2 GiB - 1 into a buffer, and sql.js holds the database in a heap of 2 GiB: a larger file
// stopped the start with Node's "File size (...) is greater than 2 GiB", no file named, and exit code 1.
test('a database file larger than the engine can hold is refused, named, and left as it was', async () => {
  const dir = await scratchDir();
  try {
    const file = await storeWithDevices(dir.path, 1);
    await truncate(file, 2 ** 31); // sparse: no disk space taken
    const refusal = `database file ${file} is 2147483648 bytes, more than the 2147483647 the database engine (sql.js) can hold in memory; ` +
      'it was left untouched. Restore a backup, or move it away to start with an empty database.';
    await assert.rejects(open(dir.path), (e: unknown) => e instanceof StoreFileError && e.message === refusal);
    await assert.rejects(openSettingsReadOnly(dir.path), (e: unknown) => e instanceof StoreFileError && e.message === refusal);
    assert.equal((await lstat(file)).size, 2 ** 31);
    assert.deepEqual(await readdir(dir.path), ['voice-hub.db']);
  } finally {
    await dir.cleanup();
  }
});

test('a database file that is a symbolic link or a directory is refused and left as it was', async () => {
  const dir = await scratchDir();
  try {
    const file = await storeWithDevices(dir.path, 1);
    await rename(file, join(dir.path, 'real.db'));
    await symlink('real.db', file);
    const link = `database file ${file} is a symbolic link: refused, it was left untouched. ` +
      'Put the database file itself there (move the file it points to in its place), or point Storage.DataDir at the folder that holds it.';
    await assert.rejects(open(dir.path), (e: unknown) => e instanceof StoreFileError && e.message === link);
    await assert.rejects(openSettingsReadOnly(dir.path), (e: unknown) => e instanceof StoreFileError && e.message === link);
    assert.ok((await lstat(file)).isSymbolicLink());
    assert.deepEqual((await readdir(dir.path)).sort(), ['real.db', 'voice-hub.db']);

    await unlink(file);
    await mkdir(file);
    await assert.rejects(open(dir.path), (e: unknown) => e instanceof StoreFileError &&
      e.message === `database file ${file} is a directory: refused, it was left untouched. Move it away to start with an empty database.`);
  } finally {
    await dir.cleanup();
  }
});

// Schema version 4: a deletion takes the device's session records with it. Those of devices deleted
// before were kept, and a device registered again under such an id read, stopped and joined them.
test('upgrading to schema version 4 removes the sessions of devices deleted before, and keeps the others', async () => {
  const dir = await scratchDir();
  try {
    const file = join(dir.path, 'voice-hub.db');
    const engine = await loadSqlEngine();
    const { db } = await openDatabaseFile(engine, file);
    migrate(db, file, MIGRATIONS.slice(0, 3));
    db.run("INSERT INTO devices (id, name, type, capabilities, location, status, registered_at, last_seen, token_generation) VALUES ('kept', 'k', 't', '[]', '', 'online', 'x', 'x', 7)");
    const row = (id: string, device: string) => db.run(
      "INSERT INTO sessions (id, device_id, user_id, state, start_time, config, audio_packets_sent) VALUES (?, ?, 'u', 'Stopped', 'x', '{}', 0)", [id, device]);
    row('s-kept', 'kept');
    row('s-gone', 'deleted');
    assert.equal(migrate(db, file), MIGRATIONS.length - 3);
    assert.deepEqual(db.all('SELECT id FROM sessions ORDER BY id'), [{ id: 's-kept' }]);
    db.close();
  } finally {
    await dir.cleanup();
  }
});
