// The bounded outgoing queue: coalescing of retained state, dropping of the oldest events, each bounded
// apart (test/mqtt/deleted-while-down.test.ts runs the retained side against a broker).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { OutgoingQueue } from '../../src/mqtt/queue.js';

const r = (topic: string, payload = '') => ({ topic, payload, retain: true });
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
    const dropped = Array.from({ length: 5 }, (_, i) => q.push(t('event', String(i))));
    assert.deepEqual(dropped, [undefined, undefined, undefined, t('event', '0'), t('event', '1')], 'each dropped event returned, for the caller to report');
    assert.equal(q.size, 4);
    assert.equal(q.dropped, 2);
    assert.deepEqual(q.drain(), [r('state', '1'), t('event', '2'), t('event', '3'), t('event', '4')]);
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

describe('OutgoingQueue: retained messages and events bounded apart', () => {
  it('a full queue of events never pushes out a retained message', () => {
    const q = new OutgoingQueue(3);
    for (let i = 0; i < 10; i++) q.push(r(`clear/${i}`));
    for (let i = 0; i < 100; i++) q.push(t('event', String(i)));
    assert.equal(q.size, 13);
    assert.equal(q.retainedSize, 10);
    assert.equal(q.dropped, 97, 'the 97 oldest events');
    assert.deepEqual(q.drain(), [...Array.from({ length: 10 }, (_, i) => r(`clear/${i}`)), t('event', '97'), t('event', '98'), t('event', '99')]);
  });

  it('retained messages past the queue\'s event limit are all kept, one per topic, latest wins, in publish order', () => {
    const q = new OutgoingQueue(2);
    q.push(r('a', '1'));
    q.push(t('e', '1'));
    q.push(r('b', '1'));
    q.push(r('c', '1'));
    q.push(r('a', '2'));
    q.push(t('e', '2'));
    assert.deepEqual(q.drain(), [t('e', '1'), r('b', '1'), r('c', '1'), r('a', '2'), t('e', '2')]);
    assert.equal(q.dropped, 0);
  });

  it('past its own limit of distinct topics the oldest retained message goes, returned for the caller to report', () => {
    let limit = 2;
    const q = new OutgoingQueue(5, () => limit);
    assert.equal(q.push(r('a')), undefined);
    assert.equal(q.push(r('b')), undefined);
    assert.equal(q.push(r('b', 'again')), undefined, 'the same topic replaces, whatever the limit');
    assert.deepEqual(q.push(r('c')), r('a'));
    limit = 3; // read at each push: it may grow with what the caller knows
    assert.equal(q.push(r('d')), undefined);
    assert.equal(q.dropped, 1);
    assert.deepEqual(q.drain(), [r('b', 'again'), r('c'), r('d')]);
  });
});
