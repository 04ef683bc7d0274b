// bench/lib/proc.ts' machine-wide CPU split (row 4's notes): where all the cores went over a window,
// programs against the kernel's socket work, steal and idle, from /proc/stat's first line.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { CLK_TCK, machineCpu, machineShare, parseMachineCpu } from '../../bench/lib/proc.js';

// Fields: user nice system idle iowait irq softirq steal guest guest_nice.
const STAT = 'cpu  100 20 30 400 50 5 15 80 7 0\ncpu0 60 10 15 200 25 3 7 40 7 0\nintr 1 2 3\n';

test('reads the machine\'s line, not a core\'s, and folds the fields into what they mean', () => {
  assert.deepEqual(parseMachineCpu(STAT), { user: 120, kernel: 50, softirq: 15, steal: 80, idle: 450 });
});

test('a kernel without the steal field counts none', () => {
  assert.deepEqual(parseMachineCpu('cpu 1 2 3 4 5 6 7\n'), { user: 3, kernel: 16, softirq: 7, steal: 0, idle: 9 });
});

test('refuses text that is not /proc/stat', () => {
  assert.throws(() => parseMachineCpu('cpu0 1 2 3 4 5 6 7 8\n'), { message: 'not /proc/stat: cpu0 1 2 3 4 5 6 7 8' });
});

test('shares are of the time between two readings, and add up to all of it', () => {
  const a = parseMachineCpu(STAT);
  const b = parseMachineCpu('cpu  160 20 50 480 50 5 25 80 7 0\n');
  // 60 user + 30 kernel (10 of it softirq) + 0 steal + 80 idle = 170 ticks.
  const s = machineShare(a, b);
  assert.equal(s.user.toFixed(2), (60 / 170 * 100).toFixed(2));
  assert.equal(s.kernel.toFixed(2), (30 / 170 * 100).toFixed(2));
  assert.equal(s.softirq.toFixed(2), (10 / 170 * 100).toFixed(2));
  assert.equal(s.steal, 0);
  assert.equal(s.idle.toFixed(2), (80 / 170 * 100).toFixed(2));
  assert.ok(Number.isNaN(machineShare(a, a).user), 'no time passed: no share, not 0 %');
});

test('this machine\'s counters move while this process spins, by every core\'s time that passed', () => {
  const t0 = performance.now();
  const a = machineCpu();
  while (performance.now() - t0 < 300);
  const b = machineCpu();
  const seconds = (performance.now() - t0) / 1000;
  assert.ok(machineShare(a, b).user > 0, 'programs ran');
  // The parts read cover all of each core's time (softirq is inside kernel): a field left out or counted
  // twice would move the sum away from cores x seconds x ticks per second, to within the ticks' granularity.
  const ticks = (['user', 'kernel', 'steal', 'idle'] as const).reduce((n, k) => n + b[k] - a[k], 0);
  // The cores /proc/stat counts, which a CPU affinity or a container's cpuset does not narrow.
  const cores = readFileSync('/proc/stat', 'utf8').split('\n').filter((l) => /^cpu\d/.test(l)).length;
  const expected = cores * seconds * CLK_TCK;
  assert.ok(ticks > expected * 0.7 && ticks < expected * 1.3, `${ticks} ticks in ${seconds.toFixed(3)} s on ${cores} cores, ${expected.toFixed(0)} expected`);
});
