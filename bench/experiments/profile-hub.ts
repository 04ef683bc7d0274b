// An experiment (bench/RESULTS.md, forty-first session): one build's service under 3a's load (50 sessions
// x 2 members, SendAudioData at `window` in flight) for long enough to profile it from outside, with real
// CPU time rather than V8's wall-clock self time: it prints the service's pid once the load is on, e.g.
//   perf record -e cpu-clock -g -p PID -- sleep 8      (start the service with --perf-basic-prof-only-functions)
//   perf stat -e 'syscalls:sys_enter_sendto,syscalls:sys_enter_write' -p PID -- sleep 10
// and, at the end, the round trips and CPU-seconds of the whole window, to turn samples into us per round trip.
// Usage: node --import tsx bench/experiments/profile-hub.ts <checkout> <json|messagepack> <seconds> [window] [node flags...]
import path from 'node:path';
import { startSessions } from '../lib/api.js';
import { runLoad } from '../lib/child.js';
import { ProcessSet, startEchoServer, tempDir, waitForOutput } from '../lib/proc.js';
import type { HubLoadResult } from '../sections/hub.js';
import type { Protocol } from '../lib/signalr-raw.js';

const [dir = '.', protocol = 'json', seconds = '20', window = '1', ...nodeFlags] = process.argv.slice(2);
const procs = new ProcessSet();
try {
  const echo = await startEchoServer(procs);
  const checkout = path.resolve(dir);
  // The flags compare.ts starts each build with (bench/sections/hub.ts' own).
  const args = ['--host', '127.0.0.1', '--port', '0', '--data-dir', tempDir('data'), '--Mqtt.BrokerAddress', '', '--voice-server-url', echo.url,
    '--DeviceManagement.MaxDevices', '1000', '--Hub.MessageRate', '1000000', '--Hub.MessageBurst', '1000000'];
  const child = procs.spawn(process.execPath, [...nodeFlags, path.join(checkout, 'dist/voice-hub.cjs'), ...args], { cwd: checkout });
  const m = await waitForOutput(child, /listening on http:\/\/[^:\s]+:(\d+)/);
  const url = `http://127.0.0.1:${m[1]}`;
  const sessions = await startSessions(url, 50, 'profile');
  process.stdout.write(`pid ${child.pid}\n`);
  const r = await runLoad<HubLoadResult>(procs, 'hub.ts', {
    url, protocol: protocol as Protocol, sessions, mode: 'roundtrip', window: Number(window), warmupMs: 1000,
    durationMs: Number(seconds) * 1000, pids: { server: child.pid, upstream: echo.pid },
  }, 600_000);
  process.stdout.write(`${r.processed} round trips in ${seconds} s, ${r.cpu.server.toFixed(2)} CPU-s: ${Math.round(r.processed / r.cpu.server)} rt/CPU-s\n`);
  await child.stop();
  await echo.stop();
} finally {
  procs.killAll();
}
