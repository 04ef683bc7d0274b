// Bundles the service into one CommonJS file, dist/program.cjs, with the launcher that runs it with its V8
// code cache, dist/voice-hub.cjs (run as `node dist/voice-hub.cjs` or directly), and copies the files it
// reads at run time beside them (src/runtime/asset-manifest.mjs: the sql.js wasm, Swagger UI, the uWS
// native addon of every target). A missing one fails the build, naming it.
import { build } from 'esbuild';
import { chmodSync, copyFileSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { TARGETS } from './scripts/sea-runtime.mjs';
import { BUNDLE_MAIN, DECODE_WORKER_PART, PROGRAM_ASSET, PROGRAM_PARTS, runtimeAssets, SEA_MAIN } from './src/runtime/asset-manifest.mjs';
import { buildOwnAddons } from './scripts/build-native.mjs';

const root = path.dirname(new URL(import.meta.url).pathname);
const dist = path.join(root, 'dist');
const pkg = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8'));

// The assets of every platform the executables target (x64, arm64 for 64-bit Pi OS, arm for 32-bit),
// each once, with the uWS addons of both runtimes (Node 20 and 24): the bundle may run on either.
const assets = new Map();
for (const target of Object.values(TARGETS)) for (const asset of runtimeAssets(target.uwsArch, target.abi)) if (asset.source) assets.set(asset.name, asset.source);
const missing = [...assets].filter(([, source]) => !existsSync(path.join(root, 'node_modules', source)));
if (missing.length > 0) {
  const list = missing.map(([name, source]) => `  ${name}: node_modules/${source} not found`).join('\n');
  console.error(`build.mjs: run-time assets missing from node_modules (run npm ci):\n${list}`);
  process.exit(1);
}

// yargs translates its own messages through y18n, which reads `<locale>.json` from a folder it computes
// from the running file: for an executable, a path outside it (/locales/ for /usr/bin/voice-hub), where
// a file that is found changes --help and one that is not JSON breaks it. The CLI speaks English, the
// texts built into yargs, so y18n gets a platform without readFileSync, which it supports (bundlers
// have none): it then never opens a file.
const y18nWithoutFiles = {
  name: 'y18n-without-files',
  setup(b) {
    b.onResolve({ filter: /^y18n$/ }, () => ({ path: 'y18n', namespace: 'y18n-without-files' }));
    b.onLoad({ filter: /.*/, namespace: 'y18n-without-files' }, () => ({
      resolveDir: path.join(root, 'node_modules/y18n'),
      contents: `import { y18n } from './build/lib/index.js';
import { format } from 'node:util';
import { resolve } from 'node:path';
export default (opts) => y18n(opts, { fs: { writeFile() {} }, format, resolve, exists: () => false });`,
    }));
  },
};

// yargs' platform shim imports Node's assert for checks that fail only on its misuse, and runs them as
// it parses every command line: loaded for that, assert and its helpers stayed in an idle service (0.3 MiB
// in a bare node). Here the same comparison (assert's strict equality is Object.is) runs first, and assert
// is loaded only to throw its own AssertionError, as before, when a check fails.
const yargsAssertOnUse = {
  name: 'yargs-assert-on-use',
  setup(b) {
    b.onResolve({ filter: /^assert$/ }, (args) => (args.importer.includes('/node_modules/yargs/') ? { path: 'assert', namespace: 'yargs-assert-on-use' } : undefined));
    b.onLoad({ filter: /.*/, namespace: 'yargs-assert-on-use' }, () => ({
      contents: `export function notStrictEqual(actual, expected, message) {
  if (Object.is(actual, expected)) require('node:assert').notStrictEqual(actual, expected, message);
}
export function strictEqual(actual, expected, message) {
  if (!Object.is(actual, expected)) require('node:assert').strictEqual(actual, expected, message);
}`,
      loader: 'js',
    }));
  },
};

// import.meta.url in a CommonJS bundle: the bundle's own file (inside an executable, the executable).
const IMPORT_META_URL = {
  define: { 'import.meta.url': '__import_meta_url' },
  banner: "const __import_meta_url = require('url').pathToFileURL(__filename).href;",
};

// ws tries these optional native speed-ups in a try/catch; the defines stop it from trying at all,
// since inside a single executable the failed require prints a warning at every start. The program and
// the MQTT part each carry a ws.
const WITHOUT_WS_ADDONS = {
  external: ['bufferutil', 'utf-8-validate'],
  define: { 'process.env.WS_NO_BUFFER_UTIL': '"1"', 'process.env.WS_NO_UTF_8_VALIDATE': '"1"' },
};

// The program's parts (src/runtime/asset-manifest.mjs): packages used in some starts only, each bundled
// into a file of its own whose exports are its packages' modules by name, and the wasm decoder threads'
// code. The program's bundle resolves each such package to a loader of its part (src/runtime/program-parts.ts),
// run when something first imports the package. Whitespace only is minified, as in the program: stack
// traces keep their names. `readable-stream` (mqtt.js' and bl's streams) is Node's own stream module,
// published for browsers and older Nodes; in a Node process the built-in one is the same code, already
// loaded, while the package's copy of it cost an idle service with MQTT on 0.8 MiB of RSS.
const PART_OPTIONS = {
  ...WITHOUT_WS_ADDONS, bundle: true, platform: 'node', target: 'node20', format: 'cjs', legalComments: 'none', minifyWhitespace: true, logLevel: 'warning',
  alias: { 'readable-stream': 'stream' },
};

// mqtt.js' client class imports two packages for paths our connection never takes (src/mqtt/client.ts):
// worker-timers for keep-alive timers in a Web Worker (`timerVariant: 'worker'`, or 'auto' in a browser;
// we pass 'native'), and lru-cache for the topic aliases an MQTT 5 broker offers in its CONNACK (the
// parser reads CONNACK properties only for protocolVersion 5; we speak 3.1.1). Their code, and what
// it imports (Babel's regenerator, fast-unique-numbers), stayed compiled in an idle service with MQTT on,
// and lru-cache's first line loaded perf_hooks. Each resolves to a module that throws, naming itself, if
// that path is ever taken. Its package.json, read for the version alone (MqttClient.VERSION), is that
// version: the whole manifest (scripts, contributors) was parsed and kept.
const UNREACHABLE_IN_MQTT = {
  'worker-timers': ['setInterval', 'clearInterval', 'setTimeout', 'clearTimeout'],
  'lru-cache': ['LRUCache'],
};
const mqttUnreachable = {
  name: 'mqtt-unreachable',
  setup(b) {
    b.onResolve({ filter: /^(worker-timers|lru-cache)$/ }, (args) => (args.importer.includes('/node_modules/mqtt/') ? { path: args.path, namespace: 'mqtt-unreachable' } : undefined));
    b.onResolve({ filter: /\/package\.json$/ }, (args) => (args.importer.includes('/node_modules/mqtt/') ? { path: path.resolve(args.resolveDir, args.path), namespace: 'mqtt-version' } : undefined));
    b.onLoad({ filter: /.*/, namespace: 'mqtt-version' }, (args) => ({
      loader: 'js',
      contents: `module.exports = { version: ${JSON.stringify(JSON.parse(readFileSync(args.path, 'utf8')).version)} };`,
    }));
    b.onLoad({ filter: /.*/, namespace: 'mqtt-unreachable' }, (args) => ({
      loader: 'js',
      contents: UNREACHABLE_IN_MQTT[args.path].map((name) => `exports.${name} = function ${name}() {
  throw new Error('voice-hub built mqtt.js without ${args.path} (build.mjs, UNREACHABLE_IN_MQTT): its ${name} was called');
};`).join('\n'),
    }));
  },
};
async function buildParts() {
  for (const part of PROGRAM_PARTS) {
    const contents = `module.exports = {${part.packages.map((p) => `${JSON.stringify(p)}: require(${JSON.stringify(p)})`).join(', ')}};`;
    await build({ ...PART_OPTIONS, plugins: [mqttUnreachable], stdin: { contents, resolveDir: root, sourcefile: part.name }, outfile: path.join(dist, part.name) });
  }
  await build({ ...PART_OPTIONS, entryPoints: [path.join(root, 'src/voice/opus/decode-worker.ts')], outfile: path.join(dist, DECODE_WORKER_PART) });
}
const partLoader = path.join(root, 'src/runtime/program-parts.ts');
const partOf = new Map(PROGRAM_PARTS.flatMap((part) => part.packages.map((p) => [p, part.name])));
const programParts = {
  name: 'program-parts',
  setup(b) {
    b.onResolve({ filter: /^[@a-z]/ }, (args) => (partOf.has(args.path) ? { path: args.path, namespace: 'program-parts' } : undefined));
    b.onLoad({ filter: /.*/, namespace: 'program-parts' }, (args) => ({
      resolveDir: root,
      loader: 'js',
      contents: `module.exports = require(${JSON.stringify(partLoader)}).loadProgramPart(${JSON.stringify(partOf.get(args.path))})[${JSON.stringify(args.path)}];`,
    }));
  },
};

// The configuration's and the request bodies' validators as standalone code
// (scripts/standalone-validators.ts): the service then neither carries ajv nor compiles a validator.
// The generator is TypeScript that imports the schemas, so it is bundled first and run; its modules
// replace src/config/validator.ts and src/http/validator.ts in the bundle.
async function generateValidators() {
  const file = path.join(dist, `.standalone-validators-${process.pid}.cjs`);
  mkdirSync(dist, { recursive: true });
  await build({ entryPoints: [path.join(root, 'scripts/standalone-validators.ts')], outfile: file, bundle: true, platform: 'node', format: 'cjs', logLevel: 'warning' });
  try {
    const generator = createRequire(import.meta.url)(file);
    const vocabulary = path.join(root, 'src/config/vocabulary.ts');
    return new Map([
      [path.join(root, 'src/config/validator.js'), generator.standaloneConfigValidator(vocabulary)],
      [path.join(root, 'src/http/validator.js'), generator.standaloneRequestValidators(vocabulary)],
    ]);
  } finally {
    rmSync(file, { force: true });
  }
}
const generatedValidators = await generateValidators();
const standaloneValidators = {
  name: 'standalone-validators',
  setup(b) {
    b.onResolve({ filter: /validator\.js$/ }, (args) => {
      const resolved = path.resolve(args.resolveDir, args.path);
      return generatedValidators.has(resolved) ? { path: resolved, namespace: 'standalone-validators' } : undefined;
    });
    b.onLoad({ filter: /.*/, namespace: 'standalone-validators' }, (args) => ({
      contents: generatedValidators.get(args.path),
      loader: 'js',
      resolveDir: path.dirname(args.path),
    }));
  },
};

await build({
  plugins: [y18nWithoutFiles, yargsAssertOnUse, standaloneValidators, programParts],
  entryPoints: [path.join(root, 'src/main.ts')],
  outfile: path.join(dist, PROGRAM_ASSET),
  bundle: true,
  platform: 'node',
  target: 'node20',
  format: 'cjs',
  sourcemap: 'linked',
  legalComments: 'none',
  minifyWhitespace: true,
  logLevel: 'warning',
  alias: { 'uWebSockets.js': path.join(root, 'src/http/uws-alias.ts') },
  external: WITHOUT_WS_ADDONS.external,
  define: {
    ...WITHOUT_WS_ADDONS.define,
    VOICE_HUB_VERSION: JSON.stringify(pkg.version),
    ...IMPORT_META_URL.define,
    // Only the run-from-source branch of src/voice/opus/decode-thread.ts resolves a module this way.
    'import.meta.resolve': 'undefined',
  },
  banner: { js: IMPORT_META_URL.banner },
});
await buildParts();

// The program's two launchers (src/runtime/run-program.ts): the bundle's (src/runtime/bundle-main.ts),
// which runs dist/program.cjs, and the single executables' main script (src/runtime/sea-main.ts), which
// runs the program scripts/build-binaries.mjs appends to each executable as an asset.
const LAUNCHER_OPTIONS = {
  bundle: true,
  platform: 'node',
  target: 'node20',
  format: 'cjs',
  legalComments: 'none',
  minifyWhitespace: true,
  logLevel: 'warning',
  define: IMPORT_META_URL.define,
};
await build({
  ...LAUNCHER_OPTIONS,
  entryPoints: [path.join(root, 'src/runtime/bundle-main.ts')],
  outfile: path.join(dist, BUNDLE_MAIN),
  // The #! line and the run bit (below) let the npm `bin` entry, `npm link`, `npx voice-hub` and
  // `./dist/voice-hub.cjs` start it without naming node.
  banner: { js: `#!/usr/bin/env node\n${IMPORT_META_URL.banner}` },
});
chmodSync(path.join(dist, BUNDLE_MAIN), 0o755);
await build({
  ...LAUNCHER_OPTIONS,
  entryPoints: [path.join(root, 'src/runtime/sea-main.ts')],
  outfile: path.join(dist, SEA_MAIN),
  banner: { js: IMPORT_META_URL.banner },
});

for (const [name, source] of assets) {
  const dest = path.join(dist, name);
  mkdirSync(path.dirname(dest), { recursive: true });
  // Copy beside and rename: overwriting a shared object in place changes the pages of every running
  // service that has it mapped (a rebuild during `make run` or a test run crashed them with SIGSEGV).
  copyFileSync(path.join(root, 'node_modules', source), `${dest}.tmp-${process.pid}`);
  renameSync(`${dest}.tmp-${process.pid}`, dest);
}
// Our own addons (glibc malloc thresholds, native Opus decoding) for this machine; scripts/build-binaries.mjs
// builds each target's.
buildOwnAddons(dist, process.arch);
console.log(`built ${path.relative(root, path.join(dist, BUNDLE_MAIN))} and ${path.relative(root, path.join(dist, PROGRAM_ASSET))} (voice-hub ${pkg.version})`);
