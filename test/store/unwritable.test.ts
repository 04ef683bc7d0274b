// A durable write whose persist fails is refused as 'unavailable' and undone in memory; writes work
// again once the data dir is writable. Tests run as root here, where chmod does not stop writes, so
// the obstacles are ones root cannot write through either: the data dir replaced by a plain file
// (ENOTDIR, like a vanished mount), or a directory squatting on the temp file's name (EISDIR).
// The chmod 0555 variant runs when not root.
import assert from 'node:assert/strict';
import { chmod, mkdir, rmdir } from 'node:fs/promises';
import { test } from 'node:test';
import { isDomainError } from '../../src/errors.js';
import { device, onDisk, open, session, folderLoss } from './helpers.js';
import { openStore } from '../../src/store/index.js';
import { createLogger } from '../../src/log/logger.js';
import { scratchDir } from '../support/tmp.js';

const unavailable = (e: unknown): boolean => {
  assert.ok(isDomainError(e), String(e));
  assert.equal(e.code, 'unavailable');
  assert.match(e.message, /^storage is not writable: /);
  return true;
};

test('with the data dir gone, writes are refused and undone; they work again once it is back', async () => {
  const dir = await scratchDir();
  const loss = folderLoss(dir.path);
  try {
    const store = await open(dir.path);
    await store.devices.insert(device('dev-a', { tokenGeneration: 2 }));
    await store.settings.put('voice', { enableVoice: true });
    await store.check();

    await loss.lose();

    await assert.rejects(store.devices.insert(device('dev-b', { tokenGeneration: 7 })), unavailable);
    assert.equal(store.devices.get('dev-b'), undefined);
    assert.equal(store.devices.count(), 1);

    await assert.rejects(store.devices.delete('dev-a'), unavailable);
    assert.equal(store.devices.get('dev-a')?.tokenGeneration, 2);

    await assert.rejects(store.settings.put('voice', { enableVoice: false }), unavailable);
    assert.deepEqual(store.settings.get('voice'), { enableVoice: true });

    // Writes that queued behind the failing persist are undone and refused too.
    const burst = ['dev-c', 'dev-d', 'dev-e'].map((id) => store.devices.insert(device(id)));
    const results = await Promise.allSettled(burst);
    assert.deepEqual(results.map((r) => r.status), ['rejected', 'rejected', 'rejected']);
    assert.equal(store.devices.count(), 1);

    await assert.rejects(store.check(), new RegExp(`data dir ${dir.path} is not writable: ENOTDIR`));

    await loss.mend();
    await store.check();
    await store.devices.insert(device('dev-b'));
    assert.deepEqual(await onDisk(dir.path, (s) => s.devices.list().map((d) => d.id)), ['dev-a', 'dev-b']);
    await store.close();
  } finally {
    await loss.cleanup();
    await dir.cleanup();
  }
});

test('a failed timed flush keeps telemetry in memory and writes it once the disk is back', async () => {
  const dir = await scratchDir();
  const squatter = `${dir.path}/voice-hub.db.tmp-${process.pid}`;
  try {
    const store = await open(dir.path);
    await store.devices.insert(device('dev-a'));
    await mkdir(squatter);
    store.devices.updateTelemetry('dev-a', { ...device('x'), status: 'busy' });
    await assert.rejects(store.flush(), unavailable);
    assert.equal(store.devices.get('dev-a')?.status, 'busy');
    await assert.rejects(store.devices.insert(device('dev-b')), unavailable);
    assert.equal(store.devices.get('dev-b'), undefined);

    await rmdir(squatter);
    await store.flush();
    assert.equal(await onDisk(dir.path, (s) => s.devices.get('dev-a')?.status), 'busy');
    await store.close();
  } finally {
    await rmdir(squatter).catch(() => {});
    await dir.cleanup();
  }
});

test('a read-only data dir (chmod 0555) refuses writes and recovers', { skip: process.getuid?.() === 0 ? 'root ignores directory permissions' : false }, async () => {
  const dir = await scratchDir();
  try {
    const store = await open(dir.path);
    await chmod(dir.path, 0o555);
    await assert.rejects(store.devices.insert(device('dev-a')), unavailable);
    assert.equal(store.devices.count(), 0);
    await assert.rejects(store.check(), /is not writable: EACCES/);
    await chmod(dir.path, 0o750);
    await store.devices.insert(device('dev-a'));
    await store.close();
  } finally {
    await chmod(dir.path, 0o750).catch(() => {});
    await dir.cleanup();
  }
});

test('a first start in a data dir that cannot be written fails with unavailable', async () => {
  const dir = await scratchDir();
  try {
    await mkdir(`${dir.path}/voice-hub.db.tmp-${process.pid}`);
    await assert.rejects(open(dir.path), unavailable);
  } finally {
    await dir.cleanup();
  }
});

// The log said a write failed and never that writing worked again (only a timed flush's recovery was
// logged): a technician reading the journal saw "failed" as its last word on the file.
test('a failed write is logged once it works again, whatever write it was', async () => {
  const dir = await scratchDir();
  const squatter = `${dir.path}/voice-hub.db.tmp-${process.pid}`;
  const lines: string[] = [];
  try {
    const logger = createLogger({ levels: { Default: 'Information' }, write: (line: string) => lines.push(line), journald: false, timestamps: false });
    const store = await openStore({ dataDir: dir.path, flushIntervalMs: 60_000, logger });
    await store.devices.insert(device('dev-a'));
    await mkdir(squatter);
    await assert.rejects(store.devices.insert(device('dev-b')), unavailable);
    await rmdir(squatter);
    await store.devices.insert(device('dev-b'));
    await store.devices.insert(device('dev-c'));
    const file = `${dir.path}/voice-hub.db`;
    assert.deepEqual(lines.filter((l) => l.includes(file)).map((l) => l.replace(/^.*?(writing)/, '$1').replace(/: storage is not writable: .*$/, '')), [
      `writing ${file} failed; 1 unsaved change(s) reverted`,
      `writing ${file} works again`,
    ]);
    await store.close();
  } finally {
    await dir.cleanup();
  }
});

// A deletion dropped the device's queued telemetry before its write, and its undo put back the row
// but not the telemetry: a status update answered 200 was lost to a DELETE answered 503.
test('a deletion that cannot be written keeps the telemetry queued before it', async () => {
  const dir = await scratchDir();
  const squatter = `${dir.path}/voice-hub.db.tmp-${process.pid}`;
  try {
    const store = await open(dir.path);
    await store.devices.insert(device('dev-a'));
    store.devices.updateTelemetry('dev-a', { ...device('x'), status: 'acked', batteryLevel: 55 });
    await mkdir(squatter);
    await assert.rejects(store.devices.delete('dev-a'), unavailable);
    assert.deepEqual([store.devices.get('dev-a')?.status, store.devices.get('dev-a')?.batteryLevel], ['acked', 55]);

    await rmdir(squatter);
    await store.flush();
    assert.deepEqual(await onDisk(dir.path, (s) => [s.devices.get('dev-a')?.status, s.devices.get('dev-a')?.batteryLevel]), ['acked', 55]);
    await store.close();
  } finally {
    await rmdir(squatter).catch(() => {});
    await dir.cleanup();
  }
});

// The same for a session: a final record that cannot be written does not drop the record queued before it.
test('a durable session write that cannot be written keeps the record queued before it', async () => {
  const dir = await scratchDir();
  const squatter = `${dir.path}/voice-hub.db.tmp-${process.pid}`;
  try {
    const store = await open(dir.path);
    await store.sessions.save(session('s-1'), true);
    await store.sessions.save(session('s-1', { audioPacketsSent: 42 }));
    await mkdir(squatter);
    await assert.rejects(store.sessions.save(session('s-1', { state: 'Stopped', endTime: '2024-05-01T10:05:00.000Z', endReason: 'x' }), true), unavailable);
    assert.equal(store.sessions.get('s-1')?.audioPacketsSent, 42);

    await rmdir(squatter);
    await store.flush();
    assert.equal(await onDisk(dir.path, (s) => s.sessions.get('s-1')?.audioPacketsSent), 42);
    await store.close();
  } finally {
    await rmdir(squatter).catch(() => {});
    await dir.cleanup();
  }
});

/** A store whose writes fail (a folder squats its temporary file's name) until `free` removes it; its log lines. */
async function squattedStore(run: (store: Awaited<ReturnType<typeof openStore>>, lines: string[], free: () => Promise<void>, file: string, squatter: string) => Promise<void>): Promise<void> {
  const dir = await scratchDir();
  const squatter = `${dir.path}/voice-hub.db.tmp-${process.pid}`;
  const lines: string[] = [];
  try {
    const logger = createLogger({ levels: { Default: 'Information' }, write: (line: string) => lines.push(line), journald: false, timestamps: false });
    const store = await openStore({ dataDir: dir.path, flushIntervalMs: 60_000, logger });
    await mkdir(squatter);
    await run(store, lines, () => rmdir(squatter), `${dir.path}/voice-hub.db`, squatter);
  } finally {
    await rmdir(squatter).catch(() => {});
    await dir.cleanup();
  }
}

// One error line per failed write: on a full disk every registration fails, and a client needs no
// credentials to register, so it wrote 263 lines for 300 requests.
test('failed writes are logged 5 a minute, the rest summed up in one line before writing works again', () =>
  squattedStore(async (store, lines, free, file, squatter) => {
    for (let i = 0; i < 30; i++) await assert.rejects(store.devices.insert(device(`dev-${i}`)), unavailable);
    await free();
    await store.devices.insert(device('dev-ok'));
    const failed = `writing ${file} failed; 1 unsaved change(s) reverted: storage is not writable: EISDIR: illegal operation on a directory, open '${squatter}'`;
    assert.deepEqual(lines, [
      ...Array<string>(5).fill(`fail: App: ${failed}`),
      `fail: App: 25 more write(s) of ${file} failed in the last 60 s, each change reverted and refused; the last: ${failed}`,
      `info: App: writing ${file} works again`,
    ]);
    await store.close();
  }));

test('failed writes left out are summed up at close', () =>
  squattedStore(async (store, lines) => {
    for (let i = 0; i < 7; i++) await assert.rejects(store.devices.insert(device(`dev-${i}`)), unavailable);
    // Memory has been changed and changed back since the last write: close tries once more, and fails.
    await assert.rejects(store.close(), unavailable);
    assert.equal(lines.length, 6, lines.join('\n'));
    assert.match(lines[5]!, /^fail: App: 2 more write\(s\) of .* failed in the last 60 s, each change reverted and refused; the last: writing /);
  }));

// A device's deletion takes its sessions' records with it (a device registered again under its id is
// another device); one that cannot be written gives them back with the device, stored and queued alike.
test('a deletion removes the device\'s session records with it, and one that cannot be written keeps them', async () => {
  const dir = await scratchDir();
  const squatter = `${dir.path}/voice-hub.db.tmp-${process.pid}`;
  try {
    const store = await open(dir.path);
    await store.devices.insert(device('dev-1'));
    await store.devices.insert(device('dev-2'));
    await store.sessions.save(session('s-ended', { state: 'Stopped', endTime: '2024-05-01T10:05:00.000Z', endReason: 'x' }), true);
    await store.sessions.save(session('s-open'), true);
    await store.sessions.save(session('s-open', { audioPacketsSent: 42 }));
    await store.sessions.save(session('s-other', { deviceId: 'dev-2' }), true);
    const kept = (s: typeof store) => ['s-ended', 's-open', 's-other'].map((id) => s.sessions.get(id)?.audioPacketsSent ?? 'none');

    await mkdir(squatter);
    await assert.rejects(store.devices.delete('dev-1'), unavailable);
    assert.deepEqual(kept(store), [0, 42, 0]);
    await rmdir(squatter);

    assert.equal(await store.devices.delete('dev-1'), true);
    assert.deepEqual(kept(store), ['none', 'none', 0]);
    assert.deepEqual(store.sessions.listOpen().map((s) => s.id), ['s-other']);
    await store.flush();
    assert.deepEqual(await onDisk(dir.path, kept), ['none', 'none', 0]);
    await store.close();
  } finally {
    await rmdir(squatter).catch(() => {});
    await dir.cleanup();
  }
});
