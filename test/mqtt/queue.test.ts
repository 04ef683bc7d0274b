// The bounded outgoing queue: coalescing of retained state, dropping of the oldest events, each bounded
// apart (test/mqtt/deleted-while-down.test.ts has more of the retained side).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { OutgoingQueue } from '../../src/mqtt/queue.js';

const r = (topic: string, payload: string) => ({ topic, payload, retain: true });
const t = (topic: string, payload: string) => ({ topic, payload, retain: false });

describe('OutgoingQueue', () => {
  it('keeps publish order', () => {
    const q = new OutgoingQueue(10);
    q.push(r('a', '1'));
    q.push(t('e', '1'));
    q.push(r('b', '1'));
    assert.deepEqual(q.drain().map((m) => m.topic), ['a', 'e', 'b']);
    assert.equal(q.size, 0);
  });

  it('keeps only the latest retained message per topic, at its latest position', () => {
    const q = new OutgoingQueue(10);
    q.push(r('a', '1'));
    q.push(r('b', '1'));
    q.push(r('a', '2'));
    q.push(r('a', ''));
    assert.deepEqual(q.drain(), [r('b', '1'), r('a', '')]);
    assert.equal(q.dropped, 0, 'coalescing is not dropping');
  });

  it('never keeps more than its capacity of events and drops the oldest first; retained messages do not count', () => {
    const q = new OutgoingQueue(3);
    q.push(r('state', '1'));
    for (let i = 0; i < 5; i++) q.push(t('event', String(i)));
    assert.equal(q.size, 4);
    assert.equal(q.dropped, 2);
    assert.deepEqual(q.drain(), [r('state', '1'), t('event', '2'), t('event', '3'), t('event', '4')]);
  });

  it('keeps retained messages past its capacity of events: they are bounded by their own limit', () => {
    const q = new OutgoingQueue(2, () => 3);
    for (const topic of ['a', 'b', 'c']) q.push(r(topic, '1'));
    assert.equal(q.dropped, 0);
    q.push(r('d', '1'));
    assert.deepEqual(q.drain().map((m) => m.topic), ['b', 'c', 'd']);
    assert.equal(q.dropped, 1);
  });

  it('stays bounded under 100,000 pushes', () => {
    const q = new OutgoingQueue(1000);
    for (let i = 0; i < 100_000; i++) q.push(i % 2 ? t('e', String(i)) : r(`s/${(i / 2) % 50}`, String(i)));
    // 50 retained topics coalesce; of the 50,000 events the newest 1,000 are kept.
    assert.equal(q.size, 1050);
    assert.equal(q.dropped, 50_000 - 1000);
    const kept = q.drain();
    assert.equal(kept.filter((m) => m.retain).length, 50);
    assert.equal(kept.at(-1)!.payload, '99999');
  });

  it('shift takes the oldest; discardRetained removes a superseded state without counting a drop', () => {
    const q = new OutgoingQueue(2);
    q.push(t('e', '1'));
    q.push(r('s', '1'));
    q.discardRetained('s');
    q.discardRetained('not-queued');
    assert.equal(q.size, 1);
    assert.deepEqual(q.shift(), t('e', '1'));
    assert.equal(q.shift(), undefined);
    q.push(t('e', '2'));
    q.push(t('e', '3'));
    q.push(t('e', '4')); // after shifts the bookkeeping of the oldest event must still be right
    assert.deepEqual(q.drain(), [t('e', '3'), t('e', '4')]);
    assert.equal(q.dropped, 1);
  });

  it('refuses a capacity below one', () => {
    assert.throws(() => new OutgoingQueue(0), RangeError);
  });
});
