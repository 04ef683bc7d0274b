// Bundles the service into one CommonJS file, dist/voice-hub.cjs, run as `node dist/voice-hub.cjs`,
// and copies the files it loads at run time beside it: the uWS native addons and the sql.js wasm.
import { build } from 'esbuild';
import { copyFileSync, mkdirSync, readFileSync, renameSync } from 'node:fs';
import path from 'node:path';
import { buildMallocAddon } from './scripts/build-native.mjs';

const root = path.dirname(new URL(import.meta.url).pathname);
const dist = path.join(root, 'dist');
const pkg = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8'));

mkdirSync(path.join(dist, 'native'), { recursive: true });

await build({
  entryPoints: [path.join(root, 'src/main.ts')],
  outfile: path.join(dist, 'voice-hub.cjs'),
  bundle: true,
  platform: 'node',
  target: 'node20',
  format: 'cjs',
  sourcemap: 'linked',
  legalComments: 'none',
  logLevel: 'warning',
  alias: { 'uWebSockets.js': path.join(root, 'src/http/uws-alias.ts') },
  // ws tries these optional native speed-ups in a try/catch; the defines stop it from trying at all,
  // since inside a single executable the failed require prints a warning at every start.
  external: ['bufferutil', 'utf-8-validate'],
  define: {
    VOICE_HUB_VERSION: JSON.stringify(pkg.version),
    'import.meta.url': '__import_meta_url',
    'process.env.WS_NO_BUFFER_UTIL': '"1"',
    'process.env.WS_NO_UTF_8_VALIDATE': '"1"',
  },
  banner: { js: "const __import_meta_url = require('url').pathToFileURL(__filename).href;" },
});

// Every platform the executables target: x64, arm64 (Pi 3/4/5 64-bit), armv7 (32-bit Pi OS). ABI 115 = Node 20.
const uwsDir = path.join(root, 'node_modules/uWebSockets.js/binaries');
for (const arch of ['x64', 'arm64', 'arm']) {
  const name = `uws_linux_${arch}_115.node`;
  // Copy beside and rename: overwriting a shared object in place changes the pages of every running
  // service that has it mapped (a rebuild during `make run` or a test run crashed them with SIGSEGV).
  const dest = path.join(dist, 'native', name);
  copyFileSync(path.join(uwsDir, name), `${dest}.tmp-${process.pid}`);
  renameSync(`${dest}.tmp-${process.pid}`, dest);
}
// Our own addon (glibc malloc thresholds), for this machine; scripts/build-binaries.mjs builds each target's.
buildMallocAddon(dist, process.arch);
copyFileSync(path.join(root, 'node_modules/sql.js/dist/sql-wasm.wasm'), path.join(dist, 'sql-wasm.wasm'));
// Swagger UI, served from the box (no CDN): the list is shared with src/http/routes/swagger.ts.
const swaggerAssets = JSON.parse(readFileSync(path.join(root, 'src/openapi/swagger-assets.json'), 'utf8'));
mkdirSync(path.join(dist, 'swagger'), { recursive: true });
for (const name of swaggerAssets) copyFileSync(path.join(root, 'node_modules/swagger-ui-dist', name), path.join(dist, 'swagger', name));
console.log(`built ${path.relative(root, path.join(dist, 'voice-hub.cjs'))} (voice-hub ${pkg.version})`);
