// `make binaries`: one self-contained executable per Pi platform and runtime, dist/voice-hub-linux-<key>
// for each key of scripts/sea-runtime.mjs (x64, arm64: Node 24; x64-legacy, arm64-legacy, armv7-legacy:
// Node 20), made with Node's single executable applications (SEA) and postject from the bundle of build.mjs.
//
// Per target: the pinned runtime from the npm registry (scripts/sea-runtime.mjs), stripped with the
// target's binutils; a SEA blob made by that same runtime (under qemu-user for ARM: a blob made by a
// 64-bit node aborts on 32-bit, and one node never guesses another's layout); postject injects it and
// flips the fuse, which is then checked (a failed injection must not pass as success). Assets are
// appended after the ELF (scripts/sea-payload.mjs), after stripping, for every target: read back with
// pread, they never enter the process' memory map. As SEA assets (Node >= 20.12) they were pages of the
// mapped blob, and reading the uWS addon out at each start left its 6.8 MB resident: started from a
// cold page cache (as after boot), the x64 legacy executable idled at 65.3 MiB of RSS with them there
// and at 58.2 MiB appended (35 s after start, two starts each).
//
// Assets: exactly the target's list in src/runtime/asset-manifest.mjs (sql.js wasm, Swagger UI, the
// target's own uWS addon: the one for its arch and its runtime's module ABI, no other), taken from dist/ where build.mjs put them, under the same relative names
// src/runtime/assets.ts looks them up by. One missing fails the build, naming it: an executable
// without it would only fail when a user starts it.
//
// Outputs are reused while a hash of every input matches (.cache/sea/<target>.key), so `make test` can
// run this on every run.
// Usage: node scripts/build-binaries.mjs [--dist DIR] [--out DIR] [x64 arm64 x64-legacy arm64-legacy armv7-legacy | host]
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, copyFileSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { runtimeAssets, SEA_MAIN } from '../src/runtime/asset-manifest.mjs';
import { buildOwnAddons } from './build-native.mjs';
import { appendPayload } from './sea-payload.mjs';
import { NODE_FLAGS } from '../src/runtime/node-options.mjs';
import { TARGETS, hostTarget, nodeRuntime } from './sea-runtime.mjs';

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
const SEA_FUSE = 'NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { dist: { type: 'string', default: path.join(root, 'dist') }, out: { type: 'string' } },
});
const dist = path.resolve(values.dist);
const out = path.resolve(values.out ?? dist);
const cache = path.join(root, '.cache');
// `host`: only the target this machine runs (`make install`): its arch, Node 24 when its glibc allows.
const wanted = (positionals.length ? positionals : Object.keys(TARGETS)).map((k) => (k === 'host' ? hostTarget() : k));

function onPath(tool) {
  try {
    execFileSync('sh', ['-c', `command -v "$1"`, 'sh', tool], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** [name, absolute file] of every asset of a target whose Node arch is `uwsArch`; throws naming any missing. */
function collectAssets(distDir, uwsArch, abi) {
  // Our own addons are compiled here for the target (a fresh machine gets its cross compiler from `make binaries`).
  buildOwnAddons(distDir, uwsArch);
  const assets = runtimeAssets(uwsArch, abi).map(({ name }) => [name, path.join(distDir, name)]);
  const missing = assets.filter(([, file]) => !existsSync(file));
  if (missing.length > 0) {
    const list = missing.map(([name, file]) => `  ${name}: ${file} not found`).join('\n');
    throw new Error(`run-time assets missing for the ${uwsArch} executable (run node build.mjs first):\n${list}`);
  }
  return assets;
}

/** Runs a build tool quietly; its output is shown only when it fails. */
function run(cmd, args, opts = {}) {
  try {
    execFileSync(cmd, args, { stdio: 'pipe', maxBuffer: 16 * 1024 * 1024, ...opts });
  } catch (e) {
    throw new Error(`${cmd} ${args.join(' ')} failed:\n${e.stdout ?? ''}${e.stderr ?? e.message}`);
  }
}

function hashInputs(target, main, assets) {
  const h = createHash('sha256');
  for (const f of ['scripts/build-binaries.mjs', 'scripts/sea-payload.mjs', 'scripts/sea-runtime.mjs', 'src/runtime/asset-manifest.mjs', 'src/runtime/node-options.mjs']) h.update(readFileSync(path.join(root, f)));
  h.update(`${target.pkg} ${target.integrity}\n`);
  h.update(readFileSync(main));
  for (const [name, file] of assets) h.update(`\n${name}\n`).update(readFileSync(file));
  return h.digest('hex');
}

function buildTarget(key, target) {
  const main = path.join(dist, SEA_MAIN);
  if (!existsSync(main)) throw new Error(`${main} is missing: run node build.mjs first`);
  // The program (PROGRAM_ASSET) travels with the assets; the blob holds only its loader (src/runtime/sea-main.ts).
  const assets = collectAssets(dist, target.uwsArch, target.abi);
  const exe = path.join(out, `voice-hub-linux-${key}`);
  const work = path.join(cache, 'sea', key);
  const keyFile = path.join(cache, 'sea', `${key}.key`);
  const inputs = hashInputs(target, main, assets);
  if (existsSync(exe) && existsSync(keyFile) && readFileSync(keyFile, 'utf8') === `${inputs} ${exe}`) {
    console.log(`${path.relative(root, exe)}: up to date`);
    return;
  }
  const started = Date.now();
  mkdirSync(work, { recursive: true });
  mkdirSync(out, { recursive: true });

  // Strip before injecting: debug info is most of the published binary, and strip would drop the blob.
  const node = nodeRuntime(target, path.join(cache, 'node-runtimes'));
  const stripped = path.join(work, 'node');
  // Native: this machine runs the target's code itself (its own strip, no qemu).
  const native = target.uwsArch === process.arch;
  const strip = native && !onPath(target.strip) ? 'strip' : target.strip;
  run(strip, ['--remove-section=.comment', '-o', stripped, node]);

  const blob = path.join(work, 'sea.blob');
  const config = {
    main,
    output: blob,
    disableExperimentalSEAWarning: true,
    // Node 20's executables cannot carry Node's options (the unit gives them NODE_OPTIONS); Node 24's do.
    ...(target.legacy ? {} : { execArgv: [...NODE_FLAGS] }),
  };
  const configFile = path.join(work, 'sea-config.json');
  writeFileSync(configFile, JSON.stringify(config, null, 2));
  rmSync(blob, { force: true });
  const [emulator, ...emulatorArgs] = native ? [] : target.emulator;
  if (emulator) run(emulator, [...emulatorArgs, stripped, '--experimental-sea-config', configFile], { cwd: work });
  else run(stripped, ['--experimental-sea-config', configFile], { cwd: work });

  const tmp = path.join(work, 'voice-hub.tmp');
  copyFileSync(stripped, tmp);
  // postject's LIEF prints a warning per ELF note it cannot name (harmless), hence run() keeps it quiet.
  const postject = createRequire(import.meta.url).resolve('postject/dist/cli.js');
  run(process.execPath, [postject, tmp, 'NODE_SEA_BLOB', blob, '--sentinel-fuse', SEA_FUSE]);
  const injected = readFileSync(tmp);
  if (!injected.includes(`${SEA_FUSE}:1`)) throw new Error(`${key}: postject did not flip the SEA fuse; the executable would be plain node`);
  appendPayload(tmp, assets.map(([name, file]) => [name, readFileSync(file)]));
  chmodSync(tmp, 0o755);
  renameSync(tmp, exe);
  writeFileSync(keyFile, `${inputs} ${exe}`);
  const mb = (statSync(exe).size / 1048576).toFixed(1);
  console.log(`${path.relative(root, exe) || exe}: ${mb} MiB, ${assets.length} assets, ${((Date.now() - started) / 1000).toFixed(1)} s`);
}

try {
  for (const key of wanted) {
    const target = key && TARGETS[key];
    if (!target) throw new Error(`unknown target ${key}; known: ${Object.keys(TARGETS).join(', ')}`);
    buildTarget(key, target);
  }
} catch (e) {
  // The message says what is wrong; a stack trace of this script would only bury it.
  console.error(`build-binaries: ${e instanceof Error ? e.message : String(e)}`);
  process.exit(1);
}
