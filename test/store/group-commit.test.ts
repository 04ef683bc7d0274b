// Group commit: a burst of durable writes shares file writes, and none is acknowledged before it is on disk.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { device, onDisk, open } from './helpers.js';
import { scratchDir } from '../support/tmp.js';

test('50 concurrent inserts all resolve, all survive reopen, with far fewer than 50 file writes', async () => {
  const dir = await scratchDir();
  try {
    const store = await open(dir.path);
    const before = store.persistCount;
    const ids = Array.from({ length: 50 }, (_, i) => `dev-${String(i).padStart(2, '0')}`);
    await Promise.all(ids.map((id) => store.devices.insert(device(id))));
    const persists = store.persistCount - before;
    assert.ok(persists >= 1 && persists <= 3, `expected 1..3 file writes for the burst, got ${persists}`);
    await store.close();
    const reopened = await open(dir.path);
    assert.deepEqual(reopened.devices.list().map((d) => d.id), ids);
    await reopened.close();
  } finally {
    await dir.cleanup();
  }
});

test('each write is on disk when its promise resolves, also when it joined a running persist', async () => {
  const dir = await scratchDir();
  try {
    const store = await open(dir.path);
    const ids = Array.from({ length: 10 }, (_, i) => `dev-${i}`);
    const checks = ids.map(async (id) => {
      await store.devices.insert(device(id));
      return onDisk(dir.path, (s) => s.devices.get(id)?.id);
    });
    assert.deepEqual(await Promise.all(checks), ids);
    await store.close();
  } finally {
    await dir.cleanup();
  }
});

test('a flush during a burst waits for the running persist and covers later telemetry', async () => {
  const dir = await scratchDir();
  try {
    const store = await open(dir.path);
    await store.devices.insert(device('dev-0'));
    const insert = store.devices.insert(device('dev-1'));
    store.devices.updateTelemetry('dev-0', { ...device('x'), status: 'busy' });
    await store.flush();
    await insert;
    assert.deepEqual(await onDisk(dir.path, (s) => [s.devices.count(), s.devices.get('dev-0')?.status]), [2, 'busy']);
    await store.close();
  } finally {
    await dir.cleanup();
  }
});
