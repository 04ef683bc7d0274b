// Every file voice-hub reads at run time that is not its own code, its configuration or its data: the
// one list that build.mjs copies beside the bundle, scripts/build-binaries.mjs puts inside each single
// executable, and src/runtime/assets.ts looks up (by these names and no others). Plain JavaScript, so
// the build scripts, which run on plain node without a TypeScript loader, share it with the service.
//
// Not listed because nothing is read from disk for it: the OpenAPI document (built from the route table).

/**
 * Node's module ABI (process.versions.modules) -> where the pinned uWebSockets.js addons for it are
 * under node_modules, and for which Linux archs. Two packages, because no one build serves both
 * runtimes: the Node 20 addons (115) are the only ones that load on glibc 2.36 (Debian 12) and on 32-bit
 * ARM; the Node 24 addons (137) need glibc >= 2.38 and exist for x64 and arm64 only. package.json pins both.
 */
export const UWS_ADDONS = Object.freeze({
  115: Object.freeze({ dir: 'uWebSockets.js/binaries', archs: Object.freeze(['x64', 'arm64', 'arm']) }),
  137: Object.freeze({ dir: 'uWebSockets.js-node24', archs: Object.freeze(['x64', 'arm64']) }),
});

/** The module ABIs voice-hub has a uWebSockets.js addon for. */
export const UWS_ABIS = Object.freeze(Object.keys(UWS_ADDONS));

/** The uWebSockets.js addon's file name, as the package names it: `uws_linux_arm64_137.node`. */
export function uwsAddonFileName(arch, platform, abi) {
  return `uws_${platform}_${arch}_${abi}.node`;
}

/** Our own addon (src/native/malloc-tune.c, built by scripts/build-native.mjs): glibc's malloc thresholds. */
export function mallocAddonFileName(arch) {
  return `malloc_tune_linux_${arch}.node`;
}

/** Our own addon (src/native/opus-decode.c): the system libopus, inline or on native decoder threads. */
export function opusAddonFileName(arch) {
  return `opus_decode_linux_${arch}.node`;
}

/**
 * The program itself: build.mjs' bundle of src/main.ts. Neither launcher is more than a loader that runs it
 * with its V8 code cache (src/runtime/run-program.ts): beside BUNDLE_MAIN in dist/, inside each single
 * executable among the assets.
 */
export const PROGRAM_ASSET = 'program.cjs';
/** The launcher `node dist/voice-hub.cjs` runs (src/runtime/bundle-main.ts), as build.mjs writes it into dist/. */
export const BUNDLE_MAIN = 'voice-hub.cjs';
/** The single executables' SEA main script (src/runtime/sea-main.ts), as build.mjs writes it into dist/. */
export const SEA_MAIN = 'sea-main.cjs';

/** The sql.js engine: SQLite compiled to wasm. */
export const SQL_WASM = 'sql-wasm.wasm';

/** Swagger UI's files (served at /swagger/<name>), with the licence texts that must travel with them. */
export const SWAGGER_UI_FILES = Object.freeze([
  'swagger-ui.css',
  'index.css',
  'swagger-ui-bundle.js',
  'swagger-ui-standalone-preset.js',
  'favicon-32x32.png',
  'favicon-16x16.png',
  'LICENSE',
  'NOTICE',
  'swagger-ui-bundle.js.LICENSE.txt',
  'swagger-ui-standalone-preset.js.LICENSE.txt',
]);

/**
 * Code the service runs only in some starts or on some requests, bundled by build.mjs apart from the
 * program and loaded on first use (src/runtime/program-parts.ts). V8 keeps a script's whole source in
 * the heap for as long as the process lives, used or not: in the program they were about half of its
 * 1.7 MB, held by every idle service. `packages`: the npm packages a part carries; the program's
 * bundle resolves each to its part, and nothing else carries them.
 *   mqtt            MQTT on (Mqtt.BrokerAddress set)
 *   signalr-client  the `simulate` command's hub client
 *   opus-decoder    the bundled wasm libopus, when the system libopus did not load and decoding is inline
 */
export const PROGRAM_PARTS = Object.freeze([
  Object.freeze({ name: 'parts/mqtt.cjs', packages: Object.freeze(['mqtt/lib/client']) }),
  Object.freeze({ name: 'parts/signalr-client.cjs', packages: Object.freeze(['@microsoft/signalr', '@microsoft/signalr-protocol-msgpack']) }),
  Object.freeze({ name: 'parts/opus-decoder.cjs', packages: Object.freeze(['opus-decoder']) }),
]);

/**
 * The wasm decoder threads' code (src/voice/opus/decode-worker.ts, with its own opus-decoder), bundled on
 * its own: a Worker evaluates it (src/voice/opus/decode-thread.ts).
 */
export const DECODE_WORKER_PART = 'parts/decode-worker.cjs';

/**
 * The assets of a Linux process whose Node arch is `arch` (x64, arm64, arm) and module ABI `abi`:
 * `name` inside the build (a path relative to the bundle's folder, and the asset key inside an
 * executable) and either `source`, the file under node_modules it is copied from, or `built`, the
 * source it is compiled or bundled from (no such file exists under tsx, in development). Throws for an
 * ABI or arch without a uWebSockets.js addon, naming the ones there are.
 */
export function runtimeAssets(arch, abi) {
  const uws = UWS_ADDONS[abi];
  if (!uws?.archs.includes(arch)) {
    const known = Object.entries(UWS_ADDONS).map(([a, { archs }]) => `${a} (${archs.join(', ')})`).join(', ');
    throw new Error(`no uWebSockets.js addon for Node module ABI ${abi} on linux-${arch}; voice-hub has them for ABI ${known}`);
  }
  const addon = uwsAddonFileName(arch, 'linux', abi);
  return Object.freeze([
    { name: PROGRAM_ASSET, built: 'src/main.ts' },
    { name: SQL_WASM, source: 'sql.js/dist/sql-wasm.wasm' },
    ...SWAGGER_UI_FILES.map((file) => ({ name: `swagger/${file}`, source: `swagger-ui-dist/${file}` })),
    { name: `native/${addon}`, source: `${uws.dir}/${addon}` },
    { name: `native/${mallocAddonFileName(arch)}`, built: 'src/native/malloc-tune.c' },
    { name: `native/${opusAddonFileName(arch)}`, built: 'src/native/opus-decode.c' },
    ...PROGRAM_PARTS.map((part) => ({ name: part.name, built: part.packages.map((p) => `node_modules/${p}`).join(' and ') })),
    { name: DECODE_WORKER_PART, built: 'src/voice/opus/decode-worker.ts' },
  ]);
}
