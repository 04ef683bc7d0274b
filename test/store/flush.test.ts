// Coalesced telemetry: kept in memory, on disk only after flush, close or the flush interval; no
// write at all when nothing changed.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { DeviceTelemetry } from '../../src/store/types.js';
import { device, onDisk, open, session } from './helpers.js';
import { scratchDir } from '../support/tmp.js';

const telemetry = (status: string, batteryLevel: number | null): DeviceTelemetry => ({
  status,
  lastSeen: '2024-05-01T11:00:00.000Z',
  batteryLevel,
  temperature: 40.5,
  memoryUsage: null,
  cpuUsage: 3,
});

test('telemetry is visible at once, on disk only after flush, and coalesced to the latest value', async () => {
  const dir = await scratchDir();
  try {
    const store = await open(dir.path);
    await store.devices.insert(device('dev-1'));
    const persists = store.persistCount;
    for (let i = 0; i <= 20; i++) store.devices.updateTelemetry('dev-1', telemetry(`s${i}`, i));
    assert.equal(store.devices.get('dev-1')?.status, 's20');
    assert.equal(store.devices.list()[0]?.batteryLevel, 20);
    assert.equal(store.persistCount, persists);
    assert.equal(await onDisk(dir.path, (s) => s.devices.get('dev-1')?.status), 'online');

    await store.flush();
    assert.equal(store.persistCount, persists + 1);
    assert.deepEqual(await onDisk(dir.path, (s) => s.devices.get('dev-1')), {
      ...device('dev-1'),
      ...telemetry('s20', 20),
    });
    await store.close();
  } finally {
    await dir.cleanup();
  }
});

test('close writes pending telemetry and sessions', async () => {
  const dir = await scratchDir();
  try {
    const store = await open(dir.path);
    await store.devices.insert(device('dev-1'));
    store.devices.updateTelemetry('dev-1', telemetry('busy', null));
    await store.sessions.save(session('s-1', { audioPacketsSent: 7 }));
    assert.equal(await onDisk(dir.path, (s) => s.sessions.get('s-1')), undefined);
    await store.close();
    const reopened = await open(dir.path);
    assert.equal(reopened.devices.get('dev-1')?.status, 'busy');
    assert.equal(reopened.devices.get('dev-1')?.batteryLevel, null);
    assert.equal(reopened.sessions.get('s-1')?.audioPacketsSent, 7);
    await reopened.close();
  } finally {
    await dir.cleanup();
  }
});

test('nothing is written when nothing changed', async () => {
  const dir = await scratchDir();
  try {
    const store = await open(dir.path);
    await store.devices.insert(device('dev-1'));
    const bytes = store.bytesWritten;
    const persists = store.persistCount;
    assert.ok(bytes > 0);
    await store.flush();
    await store.flush();
    store.devices.updateTelemetry('unknown', telemetry('x', 1)); // ignored: no such device
    await store.flush();
    await store.close();
    assert.equal(store.bytesWritten, bytes);
    assert.equal(store.persistCount, persists);

    const reopened = await open(dir.path);
    await reopened.flush();
    await reopened.close();
    assert.equal(reopened.bytesWritten, 0);
  } finally {
    await dir.cleanup();
  }
});

test('the flush timer writes telemetry without an explicit flush', async () => {
  const dir = await scratchDir();
  try {
    const store = await open(dir.path, 20);
    await store.devices.insert(device('dev-1'));
    const persists = store.persistCount;
    store.devices.updateTelemetry('dev-1', telemetry('timed', 1));
    const deadline = Date.now() + 5000;
    while (store.persistCount === persists && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    assert.equal(store.persistCount, persists + 1);
    assert.equal(await onDisk(dir.path, (s) => s.devices.get('dev-1')?.status), 'timed');
    await store.close();
    assert.equal(store.persistCount, persists + 1); // nothing left for close
  } finally {
    await dir.cleanup();
  }
});

test('telemetry queued for a deleted device does not reach a device re-registered under its id', async () => {
  const dir = await scratchDir();
  try {
    const store = await open(dir.path);
    await store.devices.insert(device('dev-1'));
    store.devices.updateTelemetry('dev-1', telemetry('stale', 5));
    await store.devices.delete('dev-1');
    await store.devices.insert(device('dev-1', { tokenGeneration: 2 }));
    await store.flush();
    assert.equal(store.devices.get('dev-1')?.status, 'online');
    await store.close();
  } finally {
    await dir.cleanup();
  }
});
