// Storage.SessionHistory: only the newest ended sessions are kept, open ones never go, and a file that
// grew under a larger limit shrinks when it is opened with a smaller one.
import assert from 'node:assert/strict';
import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import { silentLogger } from '../../src/log/logger.js';
import { openStore, type OpenedStore } from '../../src/store/index.js';
import { device, onDisk, session, folderLoss } from './helpers.js';
import { isDomainError } from '../../src/errors.js';
import { scratchDir } from '../support/tmp.js';

const openWithHistory = (dataDir: string, sessionHistory: number) =>
  openStore({ dataDir, flushIntervalMs: 60_000, sessionHistory, logger: silentLogger });

const ended = (n: number) =>
  session(`ended-${n}`, {
    state: n % 2 === 0 ? 'Stopped' : 'Failed',
    startTime: `2024-05-01T10:${String(n).padStart(2, '0')}:00.000Z`,
    endTime: `2024-05-01T10:${String(n).padStart(2, '0')}:30.000Z`,
    endReason: 'stopped',
  });

/** `count` ended sessions of ~350 bytes each, queued (the caller flushes or closes). */
async function saveBulk(store: OpenedStore, count: number): Promise<void> {
  for (let n = 0; n < count; n++) await store.sessions.save({ ...ended(n % 60), id: `bulk-${n}`, endReason: `upstream said: ${'x'.repeat(300)}` });
}

const ids = (store: { sessions: { get(id: string): unknown } }, all: string[]): string[] => all.filter((id) => store.sessions.get(id) !== undefined);

test('the flush keeps the newest ended sessions up to the limit and every open one', async () => {
  const dir = await scratchDir();
  try {
    const store = await openWithHistory(dir.path, 3);
    await store.sessions.save(session('open-old', { state: 'Active', startTime: '2024-05-01T09:00:00.000Z' }), true);
    for (let n = 1; n <= 6; n++) await store.sessions.save(ended(n));
    await store.flush();
    const all = ['open-old', ...[1, 2, 3, 4, 5, 6].map((n) => `ended-${n}`)];
    assert.deepEqual(ids(store, all), ['open-old', 'ended-4', 'ended-5', 'ended-6']);
    assert.deepEqual(await onDisk(dir.path, (s) => ids(s, all)), ['open-old', 'ended-4', 'ended-5', 'ended-6']);
    await store.close();
  } finally {
    await dir.cleanup();
  }
});

test('a durable save of an ended session prunes in the same write', async () => {
  const dir = await scratchDir();
  try {
    const store = await openWithHistory(dir.path, 1);
    await store.sessions.save(ended(1), true);
    await store.sessions.save(ended(2), true);
    assert.equal(await onDisk(dir.path, (s) => s.sessions.get('ended-1')), undefined);
    assert.equal(await onDisk(dir.path, (s) => s.sessions.get('ended-2')?.state), 'Stopped');
    await store.close();
  } finally {
    await dir.cleanup();
  }
});

test('limit 0 keeps no ended session', async () => {
  const dir = await scratchDir();
  try {
    const store = await openWithHistory(dir.path, 0);
    await store.sessions.save(session('s-open', { state: 'Active' }));
    await store.sessions.save(ended(1));
    await store.flush();
    assert.equal(store.sessions.get('ended-1'), undefined);
    assert.equal(store.sessions.get('s-open')?.state, 'Active');
    await store.close();
  } finally {
    await dir.cleanup();
  }
});

test('opening with a smaller limit prunes and compacts the file', async () => {
  const dir = await scratchDir();
  const file = join(dir.path, 'voice-hub.db');
  try {
    let store = await openWithHistory(dir.path, 2000);
    await saveBulk(store, 1000);
    await store.close();
    const before = (await stat(file)).size;
    assert.ok(before > 300 * 1024, `1,000 sessions make a large file (${before} bytes)`);

    store = await openWithHistory(dir.path, 10);
    await store.close();
    const after = (await stat(file)).size;
    assert.ok(after < 64 * 1024, `the file shrank from ${before} to ${after} bytes`);
    const kept = await onDisk(dir.path, (s) => Array.from({ length: 1000 }, (_, n) => `bulk-${n}`).filter((id) => s.sessions.get(id)).length);
    assert.equal(kept, 10);
  } finally {
    await dir.cleanup();
  }
});

test('a flush that prunes many sessions also compacts the file it writes', async () => {
  const dir = await scratchDir();
  const file = join(dir.path, 'voice-hub.db');
  try {
    const store = await openWithHistory(dir.path, 10);
    await saveBulk(store, 1000);
    await store.flush();
    const size = (await stat(file)).size;
    assert.ok(size < 64 * 1024, `${size} bytes on disk for 10 sessions`);
    await store.close();
  } finally {
    await dir.cleanup();
  }
});

// Ordered by end time, a wall-clock value: after the clock was set back (NTP), history kept the sessions
// dated in the future and deleted the newest, a session's final record the moment it was written (its
// stop then answered 404).
test('the history keeps the sessions that ended last, whatever their clock said', async () => {
  const dir = await scratchDir();
  try {
    let store = await openWithHistory(dir.path, 3);
    const future = (n: number) => ({ ...ended(n), id: `future-${n}`, endTime: `2025-05-01T10:0${n}:30.000Z` });
    for (const n of [1, 2, 3]) await store.sessions.save(future(n), true);
    await store.sessions.save(ended(1), true);
    assert.equal(store.sessions.get('ended-1')?.state, 'Failed', 'its own final record is kept');
    await store.sessions.save(ended(2));
    await store.sessions.save(ended(3));
    // Queued again after ended-3: it changed last.
    await store.sessions.save({ ...ended(2), endReason: 'changed last' });
    await store.flush();
    const all = ['future-1', 'future-2', 'future-3', 'ended-1', 'ended-2', 'ended-3'];
    assert.deepEqual(ids(store, all), ['ended-1', 'ended-2', 'ended-3']);
    await store.close();

    // The order is the file's: a reopen with a smaller limit keeps the last of them.
    store = await openWithHistory(dir.path, 1);
    assert.deepEqual(ids(store, all), ['ended-2']);
    await store.close();
  } finally {
    await dir.cleanup();
  }
});

test("a device's deletion the disk refuses gives its sessions back in their place in the history", async () => {
  // The records come back from the undo: put back as new rows, they counted as the last to end, and the
  // next prune kept them over sessions that ended after them.
  const dir = await scratchDir();
  const loss = folderLoss(dir.path);
  try {
    const store = await openWithHistory(dir.path, 2);
    await store.devices.insert(device('dev-x'));
    await store.devices.insert(device('dev-y'));
    await store.sessions.save({ ...ended(1), deviceId: 'dev-x' }, true);
    await store.sessions.save({ ...ended(2), deviceId: 'dev-y' }, true);
    await loss.lose();
    await assert.rejects(store.devices.delete('dev-x'), (e: unknown) => isDomainError(e) && e.code === 'unavailable');
    await loss.mend();
    await store.sessions.save({ ...ended(3), deviceId: 'dev-y' }, true);
    const all = ['ended-1', 'ended-2', 'ended-3'];
    assert.deepEqual(ids(store, all), ['ended-2', 'ended-3']);
    assert.deepEqual(await onDisk(dir.path, (s) => ids(s, all)), ['ended-2', 'ended-3']);
    await store.close();
  } finally {
    await loss.cleanup();
    await dir.cleanup();
  }
});

test('an undone save gives the record back under a new rowid when a flush took its old one meanwhile', async () => {
  // With no history kept the ended record is pruned at once: its old rowid, the highest, is free again,
  // and the flush that runs meanwhile gives it to another record, which the undo must not collide with.
  const dir = await scratchDir();
  const loss = folderLoss(dir.path);
  try {
    const store = await openWithHistory(dir.path, 0);
    await store.sessions.save(session('open-x'), true);
    await store.sessions.save(session('open-a'), true);
    await loss.lose();
    const ending = store.sessions.save({ ...session('open-a'), state: 'Stopped', endTime: '2024-05-01T10:05:00.000Z', endReason: 'stopped' }, true);
    await store.sessions.save(session('open-b'));
    const flushed = store.flush();
    await assert.rejects(ending, (e: unknown) => isDomainError(e) && e.code === 'unavailable');
    await assert.rejects(flushed, (e: unknown) => isDomainError(e) && e.code === 'unavailable');
    assert.deepEqual(['open-x', 'open-a', 'open-b'].map((id) => store.sessions.get(id)?.state), ['Active', 'Active', 'Active']);
    await loss.mend();
    await store.flush();
    assert.deepEqual(await onDisk(dir.path, (s) => ['open-x', 'open-a', 'open-b'].map((id) => s.sessions.get(id)?.state)), ['Active', 'Active', 'Active']);
    await store.close();
  } finally {
    await loss.cleanup();
    await dir.cleanup();
  }
});

test("an undone device deletion gives its sessions back without replacing a record a flush wrote meanwhile", async () => {
  const dir = await scratchDir();
  const loss = folderLoss(dir.path);
  try {
    const store = await openWithHistory(dir.path, 10);
    await store.devices.insert(device('dev-x'));
    await store.devices.insert(device('dev-y'));
    await store.sessions.save(session('y-1', { deviceId: 'dev-y' }), true);
    await store.sessions.save(session('x-1', { deviceId: 'dev-x' }), true);
    await loss.lose();
    const deleting = store.devices.delete('dev-x');
    await store.sessions.save(session('y-2', { deviceId: 'dev-y' }));
    const flushed = store.flush();
    await assert.rejects(deleting, (e: unknown) => isDomainError(e) && e.code === 'unavailable');
    await assert.rejects(flushed, (e: unknown) => isDomainError(e) && e.code === 'unavailable');
    assert.deepEqual(['y-1', 'x-1', 'y-2'].map((id) => store.sessions.get(id)?.deviceId), ['dev-y', 'dev-x', 'dev-y']);
    await loss.mend();
    await store.flush();
    assert.deepEqual(await onDisk(dir.path, (s) => ['y-1', 'x-1', 'y-2'].map((id) => s.sessions.get(id)?.deviceId)), ['dev-y', 'dev-x', 'dev-y']);
    await store.close();
  } finally {
    await loss.cleanup();
    await dir.cleanup();
  }
});
