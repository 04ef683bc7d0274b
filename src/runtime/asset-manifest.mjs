// Every file voice-hub reads at run time that is not its own code, its configuration or its data: the
// one list that build.mjs copies beside the bundle, scripts/build-binaries.mjs puts inside each single
// executable, and src/runtime/assets.ts looks up (by these names and no others). Plain JavaScript, so
// the build scripts, which run on plain node without a TypeScript loader, share it with the service.
//
// Not listed because nothing is read from disk for them: the Opus decoder (opus-decoder carries its
// wasm inside its JavaScript, which is bundled) and the OpenAPI document (built from the route table).

/** Node's module ABI the pinned uWebSockets.js build ships addons for: Node 20. */
export const UWS_ABI = '115';

/** The uWebSockets.js addon's file name, as the package names it: `uws_linux_arm64_115.node`. */
export function uwsAddonFileName(arch, platform = 'linux', abi = UWS_ABI) {
  return `uws_${platform}_${arch}_${abi}.node`;
}

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
 * The assets of a Linux process whose Node arch is `arch` (x64, arm64, arm): `name` inside the build
 * (a path relative to the bundle's folder, and the asset key inside an executable) and `source`, the
 * file under node_modules it is made from.
 */
export function runtimeAssets(arch) {
  const addon = uwsAddonFileName(arch);
  return Object.freeze([
    { name: SQL_WASM, source: 'sql.js/dist/sql-wasm.wasm' },
    ...SWAGGER_UI_FILES.map((file) => ({ name: `swagger/${file}`, source: `swagger-ui-dist/${file}` })),
    { name: `native/${addon}`, source: `uWebSockets.js/binaries/${addon}` },
  ]);
}
