// Processes of a benchmark run: spawning the service (bundle or executable), the echo server and the
// bench's own servers, reading a process's CPU time and memory and the machine's CPU split from /proc,
// and stopping everything that was started (by pid, never by name).
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { closeSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { hostTarget } from '../../scripts/sea-runtime.mjs';
import { PROGRAM_ASSET } from '../../src/runtime/asset-manifest.mjs';
import { openAppendedAssets } from '../../src/runtime/assets.js';
import { NODE_FLAGS } from '../../src/runtime/node-options.mjs';

export const ROOT = path.resolve(import.meta.dirname, '../..');
/**
 * The environment of every process a run starts: what a service gets from its systemd unit (a path, a home,
 * the locale), not the environment the bench was started from. A variable inherited from a shell can change
 * how node itself starts: this CI machine sets NODE_EXTRA_CA_CERTS, which has every node parse the system's
 * CA certificates before running a line (70-110 ms and 1.7 MiB here), a cost the service under its unit does
 * not pay and the rows would otherwise count. `--service-env K=V` adds to it for the measured services.
 */
export const RUN_ENV: NodeJS.ProcessEnv = Object.fromEntries(
  ['PATH', 'HOME', 'LANG', 'LC_ALL', 'TZ', 'TMPDIR'].flatMap((k) => (process.env[k] === undefined ? [] : [[k, process.env[k]]])),
);
export const DIST = path.join(ROOT, 'dist');
export const BUNDLE = path.join(DIST, 'voice-hub.cjs');
/** The executable this machine runs: Node 24 where its glibc allows, else the legacy one. */
export const EXECUTABLE_NAME = `voice-hub-linux-${hostTarget()}`;
export const EXECUTABLE = path.join(DIST, EXECUTABLE_NAME);
/**
 * Where the executable starts and the flags it is given: an executable built earlier need not accept
 * today's config/appsettings.json, so it gets an empty one of its own.
 */
export function executableSetting(): { cwd: string; args: string[] } {
  const cwd = tempDir('exe-cwd');
  const config = path.join(cwd, 'appsettings.json');
  writeFileSync(config, '{}\n');
  return { cwd, args: ['--config', config] };
}
/** The note of a row measured on an executable older than the bundle, or undefined. */
export function staleExecutableNote(): string | undefined {
  // By content, not by date: each run rebuilds the bundle first, so the executable is always the older
  // file. The build records each appended asset's SHA-256, the program's among them.
  const assets = openAppendedAssets(EXECUTABLE);
  if (!assets) return 'the executable carries no program: run `make binaries`';
  try {
    const carried = assets.entries.get(PROGRAM_ASSET)?.sha256;
    return carried === createHash('sha256').update(readFileSync(path.join(DIST, PROGRAM_ASSET))).digest('hex')
      ? undefined
      : 'the executable carries another program than this run\'s bundle: run `make binaries` to measure the current code';
  } finally {
    closeSync(assets.fd);
  }
}

export const CLK_TCK = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  } catch {
    return 100;
  }
})();

/** User + system CPU seconds of a process so far (/proc/<pid>/stat fields 14 and 15). */
export function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // The command name may contain spaces and parentheses: fields start after the last ')'.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / CLK_TCK;
}

/**
 * CPU a process has run so far, in ms, from the scheduler's own account in ns
 * (/proc/<pid>/task/<tid>/schedstat): all its threads, and its main thread alone. /proc/<pid>/stat counts
 * clock ticks (10 ms), too coarse for a start of a few hundred ms; a thread that has ended is not counted.
 * `mainWaiting` is the time the main thread was ready to run but waited for a core (schedstat's second
 * field): where the cores are all busy, the gap between wall time and CPU time.
 */
export function threadCpuMs(pid: number): { all: number; main: number; mainWaiting: number } {
  let all = 0;
  let main = 0;
  let mainWaiting = 0;
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    let fields: string[];
    try {
      fields = readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ');
    } catch {
      continue; // the thread ended since the folder was read
    }
    const ms = Number(fields[0]) / 1e6;
    all += ms;
    if (tid === String(pid)) {
      main = ms;
      mainWaiting = Number(fields[1]) / 1e6;
    }
  }
  return { all, main, mainWaiting };
}

/** The machine's CPU time so far, all cores, in clock ticks, as /proc/stat's `cpu` line counts it. */
export interface MachineCpu { user: number; kernel: number; softirq: number; steal: number; idle: number }

/**
 * /proc/stat's first line: user and nice are programs' own code; system, irq and softirq the kernel's
 * (loopback TCP is delivered in softirq, often outside the process that sent); steal the hypervisor's
 * other guests; idle and iowait nothing to run. Guest time is already inside user.
 */
export function parseMachineCpu(procStat: string): MachineCpu {
  const line = procStat.split('\n', 1)[0]!;
  if (!/^cpu\s/.test(line)) throw new Error(`not /proc/stat: ${line}`);
  const [user, nice, system, idle, iowait, irq, softirq, steal] = line.trim().split(/\s+/).slice(1).map(Number);
  return { user: user! + nice!, kernel: system! + irq! + softirq!, softirq: softirq!, steal: steal ?? 0, idle: idle! + iowait! };
}

export const machineCpu = (): MachineCpu => parseMachineCpu(readFileSync('/proc/stat', 'utf8'));

/** The same parts over a window, each in % of all cores' time. */
export type MachineShare = MachineCpu;

/** Where the machine's cores went between two readings. */
export function machineShare(a: MachineCpu, b: MachineCpu): MachineShare {
  const d = (k: keyof MachineCpu): number => b[k] - a[k];
  const total = d('user') + d('kernel') + d('steal') + d('idle');
  const pct = (k: keyof MachineCpu): number => (total > 0 ? (d(k) / total) * 100 : NaN);
  return { user: pct('user'), kernel: pct('kernel'), softirq: pct('softirq'), steal: pct('steal'), idle: pct('idle') };
}

/** Resident set size and its peak, in bytes (/proc/<pid>/status VmRSS, VmHWM). */
export function memory(pid: number): { rss: number; peak: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (key: string): number => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? 0) * 1024;
  return { rss: kb('VmRSS'), peak: kb('VmHWM') };
}

/** Resident memory split into file-backed pages (the node binary, addons) and anonymous memory (heaps). */
export function memorySplit(pid: number): { rss: number; anonymous: number; fileBacked: number } {
  const text = readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
  const kb = (key: string): number => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? 0) * 1024;
  const rss = kb('Rss');
  const anonymous = kb('Anonymous');
  return { rss, anonymous, fileBacked: rss - anonymous };
}

/** Bytes this process caused to be written to storage (/proc/<pid>/io write_bytes). */
export function storageWrites(pid: number): number {
  const io = readFileSync(`/proc/${pid}/io`, 'utf8');
  return Number(/^write_bytes:\s+(\d+)/m.exec(io)?.[1] ?? 0);
}

/** CPU time of a process over a window: `const w = cpuWindow(pid); ...; w.end()`. */
export function cpuWindow(pid: number): { end(): { cpu: number; wall: number } } {
  const cpu0 = cpuSeconds(pid);
  const t0 = performance.now();
  return { end: () => ({ cpu: cpuSeconds(pid) - cpu0, wall: (performance.now() - t0) / 1000 }) };
}

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Everything a run writes (data dirs, inputs) lives under one folder, removed at the end of the run. */
export const RUN_DIR = path.join(os.tmpdir(), `voice-hub-bench-${process.pid}`);

export function tempDir(prefix: string): string {
  mkdirSync(RUN_DIR, { recursive: true });
  return mkdtempSync(path.join(RUN_DIR, `${prefix}-`));
}

export interface Child {
  readonly proc: ChildProcess;
  readonly pid: number;
  output(): string;
  readonly exited: Promise<number | null>;
  /** SIGTERM, then SIGKILL after `graceMs`; resolves when it is gone. */
  stop(graceMs?: number): Promise<void>;
}

/** Every process a run started, so an interrupted run leaves nothing behind. */
export class ProcessSet {
  private readonly live = new Set<Child>();
  /**
   * Node's options for every measured server (the service, the bare uWS ceiling, the floors), so that they
   * are compared under one runtime: those users run the service with (src/runtime/node-options.mjs), then
   * any `npm run bench -- --node-flag`, which may override them.
   */
  runtimeFlags: string[] = [...NODE_FLAGS];
  /** Node flags for the services alone (--cpu-prof from `npm run bench -- --cpu-prof`). */
  serviceNodeFlags: string[] = [];
  /** An executable takes runtimeFlags as the unit gives them, in NODE_OPTIONS: a Node 20 one cannot carry them. */
  executableEnv(): Record<string, string> {
    return { NODE_OPTIONS: this.runtimeFlags.join(' ') };
  }
  /** Extra environment for every service started (`npm run bench -- --service-env K=V`). */
  serviceEnv: Record<string, string> = {};
  /** The node that runs the bundle of every service started (`npm run bench -- --node PATH`). */
  serviceNode: string = process.execPath;

  spawn(cmd: string, args: string[], opts: { env?: NodeJS.ProcessEnv; cwd?: string } = {}): Child {
    const proc = spawn(cmd, args, {
      cwd: opts.cwd ?? ROOT,
      env: opts.env ?? RUN_ENV,
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let out = '';
    const collect = (d: Buffer): void => {
      // Keep the tail only: a long run must not grow the bench's own memory.
      out = (out + d.toString()).slice(-200_000);
    };
    proc.stdout!.on('data', collect);
    proc.stderr!.on('data', collect);
    const exited = new Promise<number | null>((resolve) => proc.on('exit', (code) => resolve(code)));
    const child: Child = {
      proc,
      pid: proc.pid!,
      output: () => out,
      exited,
      stop: async (graceMs = 12_000) => {
        if (proc.exitCode === null && proc.signalCode === null) {
          proc.kill('SIGTERM');
          const timer = setTimeout(() => proc.kill('SIGKILL'), graceMs);
          await exited;
          clearTimeout(timer);
        }
        this.live.delete(child);
      },
    };
    this.live.add(child);
    void exited.then(() => this.live.delete(child));
    return child;
  }

  /** Kills whatever is still running (SIGKILL), by pid. */
  killAll(): void {
    for (const child of this.live) {
      if (child.proc.exitCode === null && child.proc.signalCode === null) child.proc.kill('SIGKILL');
    }
    this.live.clear();
  }
}

/**
 * An interrupted run (Ctrl-C, a timeout's SIGTERM) kills what it started and removes RUN_DIR before it
 * exits 130: left to the default, its services would go on running and its data dirs stay in /tmp.
 */
export function cleanUpOnInterrupt(procs: ProcessSet): void {
  const stop = (): void => {
    procs.killAll();
    rmSync(RUN_DIR, { recursive: true, force: true });
    process.exit(130);
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}

/** Resolves with the first match of `pattern` in the child's output; rejects on exit or timeout. */
export function waitForOutput(child: Child, pattern: RegExp, timeoutMs = 20_000): Promise<RegExpExecArray> {
  return new Promise((resolve, reject) => {
    const check = (): boolean => {
      const m = pattern.exec(child.output());
      if (m) {
        done();
        resolve(m);
      }
      return Boolean(m);
    };
    const timer = setTimeout(() => {
      done();
      reject(new Error(`no ${pattern} within ${timeoutMs} ms; output:\n${child.output().slice(-2000)}`));
    }, timeoutMs);
    const onData = (): void => void check();
    const done = (): void => {
      clearTimeout(timer);
      child.proc.stdout!.off('data', onData);
      child.proc.stderr!.off('data', onData);
    };
    child.proc.stdout!.on('data', onData);
    child.proc.stderr!.on('data', onData);
    void child.exited.then((code) => {
      if (check()) return;
      done();
      reject(new Error(`process exited with ${code}; output:\n${child.output().slice(-2000)}`));
    });
    check();
  });
}

/** Node with tsx, for the bench's own TypeScript helpers (load generators, bench servers). */
export function tsxArgs(script: string, args: string[] = []): string[] {
  return ['--import', 'tsx', path.join(ROOT, 'bench', script), ...args];
}

export interface Service extends Child {
  readonly port: number;
  readonly url: string;
  readonly dataDir: string;
}

export interface ServiceOptions {
  upstreamUrl: string;
  /** Extra flags, e.g. ['--DeviceManagement.MaxDevices', '1000']. */
  args?: string[];
  /** The x64 executable instead of `node dist/voice-hub.cjs`. */
  executable?: string;
  /** Another checkout's bundle instead of this one's (the side-by-side comparisons). */
  bundle?: string;
  /** Where it starts (an executable reads config/appsettings.json there, if any). */
  cwd?: string;
  dataDir?: string;
  nodeFlags?: string[];
  /** Environment of this service alone, over the run's --service-env. */
  env?: Record<string, string>;
  /** MQTT on, with this loopback broker (the default configuration has it on); off when absent. */
  mqttPort?: number;
}

/** The service as users run it: the built bundle (or an executable), MQTT off unless asked, a fresh data dir. */
export async function startService(procs: ProcessSet, opts: ServiceOptions): Promise<Service> {
  const dataDir = opts.dataDir ?? tempDir('data');
  const flags = [
    '--host', '127.0.0.1', '--port', '0', '--data-dir', dataDir,
    ...(opts.mqttPort === undefined ? ['--Mqtt.BrokerAddress', ''] : ['--Mqtt.BrokerAddress', '127.0.0.1', '--Mqtt.Port', String(opts.mqttPort)]),
    '--voice-server-url', opts.upstreamUrl,
    // Every simulated device and hostile client comes from 127.0.0.1, as a real LAN's would not.
    '--Hub.MaximumConnectionsPerAddress', '0',
    ...(opts.args ?? []),
  ];
  const env = { ...RUN_ENV, ...(opts.executable ? procs.executableEnv() : {}), ...procs.serviceEnv, ...opts.env };
  const where = opts.cwd ? { cwd: opts.cwd } : {};
  const child = opts.executable
    ? procs.spawn(opts.executable, flags, { env, ...where })
    : procs.spawn(procs.serviceNode, [...procs.runtimeFlags, ...procs.serviceNodeFlags, ...(opts.nodeFlags ?? []), opts.bundle ?? BUNDLE, ...flags], { env, ...where });
  const m = await waitForOutput(child, /listening on http:\/\/[^:\s]+:(\d+)/);
  const port = Number(m[1]);
  return { ...child, port, url: `http://127.0.0.1:${port}`, dataDir };
}

/** The built-in echo voice server (`voice-hub echo-server`), the upstream of the hub benchmarks. */
export async function startEchoServer(procs: ProcessSet): Promise<Child & { url: string }> {
  const child = procs.spawn(process.execPath, [BUNDLE, 'echo-server', '--port', '0']);
  const m = await waitForOutput(child, /listening on (ws:\/\/\S+\/voice)/);
  return { ...child, url: m[1]! };
}

/** The bench's own upstream (bench/servers/upstream.ts): `sink` swallows audio, `talk` sends audio at a rate. */
export async function startBenchUpstream(procs: ProcessSet, mode: 'sink' | 'talk', ratePerSession = 0): Promise<Child & { url: string }> {
  const child = procs.spawn(process.execPath, tsxArgs('servers/upstream.ts', [mode, String(ratePerSession)]));
  const m = await waitForOutput(child, /listening on (ws:\/\/\S+)/);
  return { ...child, url: m[1]! };
}
