// The drop schedule of `voice-hub simulate --drop-every` (src/cli/simulate.ts): one timer at a time, however
// many drops the run has. It had made a timer for every drop up front: `--drop-every 0.00001 --drop-for 0
// --seconds 100` made ten million, took 3.7 GB and never began streaming.
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { scheduleDrops, simulateOptionProblem } from '../../src/cli/simulate.js';
import { monotonicMs } from '../../src/monotonic-clock.js';

const timers = (): number => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;

it('a day of drops a microsecond apart holds one timer, and cancelling frees it', () => {
  const before = timers();
  const started = monotonicMs();
  const cancel = scheduleDrops(monotonicMs() + 60_000, 1e-6, 86_400, () => assert.fail('no drop is due yet'));
  assert.equal(timers() - before, 1);
  assert.ok(monotonicMs() - started < 1000, 'scheduling takes no time by the number of drops');
  cancel();
  assert.equal(timers(), before);
});

it('drops come at each multiple of --drop-every before the end, the last one before it', async () => {
  const t0 = monotonicMs();
  const at: number[] = [];
  scheduleDrops(t0, 0.03, 0.1, () => at.push(monotonicMs() - t0));
  await new Promise((r) => setTimeout(r, 300));
  assert.equal(at.length, 3, `drops at 30, 60, 90 ms, not at 100: ${at.join(', ')}`);
  // Node fires a timer by its loop clock, read at the start of the turn: up to a few ms early by this one.
  at.forEach((ms, i) => assert.ok(ms >= 30 * (i + 1) - 5, `drop ${i + 1} at ${ms} ms`));
});

it('--drop-every no longer than the default cut is refused, as an explicit --drop-for that long is', () => {
  const base = { url: 'http://127.0.0.1:5000', devices: 1, seconds: 10 };
  assert.equal(simulateOptionProblem({ ...base, dropEverySeconds: 0.00001 }), '--drop-every must be longer than a cut, --drop-for (1000 ms unless given), not 0.00001 s');
  assert.equal(simulateOptionProblem({ ...base, dropEverySeconds: 1 }), '--drop-every must be longer than a cut, --drop-for (1000 ms unless given), not 1 s');
  assert.equal(simulateOptionProblem({ ...base, dropEverySeconds: 1.001 }), undefined);
  assert.equal(simulateOptionProblem({ ...base, dropEverySeconds: 0.5, dropForMs: 100 }), undefined);
  assert.equal(simulateOptionProblem({ ...base, dropEverySeconds: 0.5, dropForMs: 500 }), '--drop-for must be from 0 to less than --drop-every (in ms)');
});
