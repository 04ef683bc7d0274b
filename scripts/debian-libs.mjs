// Debian 13 ("trixie") C and C++ runtime libraries on a Debian 12 machine, to run what needs glibc >= 2.38
// (the Node 24 builds' uWS addon) where it will run: libc6, libstdc++6 and libgcc-s1 of the target
// architecture, with libopus0 (which the service decodes upstream audio with where it is installed), downloaded from the Debian archive as packages with apt-get (a private apt folder with a
// trixie source, so this machine's apt is left alone), unpacked into a folder and kept in
// .cache/debian-libs/ under a key of the suite, architecture and package list. Programs use them through
// that folder's own dynamic loader: `<root>/lib64/ld-linux-x86-64.so.2 --library-path <libs> prog`
// (x64) or `qemu-aarch64 -L <root> prog` (arm64), or, for a node that spawns itself (the test runner
// does), a copy whose ELF interpreter and run path name them (patchelf).
//
// Usage: node scripts/debian-libs.mjs node24   prints the path of Node 24 on trixie's libraries (x64)
//        node scripts/debian-libs.mjs root ARCH prints the library root for amd64 or arm64
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { TARGETS, nodeRuntime } from './sea-runtime.mjs';

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
const CACHE = path.join(root, '.cache', 'debian-libs');
export const SUITE = 'trixie';
const PACKAGES = ['libc6', 'libstdc++6', 'libgcc-s1', 'libopus0'];
/** Per Debian architecture: its dynamic loader and library folder inside the root (merged /usr). */
const LAYOUT = {
  amd64: { loader: 'lib64/ld-linux-x86-64.so.2', libDir: 'usr/lib/x86_64-linux-gnu' },
  arm64: { loader: 'lib/ld-linux-aarch64.so.1', libDir: 'usr/lib/aarch64-linux-gnu' },
};

/**
 * The Debian archive this machine's apt uses (one-line and deb822 sources), or $DEBIAN_MIRROR: the
 * first `deb` source naming one of `suites` (any mirror of the archive carries every suite).
 */
export function debianMirror(suites) {
  if (process.env.DEBIAN_MIRROR) return process.env.DEBIAN_MIRROR;
  const dir = '/etc/apt/sources.list.d';
  const files = ['/etc/apt/sources.list', ...(existsSync(dir) ? readdirSync(dir).map((f) => path.join(dir, f)) : [])];
  for (const file of files.filter((f) => existsSync(f))) {
    const text = readFileSync(file, 'utf8');
    if (file.endsWith('.sources')) {
      for (const stanza of text.split(/\n\s*\n/)) {
        const field = (name) => (new RegExp(`^${name}:\\s*(.*)$`, 'mi').exec(stanza)?.[1] ?? '').trim().split(/\s+/);
        const uri = field('URIs')[0];
        if (field('Types').includes('deb') && field('Suites').some((s) => suites.includes(s)) && uri) return uri;
      }
    } else if (file.endsWith('.list')) {
      for (const m of text.matchAll(/^deb\s+(?:\[[^\]]*\]\s+)?(\S+)\s+(\S+)/gm)) if (m[1] && suites.includes(m[2])) return m[1];
    }
  }
  throw new Error(`no apt source for Debian ${suites.join(' or ')} in /etc/apt/sources.list(.d): set DEBIAN_MIRROR`);
}

/** The Debian archive, found through this machine's own Debian release (or any of 12 and 13). */
function archive() {
  const codename = /^VERSION_CODENAME=(\S+)/m.exec(existsSync('/etc/os-release') ? readFileSync('/etc/os-release', 'utf8') : '')?.[1];
  return debianMirror([...(codename ? [codename] : []), 'bookworm', SUITE]);
}

function run(cmd, args, timeout = 300_000) {
  try {
    return execFileSync(cmd, args, { encoding: 'utf8', stdio: 'pipe', timeout, maxBuffer: 64 * 1024 * 1024 });
  } catch (e) {
    throw new Error(`${cmd} ${args.join(' ')} failed:\n${e.stdout ?? ''}${e.stderr ?? e.message}`);
  }
}

/** Downloads PACKAGES of `debArch` from SUITE into `dest` with a private apt configuration. */
function download(debArch, dest) {
  const apt = path.join(CACHE, 'apt');
  for (const d of ['lists/partial', 'cache/archives/partial', 'parts', 'prefs']) mkdirSync(path.join(apt, d), { recursive: true });
  const keyring = '/usr/share/keyrings/debian-archive-keyring.gpg';
  writeFileSync(path.join(apt, 'sources.list'), `deb [arch=amd64,arm64 signed-by=${keyring}] ${archive()} ${SUITE} main\n`);
  const opts = [
    `Dir::Etc::SourceList=${path.join(apt, 'sources.list')}`,
    `Dir::Etc::SourceParts=${path.join(apt, 'parts')}`,
    `Dir::Etc::PreferencesParts=${path.join(apt, 'prefs')}`,
    `Dir::State::Lists=${path.join(apt, 'lists')}`,
    'Dir::State::Status=/dev/null',
    `Dir::Cache=${path.join(apt, 'cache')}`,
    'APT::Architecture=amd64',
    'APT::Architectures::=amd64',
    'APT::Architectures::=arm64',
    // apt's download sandbox user must be able to open /dev/null, which a container may deny it.
    'APT::Sandbox::User=root',
  ].flatMap((o) => ['-o', o]);
  // Test files run in parallel and may all ask at once: apt would refuse a second user of its lists
  // (a lock error), flock makes each wait for the other instead.
  const lock = path.join(apt, 'lock');
  run('flock', [lock, 'apt-get', ...opts, '-q', 'update']);
  mkdirSync(dest, { recursive: true });
  execFileSync('flock', [lock, 'apt-get', ...opts, '-q', 'download', ...PACKAGES.map((p) => `${p}:${debArch}`)], { cwd: dest, stdio: 'pipe', timeout: 300_000 });
}

/**
 * The folder holding SUITE's PACKAGES for `debArch` (amd64, arm64), unpacked as installed; made once.
 * Returns it with its loader, its library folder and the package versions it holds.
 */
export function debianLibs(debArch) {
  const layout = LAYOUT[debArch];
  if (!layout) throw new Error(`no library layout for ${debArch}; known: ${Object.keys(LAYOUT).join(', ')}`);
  const key = createHash('sha256').update(JSON.stringify({ SUITE, PACKAGES, layout })).digest('hex').slice(0, 12);
  const dir = path.join(CACHE, `${SUITE}-${debArch}-${key}`);
  const done = path.join(dir, 'versions');
  if (!existsSync(done)) {
    const work = `${dir}.${process.pid}.partial`;
    rmSync(work, { recursive: true, force: true });
    const debs = path.join(work, 'debs');
    download(debArch, debs);
    const files = readdirSync(debs).filter((f) => f.endsWith('.deb'));
    if (files.length !== PACKAGES.length) throw new Error(`apt-get download got ${files.join(', ')} for ${PACKAGES.join(', ')}`);
    for (const f of files) run('dpkg-deb', ['-x', path.join(debs, f), work]);
    // What base-files links in a trixie system (merged /usr): the loader's path as programs name it.
    for (const link of ['lib', 'lib64']) if (!existsSync(path.join(work, link))) symlinkSync(`usr/${link}`, path.join(work, link));
    writeFileSync(path.join(work, 'versions'), files.sort().join('\n') + '\n');
    rmSync(debs, { recursive: true });
    // Renamed whole, so the folder exists only complete; another process may have been first.
    try {
      renameSync(work, dir);
    } catch (e) {
      if (!existsSync(done)) throw e;
      rmSync(work, { recursive: true, force: true });
    }
  }
  const loader = path.join(dir, layout.loader);
  if (!existsSync(loader)) throw new Error(`${loader} is missing: remove ${dir} and run again`);
  return { root: dir, loader, libDir: path.join(dir, layout.libDir), versions: readFileSync(done, 'utf8').trim().split('\n') };
}

/**
 * Node 24 (the x64 executables' runtime, as published) on trixie's libraries: a copy whose ELF
 * interpreter is trixie's loader and whose run path is trixie's library folder, so it and every child
 * it spawns with process.execPath (the test runner's) load them, with no wrapper around it.
 */
export function node24OnDebian13() {
  const target = TARGETS.x64;
  const libs = debianLibs('amd64');
  const node = nodeRuntime(target, path.join(root, '.cache', 'node-runtimes'));
  const version = target.pkg.split('@')[1];
  const out = path.join(path.dirname(libs.root), `node-${version}-on-${path.basename(libs.root)}`);
  if (!existsSync(out)) {
    const tmp = `${out}.${process.pid}.partial`;
    rmSync(tmp, { force: true });
    execFileSync('cp', [node, tmp]);
    run('patchelf', ['--set-interpreter', libs.loader, '--set-rpath', libs.libDir, tmp]);
    renameSync(tmp, out);
  }
  return out;
}

if (process.argv[1] === new URL(import.meta.url).pathname) {
  try {
    const [what, arch] = process.argv.slice(2);
    if (what === 'node24') console.log(node24OnDebian13());
    else if (what === 'root' && arch) console.log(debianLibs(arch).root);
    else throw new Error('usage: node scripts/debian-libs.mjs node24 | root amd64|arm64');
  } catch (e) {
    console.error(`debian-libs: ${e instanceof Error ? e.message : String(e)}`);
    process.exit(1);
  }
}
