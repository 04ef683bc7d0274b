// bench/lib/proc.ts' machine-wide CPU split (row 4's notes): where all the cores went over a window,
// programs against the kernel's socket work, steal and idle, from /proc/stat's first line.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { machineCpu, machineShare, parseMachineCpu } from '../../bench/lib/proc.js';

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

test('this machine\'s counters move while this process spins', () => {
  const a = machineCpu();
  const end = Date.now() + 100;
  while (Date.now() < end);
  const s = machineShare(a, machineCpu());
  assert.ok(s.user > 0, `programs ${s.user} %`);
  const sum = s.user + s.kernel + s.steal + s.idle;
  assert.ok(Math.abs(sum - 100) < 1e-9, `shares add up to ${sum} %`);
});
