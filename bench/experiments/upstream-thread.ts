// An experiment (bench/RESULTS.md, twenty-second session): section 4's load at one device count against
// the floor (one thread), the floor with its upstream links and decode on a worker thread and, with
// `service`, voice-hub itself, taking turns, each with a fresh server and the same echo server.
// Usage: node --import tsx bench/experiments/upstream-thread.ts <devices> <seconds> <rounds> [service]
import { runLoad } from '../lib/child.js';
import { ProcessSet, DIST, tsxArgs, waitForOutput, startEchoServer, startService, type Child } from '../lib/proc.js';
import { floorSessions } from '../sections/floor.js';
import { startSessions } from '../lib/api.js';

const [n, seconds, pairs, withService] = [Number(process.argv[2] ?? 300), Number(process.argv[3] ?? 10), Number(process.argv[4] ?? 2), process.argv[5] === 'service'];
const procs = new ProcessSet();
const echo = await startEchoServer(procs);
async function start(script: string, args: string[]): Promise<Child & { url: string }> {
  const child = procs.spawn(process.execPath, tsxArgs(script, [DIST, echo.url, ...args]));
  const m = await waitForOutput(child, /listening on (http:\/\/127\.0\.0\.1:\d+)/, 60_000);
  return { ...child, url: m[1]! };
}
interface R { wall: number; cpu: { server: number; upstream: number }; loadCpu: number; lostResponses: number; lateSends: number; responseLatency: { p50: number; p99: number } }
async function measure(name: string, server: Child & { url: string }, sessions: unknown): Promise<void> {
  const r = await runLoad<R>(procs, 'stream.ts', { url: server.url, protocol: 'json', sessions, warmupMs: 1000, durationMs: seconds * 1000, pids: { server: server.pid, upstream: echo.pid }, serverPid: server.pid }, seconds * 1000 + 120_000);
  process.stdout.write(`${name.padEnd(10)} cpu ${(r.cpu.server / r.wall * 100).toFixed(0)}% echo ${(r.cpu.upstream / r.wall * 100).toFixed(0)}% gen ${(r.loadCpu / r.wall * 100).toFixed(0)}% late ${r.lateSends} lost ${r.lostResponses} p50 ${r.responseLatency.p50?.toFixed(1)} p99 ${r.responseLatency.p99?.toFixed(1)}\n`);
  await server.stop();
}
try {
  for (let i = 0; i < pairs; i++) {
    await measure('floor', await start('servers/floor-server.ts', ['decode']), floorSessions(n));
    await measure('threaded', await start('experiments/floor-threaded-server.ts', []), floorSessions(n));
    if (withService) {
      const s = await startService(procs, { upstreamUrl: echo.url, args: ['--DeviceManagement.MaxDevices', '1000'] });
      await measure('voice-hub', s, await startSessions(s.url, n, `s${i}x`));
    }
  }
} finally {
  await echo.stop();
  procs.killAll();
}
