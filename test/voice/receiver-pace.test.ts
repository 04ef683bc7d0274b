// ReceiverPace: reading upstream pauses while a receiver holds too much unsent, resumes once it drained,
// waits as long as it drains however slowly, and gives up on one that stopped draining (the hub's bound
// then ends that one).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ReceiverPace, RECEIVERS_HIGH_BYTES, RECEIVERS_LOW_BYTES } from '../../src/voice/receiver-pace.js';
import { waitUntil } from '../support/wait.js';

function rig(stallMs = 10_000) {
  const state = { unsent: 0, changes: [] as boolean[] };
  const pace: ReceiverPace = new ReceiverPace(() => state.unsent, () => state.changes.push(pace.paused), () => performance.now(), stallMs);
  return { state, pace };
}

describe('ReceiverPace', () => {
  it('pauses at the high mark and resumes under the low mark, not between', async (t) => {
    const { state, pace } = rig();
    t.after(() => pace.close());
    state.unsent = RECEIVERS_HIGH_BYTES - 1;
    pace.check();
    assert.deepEqual(state.changes, []);
    state.unsent = RECEIVERS_HIGH_BYTES;
    pace.check();
    assert.deepEqual(state.changes, [true]);
    state.unsent = RECEIVERS_LOW_BYTES + 1;
    await new Promise((resolve) => setTimeout(resolve, 100));
    assert.deepEqual(state.changes, [true], 'still above the low mark');
    state.unsent = RECEIVERS_LOW_BYTES;
    await waitUntil(() => state.changes.length === 2, 'the pace to resume');
    assert.deepEqual(state.changes, [true, false]);
  });

  it('gives up on a receiver that does not drain, and waits again only once it went under the low mark', async (t) => {
    const { state, pace } = rig(150);
    t.after(() => pace.close());
    state.unsent = RECEIVERS_HIGH_BYTES * 2;
    pace.check();
    await waitUntil(() => state.changes.length === 2, 'the pace to give up');
    assert.deepEqual(state.changes, [true, false]);
    pace.check();
    assert.equal(pace.paused, false, 'no new wait while the backlog stays high');
    state.unsent = 0;
    pace.check();
    state.unsent = RECEIVERS_HIGH_BYTES;
    pace.check();
    assert.equal(pace.paused, true, 'a new burst is waited for again');
  });

  it('waits for a receiver that drains slowly, past the stall time, and gives up once it stops', async (t) => {
    const { state, pace } = rig(150);
    t.after(() => pace.close());
    state.unsent = RECEIVERS_HIGH_BYTES * 2;
    pace.check();
    // 8 KiB every 60 ms (a stateful member acknowledging in steps): 600 ms, four times the stall time.
    for (let i = 0; i < 10; i++) {
      await new Promise((resolve) => setTimeout(resolve, 60));
      state.unsent -= 8 * 1024;
    }
    assert.deepEqual(state.changes, [true], 'still waiting: the receiver drains');
    const stoppedAt = performance.now();
    await waitUntil(() => state.changes.length === 2, 'the pace to give up');
    const waited = performance.now() - stoppedAt;
    assert.ok(waited >= 140 && waited < 1000, `gave up ${waited.toFixed(0)} ms after the last progress`);
    assert.deepEqual(state.changes, [true, false]);
  });
});
