// `make deb`: the packages of the executables of `make binaries`, built with dpkg-deb alone (no
// debian/rules: there is nothing to compile), then checked with lintian:
//   dist/voice-hub_<version>_{amd64,arm64}.deb          Node 24, for Debian 13 and later (libc6 >= 2.38)
//   dist/voice-hub_<version>~legacy_{amd64,arm64,armhf}.deb   Node 20, for Debian 12 and 32-bit ARM
// Both are the package `voice-hub`, so only one is ever installed and either replaces the other with
// configuration and data kept, as any upgrade does. `~legacy` sorts before the plain version: of one
// release, the Node 24 build is the newer, so moving to it is an upgrade, and each later release of
// either is an upgrade of both.
//
// Contents: /usr/bin/voice-hub, /lib/systemd/system/voice-hub.service, /etc/voice-hub/appsettings.json
// (the conffile: CONFFILE below, the same in every release), /usr/share/voice-hub/appsettings.json (every
// key with its default: the shipped config/appsettings.json with Storage.DataDir=/var/lib/voice-hub), the
// man page, copyright, changelog, the port-80 drop-in (/usr/share/voice-hub), lintian overrides,
// maintainer scripts.
//
// Why the conffile is not the full configuration: dpkg asks what to do with a conffile that both the
// admin and the new package changed, and config/appsettings.json changes in nearly every release (each
// new key is added to it). Nearly every Pi has its conffile edited (the broker, an API key), so nearly
// every upgrade stopped at that question, and where no one can answer it (apt-get -y under
// DEBIAN_FRONTEND=noninteractive, unattended-upgrades) dpkg failed with "end of file on stdin at conffile
// prompt": the package left unconfigured and the service still running the replaced executable. A key
// the file leaves out takes its built-in default, so the conffile holds only what the package sets.
//
// Usage: node packaging/build-deb.mjs [--out DIR] [--no-lintian] [--version V] [--compression xz|gzip|none]
//        [--defaults FILE] [x64 arm64 x64-legacy arm64-legacy armv7-legacy]   (the keys of scripts/sea-runtime.mjs)
// --version builds the same files as a later version V (an upgrade to install over the released one, as
// the booted-package test does); its changelog gets an entry saying so. --compression none saves the
// minute xz takes for each 90 MB executable, where the package is only installed by a test. --defaults
// takes the full configuration from FILE instead of config/appsettings.json (the booted-package test: a
// later release whose defaults changed).
import { execFileSync, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, copyFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { gzipSync } from 'node:zlib';
import { TARGETS, nodeRuntime } from '../scripts/sea-runtime.mjs';
import { runtimeAssets } from '../src/runtime/asset-manifest.mjs';
import { copyrightFile } from './copyright.mjs';

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
const here = path.join(root, 'packaging', 'deb');
const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    out: { type: 'string', default: path.join(root, 'dist') },
    'no-lintian': { type: 'boolean', default: false },
    version: { type: 'string' },
    compression: { type: 'string', default: 'xz' },
    defaults: { type: 'string', default: path.join(root, 'config/appsettings.json') },
  },
});

/**
 * /etc/voice-hub/appsettings.json: only what the package sets (the port the docs and the README's curl
 * name, the unit's data directory), never anything that follows config/appsettings.json, so that dpkg
 * never has a new version of it to ask about (see the head of this file).
 */
const CONFFILE = JSON.stringify({ Server: { Port: 5000 }, Storage: { DataDir: '/var/lib/voice-hub' } }, null, 2) + '\n';
const outDir = path.resolve(values.out);
if (!['xz', 'gzip', 'none'].includes(values.compression)) throw new Error(`--compression ${values.compression}: xz, gzip or none`);
const pkg = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8'));

// Each version needs its changelog entry: the package's changelog must describe what it carries.
const released = readFileSync(path.join(here, 'changelog'), 'utf8');
const top = /^voice-hub \(([^)]+)\)/.exec(released)?.[1];
if (top !== pkg.version) throw new Error(`packaging/deb/changelog starts with ${top}, package.json says ${pkg.version}: add an entry`);
const baseVersion = values.version ?? pkg.version;
if (baseVersion !== pkg.version) {
  const later = spawnSync('dpkg', ['--compare-versions', baseVersion, 'gt', pkg.version]);
  if (later.error) throw later.error;
  if (later.status !== 0) throw new Error(`--version ${baseVersion} is not a valid version later than ${pkg.version}`);
}
/** The suffix of the legacy (Node 20) builds' version: `~` sorts it before the plain version. */
const LEGACY = '~legacy';
/** Why the legacy build exists and its risk, as lines of at most 72 characters. */
const LEGACY_NOTE = [
  'The legacy build: Node.js 20, for Debian 12 and 32-bit ARM, where the',
  "Node 24 build's uWebSockets.js addon cannot load. Node.js 20 left",
  'maintenance in April 2026 and gets no security fixes: on Debian 13 and',
  'later take the Node 24 build.',
];

/** The package version of `target`'s build. */
const versionOf = (target) => baseVersion + (target.legacy ? LEGACY : '');

/** The changelog of `target`'s package: the released one, with an entry for a rebuild or a legacy build on top. */
function changelogOf(target) {
  const version = versionOf(target);
  if (version === pkg.version) return released;
  const lines = [];
  if (baseVersion !== pkg.version) lines.push(`  * The files of ${pkg.version}, rebuilt as ${baseVersion}.`);
  if (target.legacy) lines.push(LEGACY_NOTE.map((l, i) => `${i === 0 ? '  * ' : '    '}${l}`).join('\n'));
  const date = execFileSync('date', ['-R', '-u'], { encoding: 'utf8', env: { ...process.env, LC_ALL: 'C' } }).trim();
  return `voice-hub (${version}) unstable; urgency=medium

${lines.join('\n')}

 -- voice-hub developers <voice-hub@users.noreply.github.com>  ${date}

` + released;
}

/** Highest symbol version of `prefix` (GLIBC_, GLIBCXX_) the executable needs, from its dynamic section. */
function neededVersion(objdump, exe, prefix) {
  const text = execFileSync(objdump, ['-p', exe], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  const versions = [...text.matchAll(new RegExp(`\\b${prefix}(\\d+(?:\\.\\d+)*)\\b`, 'g'))].map((m) => m[1].split('.').map(Number));
  versions.sort((a, b) => {
    for (let i = 0; i < Math.max(a.length, b.length); i++) if ((a[i] ?? 0) !== (b[i] ?? 0)) return (a[i] ?? 0) - (b[i] ?? 0);
    return 0;
  });
  return versions.at(-1) ?? [0];
}

// GLIBCXX_3.4.N -> the GCC release whose libstdc++6 first provides it.
const GLIBCXX_GCC = { 21: '5', 22: '6', 23: '7', 24: '7', 25: '8', 26: '9', 27: '10', 28: '10', 29: '11', 30: '12', 31: '13' };

/** The newest of the versions `prefix` that any of `elfs` needs. */
function neededOfAll(objdump, elfs, prefix) {
  const all = elfs.map((f) => neededVersion(objdump, f, prefix));
  all.sort((a, b) => {
    for (let i = 0; i < Math.max(a.length, b.length); i++) if ((a[i] ?? 0) !== (b[i] ?? 0)) return (a[i] ?? 0) - (b[i] ?? 0);
    return 0;
  });
  return all.at(-1);
}

/**
 * Depends of the package: what the executable needs and what the native addons inside it need once
 * unpacked (the Node 24 uWS addon needs glibc 2.38, the runtime only 2.28), so dpkg refuses a system
 * where it could not start.
 */
function depends(target, exe) {
  const objdump = target.strip.replace(/strip$/, 'objdump');
  const addons = runtimeAssets(target.uwsArch, target.abi).filter((a) => a.name.endsWith('.node')).map((a) => path.join(root, 'dist', a.name));
  for (const a of addons) statSync(a); // fails with ENOENT when `make binaries` has not run
  const elfs = [exe, ...addons];
  const glibc = neededOfAll(objdump, elfs, 'GLIBC_').join('.');
  const cxx = neededOfAll(objdump, elfs, 'GLIBCXX_');
  const gcc = GLIBCXX_GCC[cxx[2] ?? 0];
  if (!gcc) throw new Error(`${exe} needs GLIBCXX_${cxx.join('.')}: add it to GLIBCXX_GCC`);
  const deps = ['adduser', `libc6 (>= ${glibc})`, 'libgcc-s1', `libstdc++6 (>= ${gcc})`];
  // Node's armv7 build links libatomic (the issue's "armv7 needs libatomic1 on the device").
  if (execFileSync(objdump, ['-p', exe], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 }).includes('libatomic.so.1')) deps.push('libatomic1');
  return deps.join(', ');
}

/**
 * The system libopus decodes upstream audio in less CPU than the bundled wasm one (VoiceService.OpusLibrary).
 * Recommended, not required: apt installs it with the package, and without it the service still runs,
 * on the wasm decoder, and says so in its log.
 */
const RECOMMENDS = 'libopus0';

function put(file, content, mode = 0o644) {
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, content);
  chmodSync(file, mode);
}

function files(dir, rel = '') {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const name = rel ? `${rel}/${e.name}` : e.name;
    return e.isDirectory() ? files(path.join(dir, e.name), name) : [name];
  });
}

function buildDeb(key, target) {
  const exe = path.join(root, 'dist', `voice-hub-linux-${key}`);
  statSync(exe); // fails with ENOENT when `make binaries` has not run
  const stage = mkdtempSync(path.join(os.tmpdir(), `voice-hub-deb-${target.debArch}-`));
  chmodSync(stage, 0o755); // the package's ./, which mkdtemp made private
  try {
    return stageAndBuild(target, exe, stage);
  } finally {
    rmSync(stage, { recursive: true, force: true });
  }
}

function stageAndBuild(target, exe, stage) {
  const doc = path.join(stage, 'usr/share/doc/voice-hub');

  mkdirSync(path.join(stage, 'usr/bin'), { recursive: true });
  copyFileSync(exe, path.join(stage, 'usr/bin/voice-hub'));
  chmodSync(path.join(stage, 'usr/bin/voice-hub'), 0o755);
  put(path.join(stage, 'lib/systemd/system/voice-hub.service'), readFileSync(path.join(root, 'systemd/voice-hub.service')));
  const config = JSON.parse(readFileSync(path.resolve(values.defaults), 'utf8'));
  config.Storage = { ...config.Storage, DataDir: '/var/lib/voice-hub' };
  put(path.join(stage, 'etc/voice-hub/appsettings.json'), CONFFILE);
  // Not under /usr/share/doc (which may be left out): the reference an admin copies keys from.
  put(path.join(stage, 'usr/share/voice-hub/appsettings.json'), JSON.stringify(config, null, 2) + '\n');
  put(path.join(stage, 'usr/share/man/man1/voice-hub.1.gz'), gzipSync(readFileSync(path.join(here, 'voice-hub.1')), { level: 9 }));
  put(path.join(doc, 'changelog.gz'), gzipSync(changelogOf(target), { level: 9 }));
  const runtimeDir = path.dirname(nodeRuntime(target, path.join(root, '.cache', 'node-runtimes')));
  const tgz = readdirSync(runtimeDir).find((f) => f.endsWith('.tgz'));
  put(path.join(doc, 'copyright'), copyrightFile(root, target.pkg, path.join(runtimeDir, tgz)));
  // Not under /usr/share/doc: a package must work with its docs removed (policy 12.3), and the docs say to copy this.
  put(path.join(stage, 'usr/share/voice-hub/port-80.conf'), readFileSync(path.join(root, 'systemd/port-80.conf')));
  put(path.join(stage, 'usr/share/lintian/overrides/voice-hub'), readFileSync(path.join(here, 'lintian-overrides')));

  const payload = files(stage).sort();
  const installedKiB = payload.reduce((n, f) => n + Math.ceil(statSync(path.join(stage, f)).size / 1024), 0);
  put(path.join(stage, 'DEBIAN/md5sums'), payload.map((f) => `${createHash('md5').update(readFileSync(path.join(stage, f))).digest('hex')}  ${f}\n`).join(''));
  put(path.join(stage, 'DEBIAN/conffiles'), '/etc/voice-hub/appsettings.json\n');
  const conffileMd5 = createHash('md5').update(CONFFILE).digest('hex');
  for (const script of ['preinst', 'postinst', 'prerm', 'postrm']) put(path.join(stage, 'DEBIAN', script), readFileSync(path.join(here, script), 'utf8').replace('@CONFFILE_MD5@', conffileMd5).replace('@CONFFILE@', CONFFILE), 0o755);
  put(
    path.join(stage, 'DEBIAN/control'),
    `Package: voice-hub
Version: ${versionOf(target)}
Architecture: ${target.debArch}
Maintainer: voice-hub developers <voice-hub@users.noreply.github.com>
Installed-Size: ${installedKiB}
Depends: ${depends(target, exe)}
Recommends: ${RECOMMENDS}
Section: net
Priority: optional
Description: backend for voice-assistant devices
 voice-hub serves an HTTP API and a SignalR hub to voice-assistant devices,
 relays their voice sessions to an upstream voice server, keeps devices,
 sessions and settings in an SQLite database and publishes state changes to
 an MQTT broker, with Home Assistant discovery.
 .
 One self-contained executable, Node.js ${target.pkg.split('@')[1]} included, run by a
 hardened systemd unit as the voice-hub user, listening on port 5000.${target.legacy ? `\n .\n ${LEGACY_NOTE.join('\n ')}` : ''}
`,
  );

  // Folders 0755 whatever the umask of whoever builds.
  for (const dir of [stage, ...readdirSync(stage, { recursive: true }).map((f) => path.join(stage, f))]) {
    if (statSync(dir).isDirectory()) chmodSync(dir, 0o755);
  }
  mkdirSync(outDir, { recursive: true });
  const deb = path.join(outDir, `voice-hub_${versionOf(target)}_${target.debArch}.deb`);
  execFileSync('dpkg-deb', ['--root-owner-group', `-Z${values.compression}`, '--build', stage, deb], { stdio: ['ignore', 'ignore', 'inherit'] });
  console.log(`${deb.startsWith(root + '/') ? path.relative(root, deb) : deb}: ${(statSync(deb).size / 1048576).toFixed(1)} MiB`);
  return deb;
}

const wanted = positionals.length ? positionals : Object.keys(TARGETS);
const debs = wanted.map((key) => {
  if (!TARGETS[key]) throw new Error(`unknown build ${key}; known: ${Object.keys(TARGETS).join(', ')}`);
  return buildDeb(key, TARGETS[key]);
});
if (!values['no-lintian']) {
  // Overrides (packaging/deb/lintian-overrides) say why each remaining tag is expected.
  execFileSync('lintian', ['--fail-on', 'error,warning', '--tag-display-limit', '0', ...debs], { stdio: 'inherit' });
  console.log('lintian: clean');
}
