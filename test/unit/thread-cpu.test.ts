// bench/lib/proc.ts' threadCpuMs: the CPU a start had run by its first 200 (row 6, bench/compare-startup.ts),
// read from the scheduler's per-thread account in ns, where /proc/<pid>/stat counts 10 ms ticks.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { threadCpuMs } from '../../bench/lib/proc.js';

test('counts the main thread\'s CPU to the ms, and all threads\' at least as much', () => {
  const before = threadCpuMs(process.pid);
  const usage0 = process.cpuUsage();
  // Busy until the process's own account shows 50 ms of CPU. The main thread runs most of it; V8's
  // helper threads (GC, compilers) and the test runner's take the rest, a quarter of it seen on Node 24.
  let spent = 0;
  while (spent < 50_000) {
    const u = process.cpuUsage(usage0);
    spent = u.user + u.system;
  }
  const after = threadCpuMs(process.pid);
  const processMs = spent / 1000;
  const main = after.main - before.main;
  const all = after.all - before.all;
  assert.ok(main >= processMs / 2 && main <= processMs + 5, `main thread ${main.toFixed(2)} ms for ${processMs.toFixed(2)} ms of the process`);
  assert.ok(all >= main && all <= processMs + 20, `all threads ${all.toFixed(2)} ms, main ${main.toFixed(2)} ms, the process ${processMs.toFixed(2)} ms`);
  assert.notEqual(after.main % 10, 0, 'not rounded to clock ticks');
});
