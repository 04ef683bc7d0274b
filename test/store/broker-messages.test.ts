// Messages the MQTT broker never got before a clean stop: kept durably, in order, until the next start takes them.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { onDisk, open } from './helpers.js';
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

test('take leaves none kept, on disk after the next flush; a later keep starts over', async () => {
  const dir = await scratchDir();
  try {
    let store = await open(dir.path);
    await store.brokerMessages.keep([event(1), event(2)]);
    await store.close();
    store = await open(dir.path);
    assert.deepEqual(store.brokerMessages.take(), [event(1), event(2)]);
    assert.deepEqual(store.brokerMessages.take(), []);
    // Until the flush the file still holds them: a crash now sends them once more, never loses them.
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
