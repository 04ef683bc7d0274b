// ReceiverPace: reading upstream pauses while a receiver holds too much unsent, resumes once every one
// drained, waits as long as they drain however slowly, and gives up on a receiver that stopped draining
// (the hub's bound then ends that one) while still pacing the others by their own backlog.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ReceiverPace, RECEIVERS_HIGH_BYTES, RECEIVERS_LOW_BYTES } from '../../src/voice/receiver-pace.js';
import { waitUntil } from '../support/wait.js';

function rig(stallMs = 10_000) {
  const state = { unsent: new Map<string, number>([['a', 0]]), changes: [] as boolean[] };
  const pace: ReceiverPace = new ReceiverPace(
    (visit) => { for (const [receiver, unsent] of state.unsent) visit(receiver, unsent); },
    () => state.changes.push(pace.paused),
    () => performance.now(),
    stallMs,
  );
  return { state, pace };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('ReceiverPace', () => {
  it('pauses at the high mark and resumes under the low mark, not between', async (t) => {
    const { state, pace } = rig();
    t.after(() => pace.close());
    state.unsent.set('a', RECEIVERS_HIGH_BYTES - 1);
    pace.check();
    assert.deepEqual(state.changes, []);
    state.unsent.set('a', RECEIVERS_HIGH_BYTES);
    pace.check();
    assert.deepEqual(state.changes, [true]);
    state.unsent.set('a', RECEIVERS_LOW_BYTES + 1);
    await sleep(100);
    assert.deepEqual(state.changes, [true], 'still above the low mark');
    state.unsent.set('a', RECEIVERS_LOW_BYTES);
    await waitUntil(() => state.changes.length === 2, 'the pace to resume');
    assert.deepEqual(state.changes, [true, false]);
  });

  it('gives up on a receiver that does not drain, and waits for it again only once it went under the low mark', async (t) => {
    const { state, pace } = rig(150);
    t.after(() => pace.close());
    state.unsent.set('a', RECEIVERS_HIGH_BYTES * 2);
    pace.check();
    await waitUntil(() => state.changes.length === 2, 'the pace to give up');
    assert.deepEqual(state.changes, [true, false]);
    pace.check();
    assert.equal(pace.paused, false, 'no new wait while the backlog stays high');
    state.unsent.set('a', 0);
    pace.check();
    state.unsent.set('a', RECEIVERS_HIGH_BYTES);
    pace.check();
    assert.equal(pace.paused, true, 'a new burst is waited for again');
  });

  it('waits for a receiver that drains slowly, past the stall time, and gives up once it stops', async (t) => {
    const { state, pace } = rig(150);
    t.after(() => pace.close());
    state.unsent.set('a', RECEIVERS_HIGH_BYTES * 2);
    pace.check();
    // 8 KiB every 60 ms (a stateful member acknowledging in steps): 600 ms, four times the stall time.
    for (let i = 0; i < 10; i++) {
      await sleep(60);
      state.unsent.set('a', state.unsent.get('a')! - 8 * 1024);
    }
    assert.deepEqual(state.changes, [true], 'still waiting: the receiver drains');
    const stoppedAt = performance.now();
    await waitUntil(() => state.changes.length === 2, 'the pace to give up');
    const waited = performance.now() - stoppedAt;
    assert.ok(waited >= 140 && waited < 1000, `gave up ${waited.toFixed(0)} ms after the last progress`);
    assert.deepEqual(state.changes, [true, false]);
  });

  it('a receiver given up on is not waited for, but the others still are, each by its own backlog', async (t) => {
    const { state, pace } = rig(150);
    t.after(() => pace.close());
    state.unsent.set('dead', RECEIVERS_HIGH_BYTES * 2);
    state.unsent.set('slow', RECEIVERS_HIGH_BYTES);
    pace.check();
    assert.deepEqual(state.changes, [true]);
    // 'slow' drains in steps; 'dead' never does.
    for (let i = 0; i < 8; i++) {
      await sleep(60);
      state.unsent.set('slow', state.unsent.get('slow')! - 4 * 1024);
    }
    assert.deepEqual(state.changes, [true], 'waiting for slow, dead given up meanwhile');
    state.unsent.set('slow', RECEIVERS_LOW_BYTES);
    await waitUntil(() => state.changes.length === 2, 'the pace to resume once slow drained');
    // Reading on: dead grows (towards the hub's bound), slow gets a new burst: paused for slow again.
    state.unsent.set('dead', RECEIVERS_HIGH_BYTES * 3);
    pace.check();
    assert.equal(pace.paused, false, 'dead alone is not waited for');
    state.unsent.set('slow', RECEIVERS_HIGH_BYTES);
    pace.check();
    assert.equal(pace.paused, true, 'slow is');
    // dead left the session (ended as too slow): forgotten; a new receiver of that name is waited for.
    state.unsent.delete('dead');
    state.unsent.set('slow', 0);
    await waitUntil(() => !pace.paused, 'the pace to resume');
    pace.check();
    state.unsent.set('dead', RECEIVERS_HIGH_BYTES);
    pace.check();
    assert.equal(pace.paused, true);
  });
});
