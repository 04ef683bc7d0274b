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
    assert.equal(budget.next(60_999), undefined);
    assert.deepEqual(budget.next(61_000), { attempt: 3, delayMs: 400 }, 'the failure at 1000 has left the window');
    assert.deepEqual(budget.next(63_000), { attempt: 1, delayMs: 125 });
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
