// The queue read from a moving head (decoder threads' waiting jobs, stateful reconnect's frames): order,
// emptiness, indexing, and the compaction that reclaims consumed slots without losing or reordering what
// is still queued.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Fifo } from '../../src/fifo.js';

test('items come out in the order they went in, then undefined', () => {
  const q = new Fifo<number>();
  assert.equal(q.shift(), undefined);
  for (let i = 0; i < 5; i++) q.push(i);
  assert.equal(q.length, 5);
  assert.deepEqual([q.shift(), q.shift()], [0, 1]);
  q.push(5);
  assert.deepEqual(q.takeAll(), [2, 3, 4, 5]);
  assert.equal(q.length, 0);
  assert.equal(q.shift(), undefined);
});

test('interleaved pushes and shifts across many compactions keep order and count', () => {
  const q = new Fifo<number>();
  let next = 0;
  let expected = 0;
  // Grows to ~1,000 queued while consuming, so the head passes the compaction point again and again.
  for (let round = 0; round < 200; round++) {
    for (let i = 0; i < 60; i++) q.push(next++);
    for (let i = 0; i < 55; i++) assert.equal(q.shift(), expected++);
    assert.equal(q.length, next - expected);
  }
  // Indexing counts from the oldest item still queued, across the compactions.
  assert.equal(q.at(0), expected);
  assert.equal(q.at(q.length - 1), next - 1);
  assert.equal(q.at(q.length), undefined);
  while (q.length > 0) assert.equal(q.shift(), expected++);
  assert.equal(expected, next);
  q.push(1);
  q.clear();
  assert.equal(q.length, 0);
  assert.equal(q.shift(), undefined);
});

test('an item pushed while the queue is being drained one by one is not lost', () => {
  const q = new Fifo<string>();
  q.push('a');
  q.push('b');
  const seen: string[] = [];
  for (let item = q.shift(); item !== undefined; item = q.shift()) {
    seen.push(item);
    if (item === 'a') q.push('c');
  }
  assert.deepEqual(seen, ['a', 'b', 'c']);
});
