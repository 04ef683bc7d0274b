// Sessions (durable and coalesced saves, open sessions at start-up) and settings categories.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { onDisk, open, session } from './helpers.js';
import { scratchDir } from '../support/tmp.js';

test('settings put and get, across reopen; a put replaces the category', async () => {
  const dir = await scratchDir();
  try {
    let store = await open(dir.path);
    assert.deepEqual(store.settings.get('voice'), {});
    await store.settings.put('voice', { enableVoice: false, wakeWords: ['hey hub'], audioSampleRate: 16000 });
    await store.settings.put('device', { maxDevices: 3 });
    await store.settings.put('device', { allowDeviceRegistration: false });
    await store.close();
    store = await open(dir.path);
    assert.deepEqual(store.settings.get('voice'), { enableVoice: false, wakeWords: ['hey hub'], audioSampleRate: 16000 });
    assert.deepEqual(store.settings.get('device'), { allowDeviceRegistration: false });
    await store.close();
  } finally {
    await dir.cleanup();
  }
});

test('a durable session save is on disk when it resolves; listOpen sees only Starting and Active', async () => {
  const dir = await scratchDir();
  try {
    const store = await open(dir.path);
    await store.sessions.save(session('s-1', { state: 'Starting' }), true);
    await store.sessions.save(session('s-2', { state: 'Active', startTime: '2024-05-01T10:00:01.000Z' }), true);
    await store.sessions.save(session('s-3', { state: 'Stopped', endTime: '2024-05-01T10:05:00.000Z', endReason: 'stopped' }), true);
    assert.deepEqual(await onDisk(dir.path, (s) => s.sessions.listOpen().map((x) => x.id)), ['s-1', 's-2']);
    assert.deepEqual(
      await onDisk(dir.path, (s) => s.sessions.get('s-3')),
      session('s-3', { state: 'Stopped', endTime: '2024-05-01T10:05:00.000Z', endReason: 'stopped' }),
    );
    await store.close();
  } finally {
    await dir.cleanup();
  }
});

test('coalesced session saves are read back at once and override older durable state after flush', async () => {
  const dir = await scratchDir();
  try {
    const store = await open(dir.path);
    await store.sessions.save(session('s-1'), true);
    for (let n = 1; n <= 10; n++) await store.sessions.save(session('s-1', { audioPacketsSent: n }));
    await store.sessions.save(session('s-2', { state: 'Failed', endReason: 'upstream closed' }));
    assert.equal(store.sessions.get('s-1')?.audioPacketsSent, 10);
    assert.deepEqual(store.sessions.listOpen().map((s) => s.id), ['s-1']);
    assert.equal(await onDisk(dir.path, (s) => s.sessions.get('s-1')?.audioPacketsSent), 0);

    // A durable save supersedes a queued older record: the flush must not bring the old one back.
    await store.sessions.save(session('s-1', { state: 'Stopped', audioPacketsSent: 11 }), true);
    await store.flush();
    assert.deepEqual(store.sessions.listOpen(), []);
    assert.equal(await onDisk(dir.path, (s) => s.sessions.get('s-1')?.state), 'Stopped');
    assert.equal(await onDisk(dir.path, (s) => s.sessions.get('s-2')?.endReason), 'upstream closed');
    await store.close();
  } finally {
    await dir.cleanup();
  }
});

test('saveLater: the record its source gives at the flush is written, once per flush however often it is called', async () => {
  const dir = await scratchDir();
  try {
    const store = await open(dir.path);
    const running = session('s-1', { state: 'Active' });
    await store.sessions.save(running, true);
    let reads = 0;
    const latest = () => {
      reads++;
      return { ...running, config: { ...running.config } };
    };
    for (let n = 1; n <= 50; n++) {
      running.audioPacketsSent = n;
      store.sessions.saveLater('s-1', latest);
    }
    assert.equal(reads, 0, 'nothing is copied per change');
    assert.equal(store.sessions.get('s-1')?.audioPacketsSent, 50, 'read back at once');
    running.audioPacketsSent = 51;
    await store.flush();
    assert.equal(await onDisk(dir.path, (s) => s.sessions.get('s-1')?.audioPacketsSent), 51);

    // The final record, written durably, supersedes the queued source.
    store.sessions.saveLater('s-1', latest);
    await store.sessions.save({ ...running, state: 'Stopped', endReason: 'stopped', audioPacketsSent: 52 }, true);
    running.audioPacketsSent = 99;
    await store.flush();
    assert.deepEqual(await onDisk(dir.path, (s) => [s.sessions.get('s-1')?.state, s.sessions.get('s-1')?.audioPacketsSent]), ['Stopped', 52]);
    await store.close();
  } finally {
    await dir.cleanup();
  }
});
