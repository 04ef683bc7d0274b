// bench/lib/proc.ts' threadCpuMs: the CPU a start had run by its first 200 (row 6, bench/compare-startup.ts),
// read from the scheduler's per-thread account in ns, where /proc/<pid>/stat counts 10 ms ticks, and the main
// thread's wait for a core (row 6's and row 4's notes).
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { availableParallelism } from 'node:os';
import { test } from 'node:test';
import { Worker } from 'node:worker_threads';
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

test('a busy main thread is running or waiting for a core: the two add up to the time that passed', async () => {
  // One spinning thread per core beside the main thread: there are more threads ready to run than cores,
  // so the main thread must wait for one part of the time, whatever else the machine runs.
  const spinners = Array.from({ length: availableParallelism() }, () => new Worker(
    `const { parentPort } = require('node:worker_threads');
     parentPort.once('message', (ms) => { const end = Date.now() + ms; while (Date.now() < end); parentPort.postMessage('done'); });
     parentPort.postMessage('ready');`,
    { eval: true },
  ));
  try {
    await Promise.all(spinners.map((w) => once(w, 'message')));
    const spinMs = 400;
    const done = spinners.map((w) => once(w, 'message'));
    for (const w of spinners) w.postMessage(spinMs + 200);
    const before = threadCpuMs(process.pid);
    const t0 = performance.now();
    while (performance.now() - t0 < spinMs);
    const after = threadCpuMs(process.pid);
    const elapsed = performance.now() - t0;
    await Promise.all(done);
    const ran = after.main - before.main;
    const waited = after.mainWaiting - before.mainWaiting;
    // Never more than the time that passed (the account of a running thread is brought up to date at its
    // ticks, 4 ms at HZ=250); a little less where the kernel keeps interrupt time and a hypervisor's steal
    // time out of a thread's CPU.
    const accounted = ran + waited;
    assert.ok(accounted <= elapsed + 12 && accounted >= elapsed * 0.85, `ran ${ran.toFixed(1)} ms + waited ${waited.toFixed(1)} ms, ${elapsed.toFixed(1)} ms passed`);
    assert.ok(waited >= elapsed / (4 * (spinners.length + 1)), `waited ${waited.toFixed(1)} ms of ${elapsed.toFixed(1)} ms beside ${spinners.length} spinning threads`);
  } finally {
    await Promise.all(spinners.map((w) => w.terminate()));
  }
});
