// The built bundle as the system under attack: spawned with a config file of its own (never the shipped
// one: no broker on localhost:1883, no echo server on 5050), with what /proc says about it (RSS, open
// file descriptors) and the log lines that betray a bug (`fail:`/`crit:`: a 500, a hub reader crash).
import assert from 'node:assert/strict';
import { readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { call } from '../support/http.js';
import { ROOT, runBundle, spawnService, type SpawnedService } from '../support/service.js';
import { tmpDir } from '../support/tmp.js';
import { silentLogger } from '../../src/log/logger.js';
import { startEchoServer } from '../../src/upstream/echo-server.js';
import { collectGarbage, INSPECT_FLAG } from '../support/inspector.js';
import { sleep, withTimeout } from '../support/wait.js';

type Settings = Record<string, unknown>;

function merge(base: Settings, over: Settings): Settings {
  const out: Settings = { ...base };
  for (const [k, v] of Object.entries(over)) {
    const b = out[k];
    out[k] = v && typeof v === 'object' && !Array.isArray(v) && b && typeof b === 'object' && !Array.isArray(b) ? merge(b as Settings, v as Settings) : v;
  }
  return out;
}

/**
 * Quiet logs (Warning) except the root category, whose Information line "listening on" spawnService
 * waits for; MQTT off; nothing listens at the upstream unless a test says where it is; room for many
 * devices; short upstream connect limit so a dead upstream fails a start quickly.
 */
const BASE_SETTINGS: Settings = {
  Logging: { LogLevel: { Default: 'Warning', App: 'Information', 'Microsoft.AspNetCore': 'Warning' } },
  VoiceService: { ServerUrl: 'ws://127.0.0.1:9/voice', ConnectTimeout: '00:00:02' },
  DeviceManagement: { MaxDevices: 1000 },
  Mqtt: { BrokerAddress: '' },
};

export interface DaemonOptions {
  /** Merged over BASE_SETTINGS into the daemon's config file. */
  settings?: Settings;
  /** Reuse a data dir (restart after a kill). */
  dataDir?: string;
}

export interface Daemon {
  readonly svc: SpawnedService;
  readonly pid: number;
  readonly url: string;
  readonly port: number;
  readonly dataDir: string;
  /** VmRSS from /proc/<pid>/status, in MiB. */
  rssMb(): number;
  /** Entries of /proc/<pid>/fd (sockets, pipes, files). */
  fds(): number;
  alive(): boolean;
  /** Log lines at Error or Critical level (a 500, a crash of the hub reader, ...). */
  failures(): string[];
  /** Why it is not running: exit code or signal, and whether its native addon was rewritten meanwhile. */
  death(): string;
  /** SIGTERM and wait for the exit code. */
  stop(): Promise<number | null>;
  /** A full garbage collection in the daemon, through its inspector on loopback. */
  collectGarbage(): Promise<void>;
}

const ADDON = path.join(ROOT, 'dist/native/uws_linux_x64_115.node');
const addonStamp = (): string => {
  const st = statSync(ADDON);
  return `${st.ino}:${st.mtimeMs}`;
};

export async function startDaemon(options: DaemonOptions = {}): Promise<Daemon> {
  const dataDir = options.dataDir ?? tmpDir('voice-hub-hardening-');
  const configFile = path.join(tmpDir('voice-hub-hardening-config-'), 'appsettings.json');
  writeFileSync(configFile, JSON.stringify(merge(BASE_SETTINGS, options.settings ?? {})));
  const stamp = addonStamp();
  // The inspector (loopback, port chosen by the OS) lets the memory checks force a full GC before they
  // read RSS: without it, V8 shrinks a heap grown under load only when it decides to, and the check
  // measured the collector's mood on a busy machine as much as a leak.
  const svc = await spawnService(['--config', configFile, '--data-dir', dataDir], { NODE_OPTIONS: INSPECT_FLAG });
  const pid = svc.proc.pid!;
  const alive = (): boolean => svc.proc.exitCode === null && svc.proc.signalCode === null;
  return {
    svc,
    pid,
    url: svc.url,
    port: svc.port,
    dataDir,
    rssMb: () => {
      const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
      if (!m) throw new Error(`no VmRSS for ${pid}`);
      return Number(m[1]) / 1024;
    },
    fds: () => readdirSync(`/proc/${pid}/fd`).length,
    alive,
    death: () => {
      const { exitCode, signalCode } = svc.proc;
      // Rewriting the mapped addon in place kills a running service with SIGSEGV (build.mjs now renames).
      const rewritten = addonStamp() !== stamp ? ' (dist/native was rewritten while it ran: a concurrent `node build.mjs`?)' : '';
      return `the service exited (code ${exitCode}, signal ${signalCode})${rewritten}`;
    },
    failures: () => svc.output().split('\n').filter((l) => /\b(fail|crit): /.test(l)),
    stop: async () => {
      if (alive()) svc.proc.kill('SIGTERM');
      return withTimeout(svc.exited, 15_000, 'daemon exit after SIGTERM');
    },
    collectGarbage: () => collectGarbage(svc.output()),
  };
}

/** The daemon is still running and wrote no Error/Critical line. */
export function assertHealthyProcess(d: Daemon): void {
  assert.ok(d.alive(), `${d.death()}:\n${d.svc.output().slice(-4000)}`);
  assert.deepEqual(d.failures(), [], 'the service logged errors');
}

/**
 * RSS after load and a forced full GC, compared with `baselineMb` (taken the same way by settledRss).
 * Freed pages still go back to the system at the allocator's pace, so we poll for up to `settleMs` and
 * pass as soon as RSS is within `marginMb`. A leak proportional to the load stays above the margin
 * however long we wait.
 */
export async function assertMemoryReturns(d: Daemon, baselineMb: number, marginMb: number, settleMs = 10_000): Promise<number> {
  await d.collectGarbage();
  let last = d.rssMb();
  const deadline = Date.now() + settleMs;
  while (last > baselineMb + marginMb && Date.now() < deadline) {
    await sleep(250);
    last = d.rssMb();
  }
  assert.ok(last <= baselineMb + marginMb, `RSS ${last.toFixed(1)} MiB did not return within ${marginMb} MiB of the baseline ${baselineMb.toFixed(1)} MiB`);
  return last;
}

/** RSS after a forced full GC, once it stops moving by more than 1 MiB between samples 250 ms apart (bounded by `ms`). */
export async function settledRss(d: Daemon, ms = 3000): Promise<number> {
  await d.collectGarbage();
  let prev = d.rssMb();
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    await sleep(250);
    const now = d.rssMb();
    if (Math.abs(now - prev) < 1) return now;
    prev = now;
  }
  return prev;
}

export async function adminTokenFor(dataDir: string): Promise<string> {
  const res = await runBundle(['token', 'admin', '--ttl', '1h', '--data-dir', dataDir]);
  assert.equal(res.code, 0, res.stderr);
  return res.stdout.trim();
}

let deviceCounter = 0;

/** Registers a device through the API: its id and token. */
export async function registerDevice(url: string, id = `hd-${process.pid}-${++deviceCounter}`): Promise<{ id: string; token: string }> {
  const res = await call(url, 'POST', '/api/device/register', { body: { deviceId: id, deviceName: id, deviceType: 'speaker' } });
  assert.equal(res.status, 200, `register ${id}: ${res.text}`);
  return { id, token: res.json.deviceToken };
}

export interface StartedSession {
  readonly deviceId: string;
  readonly token: string;
  readonly sessionId: string;
}

/** Registers a device and starts a session for it (the upstream must be reachable). */
export async function startSession(url: string, sessionConfig: Record<string, unknown> = {}): Promise<StartedSession> {
  const device = await registerDevice(url);
  const res = await call(url, 'POST', '/api/voice/start', {
    token: device.token,
    body: { deviceId: device.id, userId: 'anna', sessionConfig: { audioFormat: 'opus', ...sessionConfig } },
  });
  assert.equal(res.status, 200, `start for ${device.id}: ${res.text}`);
  return { deviceId: device.id, token: device.token, sessionId: res.json.sessionId };
}

/** The speech fixture: 100 real 20 ms Opus packets at 16 kHz mono. */
export function speechPackets(): Buffer[] {
  const file = new URL('../fixtures/speech-16k-mono.packets.json', import.meta.url);
  return (JSON.parse(readFileSync(file, 'utf8')) as string[]).map((b64) => Buffer.from(b64, 'base64'));
}

export interface EchoRig {
  readonly daemon: Daemon;
  readonly session: StartedSession;
  stop(): Promise<void>;
}

/** The built service with the echo voice server as its upstream, and one started session. */
export async function startEchoRig(): Promise<EchoRig> {
  const echo = await startEchoServer({ host: '127.0.0.1', port: 0, logger: silentLogger });
  const daemon = await startDaemon({ settings: { VoiceService: { ServerUrl: `ws://127.0.0.1:${echo.port}/voice` } } });
  const session = await startSession(daemon.url);
  return {
    daemon,
    session,
    stop: async () => {
      await daemon.stop();
      await echo.close();
    },
  };
}
