// Device repository against a real database file: round trips across reopen, generations, conflicts.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readdir, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import { isDomainError } from '../../src/errors.js';
import { device, open, tableRows, folderLoss } from './helpers.js';
import { scratchDir } from '../support/tmp.js';

test('the database file is created on first start, in a data dir created with mode 0750', async () => {
  const root = await scratchDir();
  try {
    const dataDir = join(root.path, 'a', 'b');
    const store = await open(dataDir);
    await store.close();
    assert.equal((await stat(dataDir)).mode & 0o777, 0o750 & ~process.umask());
    assert.ok((await stat(join(dataDir, 'voice-hub.db'))).size > 0);
  } finally {
    await root.cleanup();
  }
});

test('insert, get, list, count and delete survive close and reopen', async () => {
  const dir = await scratchDir();
  try {
    let store = await open(dir.path);
    const full = device('dev-1', {
      capabilities: ['audio', 'display'],
      batteryLevel: 87.5,
      temperature: 41,
      memoryUsage: 12.25,
      cpuUsage: 0,
      tokenGeneration: 3,
    });
    await store.devices.insert(full);
    await store.devices.insert(device('dev-2', { registeredAt: '2024-05-02T00:00:00.000Z' }));
    await store.devices.insert(device('dev-3', { registeredAt: '2024-05-03T00:00:00.000Z' }));
    assert.equal(await store.devices.delete('dev-3'), true);
    assert.equal(await store.devices.delete('never-there'), false);
    await store.close();

    store = await open(dir.path);
    assert.deepEqual(store.devices.get('dev-1'), full);
    // Numeric NULLs stay null, not 0.
    assert.deepEqual(store.devices.get('dev-2'), device('dev-2', { registeredAt: '2024-05-02T00:00:00.000Z' }));
    assert.equal(store.devices.get('dev-3'), undefined);
    assert.equal(store.devices.count(), 2);
    assert.deepEqual(store.devices.list().map((d) => d.id), ['dev-1', 'dev-2']);
    await store.close();
  } finally {
    await dir.cleanup();
  }
});

test('devices are listed in the order they were registered, not by the clock time they were registered at', async () => {
  // A Pi without a real-time clock: registered at the time it saved at shutdown, then NTP set the clock
  // back (a bad source, an admin) and later forward. Ordered by registered_at, the list put each device
  // registered after a step back before those registered before it.
  const dir = await scratchDir();
  const loss = folderLoss(dir.path);
  try {
    let store = await open(dir.path);
    await store.devices.insert(device('dev-b', { registeredAt: '2026-12-03T19:00:00.000Z' }));
    await store.devices.insert(device('dev-c', { registeredAt: '1970-01-01T00:00:14.000Z' }));
    await store.devices.insert(device('dev-a', { registeredAt: '2026-12-03T19:00:00.000Z' }));
    await store.devices.insert(device('dev-d', { registeredAt: '2020-01-01T00:00:00.000Z' }));
    const registered = ['dev-b', 'dev-c', 'dev-a', 'dev-d'];
    assert.deepEqual(store.devices.list().map((d) => d.id), registered);
    await store.close();

    store = await open(dir.path);
    assert.deepEqual(store.devices.list().map((d) => d.id), registered);
    // A deletion the disk refuses is undone: the device is back in its place, not last.
    await loss.lose();
    await assert.rejects(store.devices.delete('dev-c'), (e: unknown) => isDomainError(e) && e.code === 'unavailable');
    assert.deepEqual(store.devices.list().map((d) => d.id), registered);
    await loss.mend();
    await store.devices.insert(device('dev-e', { registeredAt: '1999-01-01T00:00:00.000Z' }));
    await store.close();

    store = await open(dir.path);
    assert.deepEqual(store.devices.list().map((d) => d.id), [...registered, 'dev-e']);
    await store.close();
  } finally {
    await loss.cleanup();
    await dir.cleanup();
  }
});

test('inserting an existing id is a conflict and changes nothing', async () => {
  const dir = await scratchDir();
  try {
    const store = await open(dir.path);
    await store.devices.insert(device('dev-1'));
    const before = store.persistCount;
    await assert.rejects(store.devices.insert(device('dev-1', { name: 'other' })), (e: unknown) => {
      assert.ok(isDomainError(e));
      assert.equal(e.code, 'conflict');
      assert.equal(e.message, "device 'dev-1' already exists");
      return true;
    });
    assert.equal(store.devices.get('dev-1')?.name, 'Device dev-1');
    assert.equal(store.persistCount, before);
    await store.close();
  } finally {
    await dir.cleanup();
  }
});

test('a device keeps the generation it was registered with, through reopen; deleted ids leave nothing behind', async () => {
  const dir = await scratchDir();
  try {
    let store = await open(dir.path);
    await store.devices.insert(device('dev-1', { tokenGeneration: 2 ** 53 - 1 }));
    await store.close();
    store = await open(dir.path);
    assert.equal(store.devices.get('dev-1')?.tokenGeneration, 2 ** 53 - 1, 'all 53 bits survive SQLite and sql.js');

    // Devices that come and go under new ids leave nothing behind: the file does not grow with them.
    for (let i = 0; i < 300; i++) {
      await store.devices.insert(device(`churn-${i}`, { tokenGeneration: i + 1 }));
      await store.devices.delete(`churn-${i}`);
    }
    await store.close();
    const tables = await tableRows(join(dir.path, 'voice-hub.db'));
    assert.deepEqual(tables, { broker_messages: 0, devices: 1, sessions: 0, settings: 0 });
  } finally {
    await dir.cleanup();
  }
});

test('writes and reads keep working after many persists (sql.js export frees prepared statements)', async () => {
  const dir = await scratchDir();
  try {
    const store = await open(dir.path);
    for (let i = 0; i < 5; i++) {
      await store.devices.insert(device(`dev-${i}`));
      assert.equal(store.devices.get(`dev-${i}`)?.id, `dev-${i}`);
      assert.equal(store.devices.count(), i + 1);
      store.devices.updateTelemetry(`dev-${i}`, { ...device('x'), status: 'busy' });
      await store.flush();
      await store.settings.put('voice', { n: i });
    }
    assert.equal(store.devices.list().filter((d) => d.status === 'busy').length, 5);
    await store.close();
  } finally {
    await dir.cleanup();
  }
});

test('after close, writes are refused as unavailable and close stays idempotent', async () => {
  const dir = await scratchDir();
  try {
    const store = await open(dir.path);
    await Promise.all([store.close(), store.close()]);
    await store.close();
    await assert.rejects(store.devices.insert(device('late')), (e: unknown) => isDomainError(e) && e.code === 'unavailable');
    await assert.rejects(store.check(), /closed/);
  } finally {
    await dir.cleanup();
  }
});

test('temp files left by a process that died mid-write are removed at start-up', async () => {
  const dir = await scratchDir();
  try {
    const store = await open(dir.path);
    await store.close();
    const deadPid = spawnSync(process.execPath, ['-e', '']).pid; // exited: its pid is free
    await writeFile(join(dir.path, `voice-hub.db.tmp-${deadPid}`), 'half written');
    // A pid that lives (reused, or a service killed and not yet reaped, a zombie): the lock says it
    // does not write here.
    await writeFile(join(dir.path, `voice-hub.db.tmp-${process.ppid}`), '');
    const reopened = await open(dir.path);
    await reopened.close();
    assert.deepEqual(await readdir(dir.path), ['voice-hub.db']);
  } finally {
    await dir.cleanup();
  }
});
