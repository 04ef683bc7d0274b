// ReconnectBudget: failures over a sliding window, doubling back-off with jitter, a cap, stability.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ReconnectBudget, type ReconnectPolicy } from '../../src/upstream/reconnect-budget.js';

const POLICY: ReconnectPolicy = { attempts: 3, windowMs: 60_000, initialDelayMs: 250, maxDelayMs: 800, stableAfterMs: 10_000 };

describe('ReconnectBudget', () => {
  it('numbers attempts by the failures in the window and doubles the back-off up to the cap', () => {
    const max = new ReconnectBudget(POLICY, () => 0.999_999);
    const min = new ReconnectBudget(POLICY, () => 0);
    const rows: [attempt: number, low: number, high: number][] = [[1, 125, 250], [2, 250, 500], [3, 400, 800]];
    for (const [attempt, low, high] of rows) {
      assert.deepEqual(min.next(0), { attempt, delayMs: low });
      assert.deepEqual(max.next(0), { attempt, delayMs: high });
      min.fail(0);
      max.fail(0);
    }
    assert.equal(min.next(0), undefined, 'three failures within the window spend the budget');
    assert.equal(max.failuresAt(0), 3);
  });

  it('forgets failures older than the window', () => {
    const budget = new ReconnectBudget(POLICY, () => 0);
    budget.fail(1000);
    budget.fail(2000);
    budget.fail(3000);
    // A connection proved stable after them: they are another outage's, counted by the window alone.
    budget.outageOver();
    assert.equal(budget.next(60_999), undefined);
    assert.deepEqual(budget.next(61_000), { attempt: 3, delayMs: 400 }, 'the failure at 1000 has left the window');
    assert.deepEqual(budget.next(63_000), { attempt: 1, delayMs: 125 });
  });

  // Its attempts are spaced by the back-off and the connect timeout: a ConnectTimeout of 30 s, or 20
  // attempts at the 10 s cap, spread them wider than a 1 min window, which then never held `attempts`
  // of them, and a dead upstream was retried for ever with "attempt 3 of 3" again and again.
  it('the failures of one outage count however far apart they are; after outageOver only the window counts', () => {
    const budget = new ReconnectBudget(POLICY, () => 0);
    budget.fail(0);
    budget.fail(40_000);
    assert.deepEqual(budget.next(80_000), { attempt: 3, delayMs: 400 }, 'the failure at 0 has left the window, not the outage');
    assert.equal(budget.windowHolds(80_000), false);
    budget.fail(80_000);
    assert.equal(budget.failuresAt(80_000), 3);
    assert.equal(budget.next(80_000), undefined, 'three failures in a row spend the budget');
    assert.equal(budget.windowHolds(80_000), false, 'the window alone holds two of them');
    budget.outageOver();
    assert.deepEqual(budget.next(80_000), { attempt: 3, delayMs: 400 }, 'the window still holds two');
    assert.deepEqual(budget.next(140_000), { attempt: 1, delayMs: 125 });
  });

  it('with 0 attempts there is never a next attempt', () => {
    assert.equal(new ReconnectBudget({ ...POLICY, attempts: 0 }).next(0), undefined);
  });

  it('a connection proves stable once it has been up for stableAfterMs', () => {
    const budget = new ReconnectBudget(POLICY);
    assert.equal(budget.isStable(9_999), false);
    assert.equal(budget.isStable(10_000), true);
  });
});
