// Runs the single executables of `make binaries` (dist/voice-hub-linux-*) the way users run them: each
// copied ALONE into an empty folder (no dist/, no node_modules anywhere up the tree), started from an
// empty working directory with an empty data dir, HOME and TMPDIR, on the C library of the systems it
// is for. The Node 24 builds (x64, arm64) on Debian 13's own libc6, libstdc++6 and libgcc-s1
// (scripts/debian-libs.mjs): x64 through that root's dynamic loader, arm64 under qemu-user with that
// root. The Node 20 `-legacy` builds on this Debian 12 machine's: x64 natively, ARM under qemu-user with
// Debian 12's cross libraries as the target's root. Shared by the per-platform test files.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { chmodSync, copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, describe, it, type TestContext } from 'node:test';
import { HttpTransportType, HubConnectionBuilder, LogLevel, type HubConnection } from '@microsoft/signalr';
import { MessagePackHubProtocol } from '@microsoft/signalr-protocol-msgpack';
import { call } from '../support/http.js';
import { copyBundle, ROOT, runProcess } from '../support/service.js';
import { startMosquitto } from '../support/mosquitto.js';
import { tmpDir } from '../support/tmp.js';
import { Subscriber } from '../mqtt/helpers.js';
import { audioArg, HubEvents } from '../support/voice.js';
import { comparePcm, referenceDecode, speechPackets } from '../voice/helpers.js';
import { sleep, waitUntil, withTimeout } from '../support/wait.js';
import { CODE_CACHE_DELAY_MS, isCodeCacheFile } from '../../src/runtime/code-cache.js';
import { debianLibs, SUITE as DEBIAN13 } from '../../scripts/debian-libs.mjs';
import { TARGETS, type Target } from '../../scripts/sea-runtime.mjs';
import { NODE_FLAGS } from '../../src/runtime/node-options.mjs';

/** A key of scripts/sea-runtime.mjs TARGETS: dist/voice-hub-linux-<platform>. */
export type Platform = 'x64' | 'arm64' | 'x64-legacy' | 'arm64-legacy' | 'armv7-legacy';

/** How an executable is started here: the wrapper before it, words for the test names, the library root it must use. */
interface Launcher {
  readonly wrapper: string[];
  readonly where: string;
  readonly libRoot?: string;
  /**
   * Whether the libraries it runs on include libopus0: the Debian 13 roots do (scripts/debian-libs.mjs), as
   * does this machine (make test installs it); Debian 12's cross libraries for qemu do not.
   */
  readonly libopus: boolean;
}

/** How each executable is started here. */
function launcher(platform: Platform): Launcher {
  switch (platform) {
    case 'x64': {
      const libs = debianLibs('amd64');
      return { wrapper: [libs.loader, '--library-path', libs.libDir], where: `on Debian 13 (${DEBIAN13}) libraries (${libs.versions.join(', ')})`, libRoot: libs.root, libopus: true };
    }
    case 'arm64': {
      const libs = debianLibs('arm64');
      return { wrapper: ['qemu-aarch64', '-L', libs.root], where: `under qemu-user on Debian 13 (${DEBIAN13}) libraries (${libs.versions.join(', ')})`, libRoot: libs.root, libopus: true };
    }
    case 'x64-legacy':
      return { wrapper: [], where: 'natively on Debian 12', libopus: true };
    case 'arm64-legacy':
      return { wrapper: ['qemu-aarch64', '-L', '/usr/aarch64-linux-gnu'], where: 'under qemu-user on Debian 12 libraries', libopus: false };
    case 'armv7-legacy':
      return { wrapper: ['qemu-arm', '-L', '/usr/arm-linux-gnueabihf'], where: 'under qemu-user on Debian 12 libraries', libopus: false };
  }
}
const launchers = new Map<Platform, Launcher>();
function launch(platform: Platform): Launcher {
  if (!launchers.has(platform)) launchers.set(platform, launcher(platform));
  return launchers.get(platform)!;
}
const emulated = (platform: Platform): boolean => launch(platform).wrapper[0]?.startsWith('qemu-') ?? false;

const TARGET = TARGETS as Record<Platform, Target>;
/** The uWS addon file an executable unpacks: its arch and its runtime's module ABI. */
const addonOf = (platform: Platform): string => `uws_linux_${TARGET[platform].uwsArch}_${TARGET[platform].abi}`;
/** Emulated start-up of an 80-95 MB executable on a shared 2-core machine: generous, still bounded. */
const START_TIMEOUT_MS = 90_000;
/** Hub calls of an emulated service answer within a few seconds; bounded all the same. */
const HUB_TIMEOUT_MS = 30_000;
const SWAGGER_UI = path.join(ROOT, 'node_modules/swagger-ui-dist');

export function executable(platform: Platform): string {
  return path.join(ROOT, 'dist', `voice-hub-linux-${platform}`);
}

/** An executable copied alone into an empty folder, with its own empty working, home, temp and data dirs. */
export interface Sandbox {
  readonly platform: Platform;
  /** `<root>/bin/voice-hub`, the only file of `<root>/bin`. */
  readonly exe: string;
  readonly cwd: string;
  readonly dataDir: string;
  readonly env: Record<string, string>;
  /** What was started in it: stopped before the sandbox is removed. */
  readonly procs: ChildProcess[];
}

/**
 * A sandbox for the running test, removed when that test ends, its processes killed first: each holds
 * a copy of an 80-115 MB executable, and a test file makes up to nine, too many to keep until it exits.
 */
export function sandbox(platform: Platform): Sandbox {
  const source = executable(platform);
  assert.ok(existsSync(source), `${source} is missing: run make binaries`);
  const root = tmpDir('voice-hub-alone-');
  // Nothing above the sandbox may hold what the executable should carry itself.
  for (let dir = root; ; dir = path.dirname(dir)) {
    assert.ok(!existsSync(path.join(dir, 'node_modules')), `${dir}/node_modules would spoil the test`);
    if (dir === path.dirname(dir)) break;
  }
  const dirs = Object.fromEntries(['bin', 'cwd', 'home', 'tmp', 'data'].map((d) => [d, path.join(root, d)]));
  for (const dir of Object.values(dirs)) mkdirSync(dir);
  const exe = path.join(dirs.bin!, 'voice-hub');
  const procs: ChildProcess[] = [];
  after(async () => {
    await Promise.all(procs.filter((p) => p.exitCode === null && p.signalCode === null).map((p) => {
      const gone = once(p, 'exit');
      p.kill('SIGKILL');
      return gone;
    }));
    rmSync(root, { recursive: true, force: true });
  });
  copyFileSync(source, exe);
  chmodSync(exe, 0o755);
  return { platform, exe, cwd: dirs.cwd!, dataDir: dirs.data!, env: { PATH: '/usr/bin:/bin', HOME: dirs.home!, TMPDIR: dirs.tmp! }, procs };
}

function command(sb: Sandbox, args: string[]): [string, string[]] {
  const [wrapper, ...rest] = launch(sb.platform).wrapper;
  return wrapper ? [wrapper, [...rest, sb.exe, ...args]] : [sb.exe, args];
}

export function runExecutable(sb: Sandbox, args: string[], env: Record<string, string> = {}): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const [cmd, argv] = command(sb, args);
  return runProcess(cmd, argv, { cwd: sb.cwd, env: { ...sb.env, ...env }, timeoutMs: START_TIMEOUT_MS });
}

export interface RunningExecutable {
  readonly proc: ChildProcess;
  readonly url: string;
  /** Milliseconds from spawn to the answer of the first `GET /health`. */
  readonly firstAnswerMs: number;
  output(): string;
  /** Sends SIGTERM and resolves with the exit code. */
  stop(): Promise<number | null>;
}

/** Spawns `args` and resolves with the first match of `pattern` in its output (stdout and stderr). */
function spawnUntil(sb: Sandbox, args: string[], pattern: RegExp): Promise<{ proc: ChildProcess; match: RegExpExecArray; output: () => string; exited: Promise<number | null> }> {
  const [cmd, argv] = command(sb, args);
  const proc = spawn(cmd, argv, { cwd: sb.cwd, env: sb.env, stdio: ['ignore', 'pipe', 'pipe'] });
  sb.procs.push(proc);
  let out = '';
  const exited = new Promise<number | null>((resolve) => proc.on('exit', (code) => resolve(code)));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${sb.platform}: no ${pattern} within ${START_TIMEOUT_MS} ms:\n${out}`)), START_TIMEOUT_MS);
    const onData = (d: Buffer): void => {
      out += d.toString();
      const match = pattern.exec(out);
      if (match) {
        clearTimeout(timer);
        resolve({ proc, match, output: () => out, exited });
      }
    };
    proc.stdout!.on('data', onData);
    proc.stderr!.on('data', onData);
    proc.on('error', reject);
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`${sb.platform}: exited with ${code} before ${pattern}:\n${out}`));
    });
  });
}

/** Starts the service on port 0 of 127.0.0.1 and waits for its answer to `GET /health`. */
export async function startExecutable(sb: Sandbox, args: string[] = []): Promise<RunningExecutable> {
  const started = performance.now();
  const { proc, match, output, exited } = await spawnUntil(
    sb,
    // MQTT off unless the caller says where its broker is.
    ['--host', '127.0.0.1', '--port', '0', '--data-dir', sb.dataDir, ...(args.includes('--Mqtt.BrokerAddress') ? [] : ['--Mqtt.BrokerAddress', '']), ...args],
    /listening on http:\/\/127\.0\.0\.1:(\d+)/,
  );
  const url = `http://127.0.0.1:${match[1]}`;
  const health = await call(url, 'GET', '/health');
  const firstAnswerMs = performance.now() - started;
  // 503 is fine: no voice server listens. The database (sql.js' wasm, the data dir) must be healthy.
  assert.ok([200, 503].includes(health.status), `GET /health answered ${health.status}: ${health.text}`);
  assert.match(health.headers.get('content-type') ?? '', /^application\/json/);
  assert.equal(health.json?.entries?.database?.status, 'Healthy', health.text);
  return {
    proc,
    url,
    firstAnswerMs,
    output,
    stop: () => {
      proc.kill('SIGTERM');
      return exited;
    },
  };
}

/** `GET /swagger`, two of its files byte for byte as swagger-ui-dist has them, and the OpenAPI document. */
export async function checkSwagger(url: string, version: string): Promise<void> {
  const page = await call(url, 'GET', '/swagger');
  assert.equal(page.status, 200, page.text);
  assert.match(page.headers.get('content-type') ?? '', /^text\/html/);
  assert.match(page.text, /<script src="\/swagger\/swagger-ui-bundle\.js"/);
  for (const name of ['swagger-ui.css', 'swagger-ui-bundle.js']) {
    const res = await fetch(`${url}/swagger/${name}`, { headers: { 'accept-encoding': 'identity' }, signal: AbortSignal.timeout(30_000) });
    const body = Buffer.from(await res.arrayBuffer());
    assert.equal(res.status, 200, `${name}: ${body.toString().slice(0, 300)}`);
    assert.ok(body.equals(readFileSync(path.join(SWAGGER_UI, name))), `${name}: the bytes of swagger-ui-dist`);
  }
  const doc = await call(url, 'GET', '/swagger/v1/swagger.json');
  assert.equal(doc.status, 200, doc.text);
  assert.equal(doc.json.openapi, '3.0.3');
  assert.equal(doc.json.info.version, version);
  assert.ok(doc.json.paths['/health'] && doc.json.paths['/api/device/register'], Object.keys(doc.json.paths).join(', '));
}

async function registerDevice(url: string, deviceId: string): Promise<string> {
  const reg = await call(url, 'POST', '/api/device/register', { body: { deviceId, deviceName: 'Packaging test', deviceType: 'speaker' } });
  assert.equal(reg.status, 200, reg.text);
  assert.equal(typeof reg.json.deviceToken, 'string', reg.text);
  return reg.json.deviceToken as string;
}

/** The official client: negotiate, then WebSockets only, then the SignalR handshake. */
async function connectHub(url: string, protocol: 'json' | 'messagepack'): Promise<{ connection: HubConnection; events: HubEvents }> {
  let builder = new HubConnectionBuilder()
    .withUrl(`${url}/voice-hub`, { transport: HttpTransportType.WebSockets })
    .configureLogging(LogLevel.None);
  if (protocol === 'messagepack') builder = builder.withHubProtocol(new MessagePackHubProtocol());
  const connection = builder.build();
  const events = new HubEvents(connection);
  after(() => connection.stop());
  await withTimeout(connection.start(), HUB_TIMEOUT_MS, 'hub client start');
  assert.ok(connection.connectionId, 'negotiated: the server gave a connection id');
  return { connection, events };
}

/** A hub session: JoinSession with a real device token for a session that does not exist gets `Error`. */
export async function checkHub(url: string, deviceId: string, protocol: 'json' | 'messagepack' = 'json'): Promise<void> {
  const token = await registerDevice(url, deviceId);
  const { connection, events } = await connectHub(url, protocol);
  assert.equal(await withTimeout(connection.invoke('JoinSession', 'no-such-session', token), HUB_TIMEOUT_MS, 'JoinSession'), null);
  assert.deepEqual(await events.waitFor('Error', 1, HUB_TIMEOUT_MS), ["session 'no-such-session' does not exist"]);
  assert.deepEqual(events.of('SessionJoined'), []);
  await connection.stop();
}

/** Resident memory of a process in KiB, from /proc. */
export function rssKiB(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) : NaN;
}

const packageVersion = (): string => (JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;
const describeName = (platform: Platform): string => `voice-hub-linux-${platform} copied alone into an empty folder, ${launch(platform).where}`;

/**
 * What every executable must do on its own: start on an empty data dir and answer /health (database
 * Healthy), Swagger UI and its document, and a hub session. Kept to one start: under qemu each costs seconds.
 */
export function aloneTest(platform: Platform): void {
  describe(describeName(platform), () => {
    it('starts, answers /health, /swagger with its files and document, and a hub session', async (t: TestContext) => {
      const sb = sandbox(platform);
      const svc = await startExecutable(sb);
      t.diagnostic(`${platform}: GET /health answered ${svc.firstAnswerMs.toFixed(0)} ms after spawn${emulated(platform) ? ' (emulated)' : ''}`);
      assert.match(svc.output(), new RegExp(`native addon loaded from ${sb.env.TMPDIR}/voice-hub-\\d+/${addonOf(platform)}-[0-9a-f]{16}\\.node`));
      // Our Opus addon loads from inside the executable; it decodes with the system libopus where there is
      // one, and where not, the reason is the dynamic loader's (the addon itself loaded and asked for it).
      if (launch(platform).libopus) assert.match(svc.output(), /Opus decoding: libopus 1\.[\d.]+ \(system library, on up to \d+ decoder threads?\)\n/);
      else assert.match(svc.output(), /Opus: libopus\.so\.0 cannot be used \(libopus\.so\.0: cannot open shared object file: No such file or directory\); the bundled wasm libopus decodes instead/);
      const { libRoot } = launch(platform);
      if (libRoot) {
        // The C library mapped into the process is the one of that root; natively no other (qemu-user
        // itself, a program of this machine, maps this machine's too).
        const libc = readFileSync(`/proc/${svc.proc.pid}/maps`, 'utf8').split('\n').map((l) => l.split(/\s+/)[5] ?? '').filter((f) => /\/libc\.so\.6$/.test(f));
        const ours = (f: string): boolean => f.startsWith(`${libRoot}/`);
        assert.ok(libc.some(ours) && (emulated(platform) || libc.every(ours)), `libc.so.6 mapped from ${[...new Set(libc)].join(', ') || 'nowhere'}`);
      }
      await checkSwagger(svc.url, packageVersion());
      await checkHub(svc.url, `pi-${platform}`);
      assert.equal(await svc.stop(), 0, svc.output());
      assert.deepEqual(readdirSync(path.dirname(sb.exe)), ['voice-hub'], 'nothing was written beside the executable');
    });

    const legacy = TARGETS[platform]!.legacy;
    it(legacy ? "takes Node's options from NODE_OPTIONS only: a Node 20 executable cannot carry them" : "carries Node's options inside (its sea-config's execArgv)", async () => {
      const sb = sandbox(platform);
      // Loaded before the program (`--version` then exits at once): what node was started with.
      const preload = path.join(sb.env.TMPDIR!, 'exec-argv.cjs');
      const seen = path.join(sb.env.TMPDIR!, 'exec-argv.json');
      writeFileSync(preload, `require('node:fs').writeFileSync(${JSON.stringify(seen)}, JSON.stringify(process.execArgv));\n`);
      const res = await runExecutable(sb, ['--version'], { NODE_OPTIONS: `--require ${preload}` });
      assert.equal(res.code, 0, res.stderr);
      assert.match(res.stdout, new RegExp(`^voice-hub ${packageVersion().replaceAll('.', '\\.')}\n`));
      // NODE_OPTIONS is not part of execArgv: this is what the executable itself adds.
      assert.deepEqual(JSON.parse(readFileSync(seen, 'utf8')), legacy ? [] : [...NODE_FLAGS]);
    });

    it('refuses to start when the assets appended to it are cut off, and never looks beside it for them', async () => {
      const sb = sandbox(platform);
      const bytes = readFileSync(sb.exe);
      writeFileSync(sb.exe, bytes.subarray(0, bytes.length - 24)); // the payload's trailer
      // The program and the addon it needs, lying beside the executable as dist/ holds them: not to be used.
      const beside = path.dirname(sb.exe);
      copyBundle(beside);
      mkdirSync(path.join(beside, 'native'));
      copyFileSync(path.join(ROOT, 'dist', 'native', addonOf(platform) + '.node'), path.join(beside, 'native', addonOf(platform) + '.node'));
      const res = await runExecutable(sb, ['--port', '0', '--data-dir', sb.dataDir]);
      assert.equal(res.code, 1, res.stderr);
      // The executable's loader (src/runtime/sea-main.ts) finds the program itself among the assets.
      assert.equal(res.stderr, `start-up failed: ${sb.exe} carries no assets: the payload the build appends after the program is missing (was the file stripped or cut short?)\n`);
    });
  });
}

/**
 * x64 runs at native speed, so it goes further: its version and unpacked addon, and a device kept across
 * a restart with an admin token it minted itself, MessagePack on the hub.
 */
export function nativeTest(platform: Platform): void {
  describe(`${describeName(platform)}: version and restart`, () => {
    it('reports its version, runtime and the native uWS addon it unpacked into CACHE_DIRECTORY', async () => {
      const sb = sandbox(platform);
      const cache = path.join(sb.cwd, 'cache');
      const res = await runExecutable(sb, ['--version'], { CACHE_DIRECTORY: cache });
      assert.equal(res.code, 0, res.stderr);
      assert.match(res.stdout, new RegExp(`^voice-hub ${packageVersion().replace(/\./g, '\\.')}$`, 'm'));
      assert.match(res.stdout, new RegExp(`^platform linux-${TARGET[platform].uwsArch}$`, 'm'));
      assert.match(res.stdout, new RegExp(`^node v${TARGET[platform].pkg.split('@')[1]!.replace(/\./g, '\\.')}$`, 'm'));
      assert.match(res.stdout, new RegExp(`^uWebSockets\\.js native \\(${cache}/${addonOf(platform)}-[0-9a-f]{16}\\.node\\)$`, 'm'));
      assert.deepEqual(readdirSync(cache).length, 1, 'one addon, no temp files left behind');
    });

    it('unpacks its addon under the working directory when CACHE_DIRECTORY or TMPDIR is relative', async () => {
      const sb = sandbox(platform);
      const cases: [Record<string, string>, string][] = [
        [{ CACHE_DIRECTORY: 'cache' }, path.join(sb.cwd, 'cache')],
        [{ TMPDIR: 'tmp' }, path.join(sb.cwd, 'tmp', `voice-hub-${process.getuid!()}`)],
      ];
      for (const [env, dir] of cases) {
        const res = await runExecutable(sb, ['--version'], env);
        assert.equal(res.code, 0, res.stderr);
        assert.match(res.stdout, new RegExp(`^uWebSockets\\.js native \\(${dir}/${addonOf(platform)}-[0-9a-f]{16}\\.node\\)$`, 'm'), res.stdout);
      }
    });

    it('names the cache directory and what to do when the addon cannot be unpacked there', async () => {
      const sb = sandbox(platform);
      const notADir = path.join(sb.cwd, 'cache-file');
      writeFileSync(notADir, 'a file, not a directory');
      const res = await runExecutable(sb, ['--version'], { CACHE_DIRECTORY: notADir });
      assert.match(
        res.stdout,
        new RegExp(`^uWebSockets\\.js NOT LOADED: .*cannot unpack native/${addonOf(platform)}\\.node into the cache directory ${notADir} \\(EEXIST: file already exists, mkdir '${notADir}'\\): it must be a writable directory of this user that nobody else can write; set CACHE_DIRECTORY \\(systemd's CacheDirectory=\\) or TMPDIR to one$`, 'm'),
        res.stdout,
      );
    });

    // x64 runs through Debian 13's dynamic loader (as on a machine whose own glibc is too old): there
    // process.execPath names the loader, and the folder beside the program is still the executable's.
    it(`reads config/appsettings.json beside its folder when the working directory has none${launch(platform).wrapper.length ? ', though started through a dynamic loader' : ''}`, async () => {
      const sb = sandbox(platform);
      const root = path.dirname(path.dirname(sb.exe));
      mkdirSync(path.join(root, 'config'));
      writeFileSync(path.join(root, 'config', 'appsettings.json'), '{ "Server": { "Port": 5123 } }\n');
      const res = await runExecutable(sb, ['config', 'check', '--Mqtt.BrokerAddress', '']);
      assert.equal(res.code, 0, res.stderr);
      assert.equal(res.stdout.split('\n')[0], `# configuration file: ${root}/config/appsettings.json`);
      assert.match(res.stdout, /^Server\.Port = 5123 {2}\(file\)$/m);
    });

    it('keeps a registered device across a restart, and speaks MessagePack on the hub', async (t: TestContext) => {
      const sb = sandbox(platform);
      const first = await startExecutable(sb);
      t.diagnostic(`${platform}: GET /health answered ${first.firstAnswerMs.toFixed(0)} ms after spawn; RSS ${rssKiB(first.proc.pid!)} KiB`);
      await checkHub(first.url, `pi-${platform}`, 'messagepack');
      assert.equal(await first.stop(), 0, first.output());

      const token = await runExecutable(sb, ['token', 'admin', '--ttl', '1h', '--data-dir', sb.dataDir]);
      assert.equal(token.code, 0, token.stderr);
      const second = await startExecutable(sb);
      const list = await call(second.url, 'GET', '/api/device/list', { token: token.stdout.trim() });
      assert.equal(list.status, 200, list.text);
      assert.deepEqual(list.json.devices.map((d: { id: string }) => d.id), [`pi-${platform}`]);
      assert.equal(await second.stop(), 0, second.output());
    });

    it('starts from the code cache of the program it wrote in CACHE_DIRECTORY at its last start', async (t: TestContext) => {
      const plain = sandbox(platform);
      const cache = path.join(plain.cwd, 'cache');
      const sb = { ...plain, env: { ...plain.env, CACHE_DIRECTORY: cache } };
      const cacheFile = (): string | undefined => readdirSync(cache).find(isCodeCacheFile);
      const first = await startExecutable(sb);
      await waitUntil(() => existsSync(cache) && cacheFile() !== undefined, 'the code cache written', CODE_CACHE_DELAY_MS + 15_000, 100);
      assert.equal(await first.stop(), 0, first.output());
      const written = statSync(path.join(cache, cacheFile()!));

      const second = await startExecutable(sb);
      t.diagnostic(`${platform}: GET /health answered ${first.firstAnswerMs.toFixed(0)} ms after spawn without the cache, ${second.firstAnswerMs.toFixed(0)} ms with it`);
      await checkHub(second.url, `cached-${platform}`);
      await sleep(CODE_CACHE_DELAY_MS + 2_000);
      const now = statSync(path.join(cache, cacheFile()!));
      // Written again only when V8 refused it.
      assert.deepEqual([now.ino, now.mtimeMs], [written.ino, written.mtimeMs], 'the cache was taken');
      assert.equal(await second.stop(), 0, second.output());
      assert.doesNotMatch(second.output(), /warning/);
    });

    it('talks MQTT and runs the simulator with the parts of the program it carries (mqtt.js, the SignalR client)', async () => {
      const sb = sandbox(platform);
      const broker = await startMosquitto();
      const sub = await Subscriber.connect(broker.port, ['#']);
      try {
        const echo = await spawnUntil(sb, ['echo-server', '--host', '127.0.0.1', '--port', '0'], /listening on ws:\/\/127\.0\.0\.1:(\d+)\/voice/);
        const svc = await startExecutable(sb, ['--Mqtt.BrokerAddress', '127.0.0.1', '--Mqtt.Port', String(broker.port), '--VoiceService.ServerUrl', `ws://127.0.0.1:${echo.match[1]}/voice`]);
        await sub.waitFor((m) => m.payload === 'online' && m.topic.endsWith('/status'), 'the hub publishing that it is online');
        const sim = await runExecutable(sb, ['simulate', '--url', svc.url, '--devices', '1', '--seconds', '1', '--protocol', 'messagepack']);
        assert.equal(sim.code, 0, sim.stdout + sim.stderr);
        assert.match(sim.stdout, /^packets +50 +50 +0 +0 +0$/m);
        assert.match(sim.stderr, /1 device\(s\) streaming 50 packets each/, 'its progress goes to stderr');
        assert.doesNotMatch(sim.stderr, /warn|error/i);
        assert.equal(await svc.stop(), 0, svc.output());
        assert.doesNotMatch(svc.output(), /warn/i);
        echo.proc.kill('SIGTERM');
        assert.equal(await echo.exited, 0, echo.output());
      } finally {
        await sub.end();
        await broker.stop();
      }
    });

  });
}

/**
 * The hub end to end: a voice round trip against the executable's own echo-server, its Opus decoded inside
 * the executable sample-exact with libopus, every way of decoding: the system libopus (the one of the
 * library root these run on: each has libopus0) through the executable's addon, and the bundled wasm
 * libopus (OpusLibrary ""), each on a decoder thread and on the event loop. The wasm decoder is two
 * parts of the program inside the executable (parts/opus-decoder.cjs inline, parts/decode-worker.cjs,
 * which a Worker evaluates, on a thread), compiled from the payload when first used.
 */
export function voiceTest(platform: Platform): void {
  describe(`${describeName(platform)}: the hub end to end`, () => {
    for (const library of ['libopus.so.0', '']) for (const threads of [1, 0]) it(`decodes Opus inside the executable with ${library ? 'the system libopus' : 'the bundled wasm libopus'} (DecoderThreads ${threads}): a voice round trip through its own echo-server`, async () => {
      const sb = sandbox(platform);
      const echo = await spawnUntil(sb, ['echo-server', '--host', '127.0.0.1', '--port', '0'], /listening on ws:\/\/127\.0\.0\.1:(\d+)\/voice/);
      const svc = await startExecutable(sb, ['--VoiceService.ServerUrl', `ws://127.0.0.1:${echo.match[1]}/voice`, '--VoiceService.DecoderThreads', String(threads), '--VoiceService.OpusLibrary', library]);
      const where = threads === 0 ? 'inline on the event loop' : 'on up to 1 decoder thread';
      const engine = library ? `libopus 1\\.[\\d.]+ \\(system library, ${where}\\)` : `the bundled wasm libopus \\(${where}\\)`;
      assert.match(svc.output(), new RegExp(`Opus decoding: ${engine}\n`));
      assert.doesNotMatch(svc.output(), /Opus: .* cannot be used/);
      const deviceId = `pi-${platform}-voice`;
      const token = await registerDevice(svc.url, deviceId);
      const start = await call(svc.url, 'POST', '/api/voice/start', { body: { deviceId, userId: 'user-1' }, token });
      assert.equal(start.status, 200, start.text);
      const sessionId = start.json.sessionId as string;
      const { connection, events } = await connectHub(svc.url, 'json');
      await connection.invoke('JoinSession', sessionId, token);
      assert.deepEqual(await events.waitFor('SessionJoined', 1, HUB_TIMEOUT_MS), [sessionId]);
      const packets = speechPackets().slice(0, 10);
      for (const p of packets) await connection.invoke('SendAudioData', sessionId, audioArg(p));
      assert.deepEqual(
        await events.waitFor('AudioProcessed', packets.length, HUB_TIMEOUT_MS),
        packets.map((p, i) => ({ sessionId, sequence: i + 1, bytes: p.length, durationMs: 20 })),
      );
      const pcm = Buffer.concat((await events.waitFor('AudioResponse', packets.length, HUB_TIMEOUT_MS)).map((r) => Buffer.from(r as string, 'base64')));
      const cmp = comparePcm(Buffer.concat(referenceDecode(packets, 16000, 1)), pcm);
      assert.equal(cmp.differing, 0, `sample-exact with native libopus: ${JSON.stringify(cmp)}`);
      assert.deepEqual(events.of('Error'), []);
      await connection.stop();
      assert.equal(await svc.stop(), 0, svc.output());
      echo.proc.kill('SIGTERM');
      assert.equal(await echo.exited, 0, echo.output());
    });
  });
}
