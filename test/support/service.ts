// Running the real service for tests: in-process (createApp on port 0) or as the built bundle in a
// child process (start-up, signals, durability). Both talk HTTP on 127.0.0.1 only.
import { spawn, type ChildProcess } from 'node:child_process';
import { copyFileSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after } from 'node:test';
import { createApp, type RunningApp } from '../../src/app.js';
import { loadConfig } from '../../src/config/load.js';
import { PROGRAM_ASSET, runtimeAssets, SEA_MAIN } from '../../src/runtime/asset-manifest.mjs';
import type { LoadedConfig } from '../../src/config/types.js';
import { createLogger } from '../../src/log/logger.js';
import { tmpDir } from './tmp.js';

// Everything started here is stopped when the test file ends (registered once, on the root).
const cleanups: Array<() => unknown> = [];
after(async () => {
  for (const fn of cleanups.reverse()) await fn();
});

export const ROOT = path.resolve(import.meta.dirname, '../..');
export const BUNDLE = path.join(ROOT, 'dist/voice-hub.cjs');
/** The program the bundle's launcher runs (src/runtime/bundle-main.ts). */
export const PROGRAM = path.join(ROOT, 'dist', PROGRAM_ASSET);

/** The bundle's launcher and the program it runs, copied into `dir` without any asset; returns the launcher's path there. */
export function copyBundle(dir: string): string {
  copyFileSync(PROGRAM, path.join(dir, PROGRAM_ASSET));
  copyFileSync(BUNDLE, path.join(dir, 'voice-hub.cjs'));
  return path.join(dir, 'voice-hub.cjs');
}

/**
 * The bundle and its assets (program parts included) copied to a fresh folder with no node_modules
 * around it, minus asset `without`; returns the folder that holds voice-hub.cjs.
 */
export function copyBuild(without?: string): string {
  const dir = path.join(tmpDir('voice-hub-bundle-'), 'dist');
  mkdirSync(dir);
  copyFileSync(BUNDLE, path.join(dir, 'voice-hub.cjs'));
  copyFileSync(path.join(ROOT, 'dist', SEA_MAIN), path.join(dir, SEA_MAIN));
  for (const { name } of runtimeAssets(process.arch, process.versions.modules)) {
    if (name === without) continue;
    mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
    copyFileSync(path.join(ROOT, 'dist', name), path.join(dir, name));
  }
  return dir;
}

export interface ServiceOptions {
  /** Contents of the configuration file (merged over nothing: keys not given keep their defaults). */
  file?: Record<string, unknown>;
  env?: Record<string, string>;
  flags?: Record<string, unknown>;
  dataDir?: string;
}

export interface TestService {
  readonly url: string;
  readonly port: number;
  readonly dataDir: string;
  readonly app: RunningApp;
  readonly loaded: LoadedConfig;
  readonly logs: string[];
  stop(): Promise<void>;
  /** What a second stop signal does (App.closeStore). */
  closeStore(): Promise<void>;
}

export function testConfig(opts: ServiceOptions = {}): { loaded: LoadedConfig; dataDir: string } {
  const dataDir = opts.dataDir ?? tmpDir();
  let file: string | undefined;
  if (opts.file) {
    // A folder of its own, removed with the test's other folders (not beside the data dir, where it outlived them).
    file = path.join(tmpDir('voice-hub-config-'), 'appsettings.json');
    writeFileSync(file, JSON.stringify(opts.file));
  }
  const loaded = loadConfig({
    file,
    env: opts.env ?? {},
    flags: {
      'Server.Host': '127.0.0.1',
      'Server.Port': 0,
      'Storage.DataDir': dataDir,
      // Nothing listens here unless a test starts an upstream; mqtt tests give their own broker.
      'VoiceService.ServerUrl': 'ws://127.0.0.1:9/voice',
      'Mqtt.Port': 9,
      ...opts.flags,
    },
  });
  return { loaded, dataDir };
}

/** The whole service in this process on an OS-chosen port; stopped when the test file ends. */
export async function startService(opts: ServiceOptions = {}): Promise<TestService> {
  const { loaded, dataDir } = testConfig(opts);
  const logs: string[] = [];
  const logger = createLogger({ levels: { Default: 'Debug' }, write: (l) => logs.push(l), journald: false });
  const app = createApp(loaded, { logger });
  const running = await app.start();
  cleanups.push(() => app.stop());
  return {
    url: `http://127.0.0.1:${running.port}`, port: running.port, dataDir, app: running, loaded, logs,
    stop: () => app.stop(), closeStore: () => app.closeStore(),
  };
}

export interface SpawnedService {
  readonly proc: ChildProcess;
  readonly port: number;
  readonly url: string;
  output(): string;
  /** Resolves with the exit code. */
  exited: Promise<number | null>;
}

/**
 * Runs the built bundle; resolves once it logs its listening address. `prefix`: a command that runs node
 * in its place (exec), e.g. `prlimit --nofile=256:256 --`.
 */
export function spawnService(args: string[], env: Record<string, string> = {}, timeoutMs = 15_000, prefix: string[] = []): Promise<SpawnedService> {
  const command = [...prefix, process.execPath, BUNDLE, '--host', '127.0.0.1', '--port', '0', ...args];
  const proc = spawn(command[0]!, command.slice(1), {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  const exited = new Promise<number | null>((resolve) => proc.on('exit', (code) => resolve(code)));
  cleanups.push(() => {
    if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL');
  });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`service did not start within ${timeoutMs} ms:\n${out}`)), timeoutMs);
    const onData = (d: Buffer): void => {
      out += d.toString();
      const m = /listening on http:\/\/(?:\[[^\]]+\]|[^:]+):(\d+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        const port = Number(m[1]);
        resolve({ proc, port, url: `http://127.0.0.1:${port}`, output: () => out, exited });
      }
    };
    proc.stdout!.on('data', onData);
    proc.stderr!.on('data', onData);
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`service exited with ${code} before listening:\n${out}`));
    });
  });
}

/** Runs a command to completion, killing it after `timeoutMs`. */
export function runProcess(
  cmd: string,
  args: string[],
  opts: { cwd?: string; env?: NodeJS.ProcessEnv; timeoutMs?: number } = {},
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const timeoutMs = opts.timeoutMs ?? 15_000;
  return new Promise((resolve, reject) => {
    const proc = spawn(cmd, args, { cwd: opts.cwd ?? ROOT, env: opts.env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    proc.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    proc.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => {
      proc.kill('SIGKILL');
      reject(new Error(`${cmd} ${args.join(' ')} did not finish within ${timeoutMs} ms:\n${stdout}${stderr}`));
    }, timeoutMs);
    proc.on('error', reject);
    proc.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/**
 * A command prefix (for runBundle and spawnService) that runs the program as systemd runs a unit's
 * with its stderr in the journal: JOURNAL_STREAM names the device and inode of its stderr, here the
 * test's pipe.
 */
export const AS_JOURNALD_UNIT = ['bash', '-c', 'JOURNAL_STREAM=$(stat -L -c %d:%i /proc/self/fd/2) exec "$0" "$@"'];

/** Runs the bundle to completion (for commands and start-up failures), after `prefix` when given. */
export function runBundle(
  args: string[],
  env: Record<string, string> = {},
  timeoutMs = 15_000,
  prefix: string[] = [],
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const [cmd, ...before] = [...prefix, process.execPath];
  return runProcess(cmd!, [...before, BUNDLE, ...args], {
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', ...env },
    timeoutMs,
  });
}
