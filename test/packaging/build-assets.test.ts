// The run-time assets of src/runtime/asset-manifest.mjs from the build's side: build.mjs and
// build-binaries.mjs refuse to build without one, naming it; the bundle copied with its files runs
// without node_modules, and copied without one of them fails at start-up naming the file and where it
// looked. The bundled CLI opens no file of yargs' translations.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { describe, it } from 'node:test';
import { DECODE_WORKER_PART, PROGRAM_PARTS, SQL_WASM, uwsAddonFileName } from '../../src/runtime/asset-manifest.mjs';
import { TARGETS } from '../../scripts/sea-runtime.mjs';
import { call } from '../support/http.js';
import { BUNDLE, copyBuild, copyBundle, PROGRAM, ROOT, runProcess } from '../support/service.js';
import { tmpDir } from '../support/tmp.js';

const ADDON = `native/${uwsAddonFileName(process.arch, process.platform, process.versions.modules)}`;

function runBundleIn(dir: string, args: string[], timeoutMs = 15_000): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const cwd = tmpDir();
  return runProcess(process.execPath, [path.join(dir, 'voice-hub.cjs'), ...args], { cwd, env: { PATH: '/usr/bin:/bin', HOME: cwd, TMPDIR: cwd }, timeoutMs });
}

describe('the program and its parts', () => {
  // V8 holds a script's whole source for the life of the process: what is in the program costs every
  // idle service, used or not. The source map names every file the build put into the program.
  it('the program carries none of the packages of its parts, nor the decoder threads\' code', () => {
    const sources = (JSON.parse(readFileSync(`${PROGRAM}.map`, 'utf8')) as { sources: string[] }).sources;
    assert.ok(sources.some((s) => s.includes('node_modules/ws/')), 'the list is real: it names ws');
    const packages = PROGRAM_PARTS.flatMap((p) => p.packages);
    assert.deepEqual(sources.filter((s) => packages.some((p) => s.includes(`node_modules/${p}/`)) || s.endsWith('decode-worker.ts')), []);
  });

  it('each part is a file of the build that exports its packages by name', () => {
    for (const part of PROGRAM_PARTS) {
      const file = path.join(ROOT, 'dist', part.name);
      const exported = createRequire(file)(file) as Record<string, unknown>;
      assert.deepEqual(Object.keys(exported), part.packages, part.name);
      for (const p of part.packages) assert.ok(exported[p] && typeof exported[p] === 'object', `${part.name}: ${p}`);
    }
    assert.ok(statSync(path.join(ROOT, 'dist', DECODE_WORKER_PART)).size > 0);
  });

  // readable-stream is Node's stream module republished for browsers: a part using it carried a second
  // copy of code the process has loaded anyway (0.8 MiB of an idle service's RSS with MQTT on).
  it('no part carries a copy of readable-stream: they use Node\'s own streams', () => {
    for (const part of PROGRAM_PARTS) {
      const text = readFileSync(path.join(ROOT, 'dist', part.name), 'utf8');
      // esbuild names each bundled CommonJS module by its path, whitespace-only minification or not.
      const modules = [...text.matchAll(/"(node_modules\/[^"]+\.[cm]?js)"\(/g)].map((m) => m[1]!);
      if (part.name === 'parts/mqtt.cjs') assert.ok(modules.some((m) => m.startsWith('node_modules/bl/')), 'the list is real: it names bl, which builds on streams');
      assert.deepEqual(modules.filter((m) => m.includes('node_modules/readable-stream/')), [], part.name);
    }
  });

  // The service hands mqtt.js its own size-checked socket, so the transports mqtt.js opens itself (TCP,
  // TLS, WebSocket with a second copy of ws, a SOCKS proxy client) were half of the part, never run.
  it('the MQTT part carries mqtt.js\' client and none of its transports', () => {
    const text = readFileSync(path.join(ROOT, 'dist', 'parts/mqtt.cjs'), 'utf8');
    const modules = [...text.matchAll(/"(node_modules\/[^"]+\.[cm]?js)"\(/g)].map((m) => m[1]!);
    assert.ok(modules.includes('node_modules/mqtt/build/lib/client.js'), 'the list is real: it names the client');
    assert.deepEqual(modules.filter((m) => /node_modules\/(mqtt\/build\/lib\/connect|ws|socks|ip-address)\//.test(m)), []);
  });

  // Nor what only MQTT 5's topic aliases (lru-cache) and Web Worker timers (worker-timers) need: the service
  // speaks 3.1.1 on Node's timers (src/mqtt/client.ts). Asked for either anyway, the part fails, naming
  // what it was built without; a client with the service's settings connects. A scripted broker answers
  // the CONNECT with a CONNACK: for MQTT 5, one offering topic aliases.
  it('the MQTT part leaves out topic aliases and worker timers, and says so if they are ever asked for', async () => {
    const text = readFileSync(path.join(ROOT, 'dist', 'parts/mqtt.cjs'), 'utf8');
    const modules = [...text.matchAll(/"(node_modules\/[^"]+\.[cm]?js)"\(/g)].map((m) => m[1]!);
    assert.deepEqual(modules.filter((m) => /node_modules\/(lru-cache|worker-timers|worker-timers-broker|@babel\/runtime)\//.test(m)), []);
    const connect = (options: string, connack: number[]): Promise<{ code: number | null; stdout: string; stderr: string }> =>
      runProcess(process.execPath, ['-e', `
const { Duplex } = require('node:stream');
const exported = require(${JSON.stringify(path.join(ROOT, 'dist', 'parts/mqtt.cjs'))})['mqtt/lib/client'];
const Client = exported.default ?? exported;
const broker = () => { let answered = false; return new Duplex({ read() {}, write(chunk, encoding, done) {
  if (!answered) { answered = true; setImmediate(() => this.push(Buffer.from(${JSON.stringify(connack)}))); }
  done();
} }); };
const client = new Client(broker, { host: '127.0.0.1', port: 1883, protocol: 'mqtt', clientId: 'part-test', keepalive: 60, reconnectPeriod: 0, ${options} });
client.on('connect', () => { console.log('connected'); process.exit(0); });
`]);
    const service = await connect("protocolVersion: 4, timerVariant: 'native'", [0x20, 2, 0, 0]);
    assert.equal(service.code, 0, service.stderr);
    assert.equal(service.stdout.trim(), 'connected');
    const workerTimers = await connect("protocolVersion: 4, timerVariant: 'worker'", [0x20, 2, 0, 0]);
    assert.notEqual(workerTimers.code, 0);
    assert.match(workerTimers.stderr, /Error: voice-hub built mqtt\.js without worker-timers \(build\.mjs, UNREACHABLE_IN_MQTT\): its setInterval was called/);
    // CONNACK, MQTT 5: no session, success, properties: Topic Alias Maximum (0x22) 10.
    const topicAliases = await connect('protocolVersion: 5', [0x20, 6, 0, 0, 3, 0x22, 0, 10]);
    assert.notEqual(topicAliases.code, 0);
    assert.match(topicAliases.stderr, /Error: voice-hub built mqtt\.js without lru-cache \(build\.mjs, UNREACHABLE_IN_MQTT\): its LRUCache was called/);
  });
});

describe('the bundle copied with its files', () => {
  it('runs without node_modules: health with a Healthy database, and a Swagger UI file', async () => {
    assert.ok(existsSync(BUNDLE), `${BUNDLE} is missing: run node build.mjs`);
    const dir = copyBuild();
    const dataDir = tmpDir();
    const proc = spawn(process.execPath, [path.join(dir, 'voice-hub.cjs'), '--host', '127.0.0.1', '--port', '0', '--data-dir', dataDir, '--Mqtt.BrokerAddress', ''], {
      cwd: tmpDir(),
      env: { PATH: '/usr/bin:/bin', HOME: dataDir },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    const exited = new Promise<number | null>((resolve) => proc.on('exit', resolve));
    try {
      const port = await new Promise<number>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`not listening within 15 s:\n${out}`)), 15_000);
        const onData = (d: Buffer): void => {
          out += d.toString();
          const m = /listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(out);
          if (m) {
            clearTimeout(timer);
            resolve(Number(m[1]));
          }
        };
        proc.stdout.on('data', onData);
        proc.stderr.on('data', onData);
        void exited.then((code) => reject(new Error(`exited with ${code}:\n${out}`)));
      });
      const health = await call(`http://127.0.0.1:${port}`, 'GET', '/health');
      assert.equal(health.json?.entries?.database?.status, 'Healthy', health.text);
      assert.match(out, new RegExp(`native addon loaded from ${dir}/${ADDON}`));
      assert.equal((await call(`http://127.0.0.1:${port}`, 'GET', '/swagger/index.css')).status, 200);
    } finally {
      proc.kill('SIGTERM');
    }
    assert.equal(await exited, 0, out);
  });

  const hint = '(put beside the bundle by node build.mjs)';
  for (const missing of [SQL_WASM, 'swagger/swagger-ui-bundle.js', PROGRAM_PARTS[0]!.name]) {
    it(`without ${missing}: start-up fails before anything listens, naming the file and where it looked`, async () => {
      const dir = copyBuild(missing);
      const res = await runBundleIn(dir, ['--host', '127.0.0.1', '--port', '0', '--data-dir', tmpDir()]);
      assert.equal(res.code, 1, res.stdout + res.stderr);
      // The last line; the log line of the addon it loaded comes before it.
      assert.equal(res.stderr.trimEnd().split('\n').at(-1), `start-up failed: this build is incomplete: missing ${dir}/${missing} ${hint}`);
      assert.doesNotMatch(res.stdout, /listening on/);
    });
  }

  it('without its uWS addon: refuses the JS fallback, naming the file and where it looked', async () => {
    const dir = copyBuild(ADDON);
    const res = await runBundleIn(dir, ['--host', '127.0.0.1', '--port', '0', '--data-dir', tmpDir()]);
    assert.equal(res.code, 1, res.stdout + res.stderr);
    assert.equal(
      res.stderr,
      `start-up failed: the native uWebSockets.js addon (${path.basename(ADDON)}) did not load; refusing to fall back to the slow JS implementation: ` +
        `${ADDON} is missing from this build: looked for ${dir}/${ADDON} ${hint}\n`,
    );
    assert.doesNotMatch(res.stdout, /listening on/);
  });
});

describe('the bundled CLI reads no translation files', () => {
  it('--help under a German locale stays English, with a broken and a translating locale file where yargs would look', async () => {
    // yargs looks for <locale>.json in a folder computed from the running file: one in every folder above it.
    const root = tmpDir('voice-hub-locales-');
    const dir = path.join(root, 'a/b/c');
    mkdirSync(dir, { recursive: true });
    copyBundle(dir);
    for (let up = dir; up.startsWith(root); up = path.dirname(up)) {
      mkdirSync(path.join(up, 'locales'));
      writeFileSync(path.join(up, 'locales/de_DE.json'), 'not json');
      writeFileSync(path.join(up, 'locales/de.json'), JSON.stringify({ 'Show help': 'Hilfe anzeigen' }));
    }
    const res = await runProcess(process.execPath, [path.join(dir, 'voice-hub.cjs'), '--help'], { cwd: root, env: { PATH: '/usr/bin:/bin', HOME: root, LANG: 'de_DE.UTF-8' } });
    assert.equal(res.code, 0, res.stderr);
    assert.equal(res.stderr, '');
    assert.match(res.stdout, /^  -h, --help +Show help  \[boolean\]$/m);
  });
});

describe('a build without an asset fails, naming it', () => {
  it('build-binaries.mjs: a dist/ without sql-wasm.wasm and a Swagger file makes no executable', async () => {
    const dir = copyBuild(SQL_WASM);
    const out = path.join(tmpDir(), 'out');
    rmSync(path.join(dir, 'swagger/index.css'));
    // The build whose assets copyBuild copied: this machine's arch and this node's uWS addon.
    const key = Object.keys(TARGETS).find((k) => TARGETS[k]!.uwsArch === process.arch && TARGETS[k]!.abi === process.versions.modules)!;
    const res = await runProcess(process.execPath, [path.join(ROOT, 'scripts/build-binaries.mjs'), '--dist', dir, '--out', out, key], { timeoutMs: 60_000 });
    assert.equal(res.code, 1, res.stdout + res.stderr);
    assert.equal(
      res.stderr,
      `build-binaries: run-time assets missing for the ${process.arch} executable (run node build.mjs first):\n` +
        `  ${SQL_WASM}: ${dir}/${SQL_WASM} not found\n` +
        `  swagger/index.css: ${dir}/swagger/index.css not found\n`,
    );
    assert.ok(!existsSync(out) || readdirSync(out).length === 0, 'no executable was written');
  });

  it('build.mjs: a node_modules without sql.js builds nothing', async () => {
    // build.mjs and the two modules it reads, in a root whose node_modules lacks sql.js.
    const root = tmpDir('voice-hub-build-');
    for (const file of ['build.mjs', 'package.json', 'scripts/sea-runtime.mjs', 'src/runtime/asset-manifest.mjs', 'scripts/build-native.mjs']) {
      mkdirSync(path.dirname(path.join(root, file)), { recursive: true });
      copyFileSync(path.join(ROOT, file), path.join(root, file));
    }
    mkdirSync(path.join(root, 'node_modules'));
    for (const pkg of ['esbuild', 'swagger-ui-dist', 'uWebSockets.js', 'uWebSockets.js-node24']) symlinkSync(path.join(ROOT, 'node_modules', pkg), path.join(root, 'node_modules', pkg));
    const res = await runProcess(process.execPath, [path.join(root, 'build.mjs')], { cwd: root, timeoutMs: 60_000 });
    assert.equal(res.code, 1, res.stdout + res.stderr);
    assert.equal(res.stderr, `build.mjs: run-time assets missing from node_modules (run npm ci):\n  ${SQL_WASM}: node_modules/sql.js/dist/sql-wasm.wasm not found\n`);
    assert.ok(!existsSync(path.join(root, 'dist/voice-hub.cjs')), 'no bundle was written');
  });
});
