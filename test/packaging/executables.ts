// Runs the single executables of `make binaries` (dist/voice-hub-linux-*): x64 natively, ARM under
// qemu-user with Debian's cross libraries as the target's root. Shared by the per-platform smoke tests.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { after, describe, it, type TestContext } from 'node:test';
import { call } from '../support/http.js';
import { ROOT, runProcess } from '../support/service.js';
import { tmpDir } from '../support/tmp.js';

export type Platform = 'x64' | 'arm64' | 'armv7';

const EMULATORS: Record<Platform, string[]> = {
  x64: [],
  arm64: ['qemu-aarch64', '-L', '/usr/aarch64-linux-gnu'],
  armv7: ['qemu-arm', '-L', '/usr/arm-linux-gnueabihf'],
};
const NODE_ARCH: Record<Platform, string> = { x64: 'x64', arm64: 'arm64', armv7: 'arm' };
/** Emulated start-up of a 70 MB executable on a shared 2-core machine: generous, still bounded. */
const START_TIMEOUT_MS = 90_000;

export function executable(platform: Platform): string {
  return path.join(ROOT, 'dist', `voice-hub-linux-${platform}`);
}

function command(platform: Platform, args: string[]): [string, string[]] {
  const [emulator, ...rest] = EMULATORS[platform];
  return emulator ? [emulator, [...rest, executable(platform), ...args]] : [executable(platform), args];
}

/** A clean environment: nothing from this machine's Node setup may help the executable. */
function envFor(extra: Record<string, string>): NodeJS.ProcessEnv {
  return { PATH: '/usr/bin:/bin', HOME: process.env.HOME ?? '/tmp', ...extra };
}

export function runExecutable(platform: Platform, args: string[], env: Record<string, string>, cwd: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const [cmd, argv] = command(platform, args);
  return runProcess(cmd, argv, { cwd, env: envFor(env), timeoutMs: START_TIMEOUT_MS });
}

export interface RunningExecutable {
  readonly proc: ChildProcess;
  readonly url: string;
  /** Milliseconds from spawn to the first HTTP answer. */
  readonly firstAnswerMs: number;
  output(): string;
  /** Sends SIGTERM and resolves with the exit code. */
  stop(): Promise<number | null>;
}

/** Starts the service, waits for its listening line, then for its answer to `GET /health`. */
export async function startExecutable(platform: Platform, dataDir: string, env: Record<string, string>, cwd: string): Promise<RunningExecutable> {
  const started = performance.now();
  const [cmd, argv] = command(platform, ['--host', '127.0.0.1', '--port', '0', '--data-dir', dataDir]);
  const proc = spawn(cmd, argv, { cwd, env: envFor(env), stdio: ['ignore', 'pipe', 'pipe'] });
  after(() => {
    if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL');
  });
  let out = '';
  const exited = new Promise<number | null>((resolve) => proc.on('exit', (code) => resolve(code)));
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${platform}: not listening within ${START_TIMEOUT_MS} ms:\n${out}`)), START_TIMEOUT_MS);
    const onData = (d: Buffer): void => {
      out += d.toString();
      const m = /listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(Number(m[1]));
      }
    };
    proc.stdout!.on('data', onData);
    proc.stderr!.on('data', onData);
    proc.on('error', reject);
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`${platform}: exited with ${code} before listening:\n${out}`));
    });
  });
  const url = `http://127.0.0.1:${port}`;
  const health = await call(url, 'GET', '/health');
  const firstAnswerMs = performance.now() - started;
  assert.ok([200, 503].includes(health.status), `GET /health answered ${health.status}: ${health.text}`);
  assert.match(String(health.json?.status), /^(Healthy|Degraded|Unhealthy)$/);
  // The Swagger UI files travel inside the executable as assets.
  const ui = await call(url, 'GET', '/swagger/swagger-ui-bundle.js');
  assert.equal(ui.status, 200, `swagger asset: ${ui.status}`);
  assert.ok(ui.text.length > 100_000);
  return {
    proc,
    url,
    firstAnswerMs,
    output: () => out,
    stop: () => {
      proc.kill('SIGTERM');
      return exited;
    },
  };
}

/** Resident memory of a process in KiB, from /proc. */
export function rssKiB(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) : NaN;
}

/**
 * The smoke test every executable passes: it reports its version and a native uWS addon unpacked into
 * the cache dir, starts on an empty data dir, answers, registers a device, stops cleanly on SIGTERM,
 * and after a restart still lists that device to an admin token it minted itself.
 */
export function smokeTest(platform: Platform): void {
  describe(`voice-hub-linux-${platform}${EMULATORS[platform].length ? ' (under qemu-user)' : ''}`, () => {
    const version = (JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;

    it('reports its version, runtime and the native uWS addon it unpacked', async () => {
      assert.ok(existsSync(executable(platform)), `${executable(platform)} is missing: run make binaries`);
      const cwd = tmpDir();
      const cache = path.join(cwd, 'cache');
      // As systemd's CacheDirectory= sets it; the folder exists, owned by the service user, mode 0700.
      const res = await runExecutable(platform, ['--version'], { CACHE_DIRECTORY: cache }, cwd);
      assert.equal(res.code, 0, res.stderr);
      assert.match(res.stdout, new RegExp(`^voice-hub ${version.replace(/\./g, '\\.')}$`, 'm'));
      assert.match(res.stdout, new RegExp(`^platform linux-${NODE_ARCH[platform]}$`, 'm'));
      assert.match(res.stdout, new RegExp(`^uWebSockets\\.js native \\(${cache}/uws_linux_${NODE_ARCH[platform]}_115-[0-9a-f]{16}\\.node\\)$`, 'm'));
      assert.equal(readdirSync(cache).length, 1, 'one addon, no temp files left behind');
    });

    it('keeps a registered device across a restart', async (t: TestContext) => {
      const cwd = tmpDir();
      const dataDir = path.join(cwd, 'data');
      // No CACHE_DIRECTORY: the addon goes to a private folder in TMPDIR.
      const env = { TMPDIR: cwd };
      const first = await startExecutable(platform, dataDir, env, cwd);
      t.diagnostic(`${platform}: first HTTP answer ${first.firstAnswerMs.toFixed(0)} ms after spawn${EMULATORS[platform].length ? ' (emulated)' : ''}`);
      if (platform === 'x64') t.diagnostic(`x64: RSS after start ${rssKiB(first.proc.pid!)} KiB`);
      assert.match(first.output(), new RegExp(`native addon loaded from ${cwd}/voice-hub-\\d+/uws_linux_`));
      const reg = await call(first.url, 'POST', '/api/device/register', { body: { deviceId: `pi-${platform}`, deviceName: 'Smoke test', deviceType: 'speaker' } });
      assert.equal(reg.status, 200, reg.text);
      assert.equal(await first.stop(), 0, first.output());

      const token = await runExecutable(platform, ['token', 'admin', '--ttl', '1h', '--data-dir', dataDir], env, cwd);
      assert.equal(token.code, 0, token.stderr);
      const second = await startExecutable(platform, dataDir, env, cwd);
      const list = await call(second.url, 'GET', '/api/device/list', { token: token.stdout.trim() });
      assert.equal(list.status, 200, list.text);
      assert.deepEqual(
        list.json.devices.map((d: { id: string }) => d.id),
        [`pi-${platform}`],
      );
      assert.equal(await second.stop(), 0, second.output());
    });
  });
}
