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
