// The gate in front of an upstream link's session (read-gate.ts): what a paused socket still hands on is
// held and goes on in order at resume, a frame that pauses again during that stops it there, the cap
// keeps order while bounding what is held, and a closed gate delivers nothing more.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { HELD_FRAMES_MAX, ReadGate } from '../../src/upstream/read-gate.js';

function gate(max?: number, onDeliver: (n: number) => void = () => {}) {
  const delivered: number[] = [];
  const g: ReadGate<number> = new ReadGate<number>((n) => {
    delivered.push(n);
    onDeliver(n);
  }, max);
  return { g, delivered };
}

test('open: each frame goes on at once; paused: held until resume, then in order', () => {
  const { g, delivered } = gate();
  g.offer(1, false);
  assert.deepEqual(delivered, [1]);
  g.pause();
  for (let i = 2; i <= 5; i++) g.offer(i, false);
  assert.deepEqual(delivered, [1]);
  assert.equal(g.heldFrames, 4);
  assert.equal(g.resume(), true, 'nothing left: the socket may read');
  assert.deepEqual(delivered, [1, 2, 3, 4, 5]);
  g.offer(6, false);
  assert.deepEqual(delivered, [1, 2, 3, 4, 5, 6]);
});

test('a held frame that pauses again stops the hand-over there; the rest waits, and new frames queue behind it', () => {
  const delivered: number[] = [];
  const g: ReadGate<number> = new ReadGate<number>((n) => {
    delivered.push(n);
    if (n === 3) g.pause();
    // As the session does when its backlog clears within a delivery: ignored until the hand-over ends.
    if (n === 2) {
      g.pause();
      assert.equal(g.resume(), false, 'a resume within the hand-over does not open the socket');
    }
  });
  g.pause();
  for (let i = 1; i <= 6; i++) g.offer(i, false);
  assert.equal(g.resume(), false, 'paused again by frame 3: the socket stays paused');
  assert.deepEqual(delivered, [1, 2, 3]);
  g.offer(7, false);
  assert.deepEqual(delivered, [1, 2, 3], 'held behind 4-6');
  assert.equal(g.resume(), true);
  assert.deepEqual(delivered, [1, 2, 3, 4, 5, 6, 7]);
});

test('past the cap the oldest held frame goes on: order kept, at most the cap held', () => {
  const { g, delivered } = gate(3);
  g.pause();
  for (let i = 1; i <= 5; i++) g.offer(i, i === 5);
  assert.deepEqual(delivered, [1, 2]);
  assert.equal(g.heldFrames, 3);
  g.resume();
  assert.deepEqual(delivered, [1, 2, 3, 4, 5]);
  assert.ok(HELD_FRAMES_MAX >= 220, 'a 64 KiB read of 20 ms audio frames fits under the default cap');
});

test('a closed gate lets go of what it held and of everything after', () => {
  const { g, delivered } = gate();
  g.pause();
  g.offer(1, false);
  g.close();
  g.offer(2, false);
  assert.equal(g.resume(), false);
  g.offer(3, false);
  assert.deepEqual(delivered, []);
  assert.equal(g.heldFrames, 0);
});
