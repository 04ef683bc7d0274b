// Messages the MQTT broker never got before a clean stop: kept durably, in order, until a broker has them.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { device, onDisk, open } from './helpers.js';
import { scratchDir } from '../support/tmp.js';

const event = (n: number) => ({ topic: `voice-hub/sessions/s-${n}/event`, payload: `{"event":"ended","n":${n}}`, retain: false });
const clearing = { topic: 'voice-hub/devices/gone/state', payload: '', retain: true };

test('kept messages are on disk when keep resolves, and come back in order, retain flag and empty payload included', async () => {
  const dir = await scratchDir();
  try {
    const store = await open(dir.path);
    assert.deepEqual(store.brokerMessages.take(), []);
    await store.brokerMessages.keep([event(1), clearing]);
    await store.brokerMessages.keep([event(2)]);
    assert.deepEqual(await onDisk(dir.path, (s) => s.brokerMessages.take()), [event(1), clearing, event(2)]);
    await store.close();
  } finally {
    await dir.cleanup();
  }
});

test('taken messages stay on disk, also through flushes, until delivered; a later keep starts over', async () => {
  const dir = await scratchDir();
  try {
    let store = await open(dir.path);
    await store.brokerMessages.keep([event(1), event(2)]);
    await store.close();
    store = await open(dir.path);
    assert.deepEqual(store.brokerMessages.take(), [event(1), event(2)]);
    assert.deepEqual(store.brokerMessages.take(), []);
    // Until the broker has them, a crash (even after a flush) sends them once more, never loses them.
    await store.devices.insert(device('dev-a'));
    await store.flush();
    assert.deepEqual(await onDisk(dir.path, (s) => s.brokerMessages.take()), [event(1), event(2)]);
    store.brokerMessages.delivered();
    // Not a write of its own: on disk at the next flush.
    assert.equal(await onDisk(dir.path, (s) => s.brokerMessages.take().length), 2);
    await store.flush();
    assert.deepEqual(await onDisk(dir.path, (s) => s.brokerMessages.take()), []);
    await store.brokerMessages.keep([event(3)]);
    await store.close();
    store = await open(dir.path);
    assert.deepEqual(store.brokerMessages.take(), [event(3)]);
    await store.close();
  } finally {
    await dir.cleanup();
  }
});

test('a keep after a take replaces what was taken: the undelivered come back once, after what was kept before', async () => {
  const dir = await scratchDir();
  try {
    let store = await open(dir.path);
    await store.brokerMessages.keep([event(1), event(2)]);
    await store.close();
    store = await open(dir.path);
    assert.deepEqual(store.brokerMessages.take(), [event(1), event(2)]);
    // The stop drains the publisher: event 1 was delivered, event 2 was not, event 4 is the stop's own.
    await store.brokerMessages.keep([event(2), event(4)]);
    assert.deepEqual(store.brokerMessages.take(), [event(2), event(4)]);
    // Nothing left undelivered at the next stop: what was taken is kept no more.
    await store.brokerMessages.keep([]);
    await store.close();
    assert.deepEqual(await onDisk(dir.path, (s) => s.brokerMessages.take()), []);
  } finally {
    await dir.cleanup();
  }
});

test('a closing store refuses to keep or take', async () => {
  const dir = await scratchDir();
  try {
    const store = await open(dir.path);
    const closing = store.close();
    await assert.rejects(store.brokerMessages.keep([event(1)]), { name: 'DomainError', message: 'storage is closed' });
    assert.throws(() => store.brokerMessages.take(), { name: 'DomainError', message: 'storage is closed' });
    await closing;
  } finally {
    await dir.cleanup();
  }
});
