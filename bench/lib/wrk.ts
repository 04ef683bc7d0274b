// HTTP load with `wrk` (Debian package, a C load generator: it leaves more of the two cores to the
// server than a Node one would), installed through scripts/ensure-debs.sh when missing. Requests per
// server CPU-second come from the server's /proc stat around the run.
import { execFileSync, spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { cpuWindow, ROOT, tempDir } from './proc.js';

export interface HttpLoad {
  method?: string;
  path: string;
  headers?: Record<string, string>;
  body?: string;
}

export interface WrkResult {
  requests: number;
  seconds: number;
  rps: number;
  p50Ms: number;
  p99Ms: number;
  non2xx: number;
  socketErrors: number;
  serverCpu: number;
  /** Requests per second of server CPU time. */
  perCpuSecond: number;
}

export function ensureWrk(): void {
  execFileSync(path.join(ROOT, 'scripts/ensure-debs.sh'), ['wrk'], { stdio: 'inherit' });
}

function luaScript(load: HttpLoad): string {
  const lines = [`wrk.method = ${JSON.stringify(load.method ?? 'GET')}`];
  if (load.body !== undefined) lines.push(`wrk.body = ${JSON.stringify(load.body)}`);
  for (const [k, v] of Object.entries(load.headers ?? {})) lines.push(`wrk.headers[${JSON.stringify(k)}] = ${JSON.stringify(v)}`);
  return lines.join('\n') + '\n';
}

/** wrk prints latencies as `1.23ms`, `456.00us` or `1.02s`. */
function ms(text: string): number {
  const m = /^([\d.]+)(us|ms|s)$/.exec(text.trim());
  if (!m) return NaN;
  const v = Number(m[1]);
  return m[2] === 'us' ? v / 1000 : m[2] === 's' ? v * 1000 : v;
}

export function parseWrk(out: string): Omit<WrkResult, 'serverCpu' | 'perCpuSecond'> {
  const total = /(\d+) requests in ([\d.]+)(ms|s|m)/.exec(out);
  if (!total) throw new Error(`cannot read wrk output:\n${out}`);
  const seconds = Number(total[2]) * (total[3] === 'ms' ? 0.001 : total[3] === 'm' ? 60 : 1);
  const requests = Number(total[1]);
  const pct = (p: string): number => ms(new RegExp(`^\\s+${p}%\\s+(\\S+)`, 'm').exec(out)?.[1] ?? '');
  const errors = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(out);
  return {
    requests,
    seconds,
    rps: requests / seconds,
    p50Ms: pct('50'),
    p99Ms: pct('99'),
    non2xx: Number(/Non-2xx or 3xx responses: (\d+)/.exec(out)?.[1] ?? 0),
    socketErrors: errors ? errors.slice(1).reduce((a, b) => a + Number(b), 0) : 0,
  };
}

/** Runs wrk against `baseUrl` for `seconds` and reads the server's CPU time around it. */
export async function runWrk(baseUrl: string, serverPid: number, load: HttpLoad, seconds: number, connections = 32): Promise<WrkResult> {
  const script = path.join(tempDir('wrk'), 'load.lua');
  writeFileSync(script, luaScript(load));
  const window = cpuWindow(serverPid);
  const out = await new Promise<string>((resolve, reject) => {
    const proc = spawn('wrk', ['-t1', `-c${connections}`, `-d${seconds}s`, '--latency', '--timeout', '5s', '-s', script, baseUrl + load.path]);
    let text = '';
    proc.stdout.on('data', (d: Buffer) => (text += d.toString()));
    proc.stderr.on('data', (d: Buffer) => (text += d.toString()));
    proc.on('error', reject);
    proc.on('exit', (code) => (code === 0 ? resolve(text) : reject(new Error(`wrk exited with ${code}:\n${text}`))));
  });
  const { cpu } = window.end();
  const parsed = parseWrk(out);
  return { ...parsed, serverCpu: cpu, perCpuSecond: parsed.requests / cpu };
}
