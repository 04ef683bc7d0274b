// An experiment (bench/RESULTS.md, twenty-eighth session): where an overloaded service's memory is.
// Section 4's load at one device count against voice-hub started with the inspector open; every few
// seconds its process.memoryUsage() and V8's heap spaces are read through the inspector, and for 45 s
// after the load has stopped.
// Usage: node --import tsx bench/experiments/overload-memory.ts <devices> <seconds> [a directory for one heap snapshot, taken mid-load]
import { runLoad } from '../lib/child.js';
import { ProcessSet, startEchoServer, startService } from '../lib/proc.js';
import { startSessions } from '../lib/api.js';
import { evaluate, INSPECT_FLAG } from '../../test/support/inspector.js';

const [n, seconds, snapshot] = [Number(process.argv[2] ?? 300), Number(process.argv[3] ?? 20), process.argv[4]];
const procs = new ProcessSet();
const echo = await startEchoServer(procs);
const mib = (b: number): string => (b / 1048576).toFixed(1);
try {
  const s = await startService(procs, { upstreamUrl: echo.url, args: ['--DeviceManagement.MaxDevices', '1000'], nodeFlags: [INSPECT_FLAG, ...(snapshot ? ['--heapsnapshot-signal=SIGWINCH', `--diagnostic-dir=${snapshot}`] : [])] });
  const sessions = await startSessions(s.url, n, 'om');
  const load = runLoad<{ lostResponses: number; responseLatency: { p99: number } }>(procs, 'stream.ts', { url: s.url, protocol: 'json', sessions, warmupMs: 1000, durationMs: seconds * 1000, pids: { server: s.pid, upstream: echo.pid }, serverPid: s.pid }, seconds * 1000 + 120_000);
  let done = false;
  void load.finally(() => (done = true));
  const expr = `(() => { const m = process.memoryUsage(); const v8 = process.mainModule.require('v8'); return { m, spaces: v8.getHeapSpaceStatistics().map((x) => [x.space_name, x.space_used_size, x.space_size]) }; })()`;
  let round = 0;
  while (!done) {
    await new Promise((r) => setTimeout(r, 3000));
    // One heap snapshot mid-load, when asked for (it stops the service for some seconds).
    if (++round === 4 && snapshot) process.kill(s.pid, 'SIGWINCH');
    const read = await evaluate(s.output(), expr).catch(() => undefined) as { m: NodeJS.MemoryUsage; spaces: [string, number, number][] } | undefined;
    if (!read) continue;
    const { m, spaces } = read;
    process.stdout.write(`rss ${mib(m.rss)} heap ${mib(m.heapUsed)}/${mib(m.heapTotal)} external ${mib(m.external)} arrayBuffers ${mib(m.arrayBuffers)} | ${spaces.filter(([, u]) => u > 1048576).map(([k, u, t]) => `${k} ${mib(u)}/${mib(t)}`).join(' ')}\n`);
  }
  const r = await load;
  process.stdout.write(`lost ${r.lostResponses} p99 ${r.responseLatency.p99}\n`);
  // And what stays once the load has stopped (its connections closed): read for 45 s more.
  for (let i = 0; i < 9; i++) {
    await new Promise((resolve) => setTimeout(resolve, 5000));
    const { m } = await evaluate(s.output(), expr) as { m: NodeJS.MemoryUsage };
    process.stdout.write(`${(i + 1) * 5} s after: rss ${mib(m.rss)} heap ${mib(m.heapUsed)}/${mib(m.heapTotal)} external ${mib(m.external)}\n`);
  }
  await s.stop();
} finally {
  await echo.stop();
  procs.killAll();
}
