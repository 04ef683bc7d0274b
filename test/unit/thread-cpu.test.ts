// bench/lib/proc.ts' threadCpuMs: the CPU a start had run by its first 200 (row 6, bench/compare-startup.ts),
// read from the scheduler's per-thread account in ns, where /proc/<pid>/stat counts 10 ms ticks.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { threadCpuMs } from '../../bench/lib/proc.js';

test('counts the main thread\'s CPU to the ms, and all threads\' at least as much', () => {
  const before = threadCpuMs(process.pid);
  const usage0 = process.cpuUsage();
  // Busy until the process's own account shows 50 ms of CPU: the main thread ran nearly all of it.
  let spent = 0;
  while (spent < 50_000) {
    const u = process.cpuUsage(usage0);
    spent = u.user + u.system;
  }
  const after = threadCpuMs(process.pid);
  const main = after.main - before.main;
  assert.ok(main >= 40 && main <= spent / 1000 + 5, `main thread ${main.toFixed(2)} ms for ${(spent / 1000).toFixed(2)} ms of the process`);
  assert.ok(after.all >= after.main, `all threads ${after.all} ms, main ${after.main} ms`);
  assert.notEqual(after.main % 10, 0, 'not rounded to clock ticks');
});
