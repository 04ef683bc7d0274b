// A fresh Debian 12 root for the booted-package test: made once by debootstrap from the Debian archive
// this machine's apt uses, kept as a tarball in .cache/debian-root/ under a key of everything that
// shapes it (suite, variant, packages, preparation), and unpacked afresh for every run.
import { execFileSync, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import path from 'node:path';
import { ROOT } from '../support/service.js';
import { tmpDir } from '../support/tmp.js';

const SUITE = 'bookworm';
const VARIANT = 'minbase';
/** systemd to boot; adduser for the package's Depends; curl for the README's `curl .../health`. */
const PACKAGES = ['systemd', 'adduser', 'curl'];
/**
 * Run in the new root before it is packed: no console for a getty; /etc/hosts as every installed
 * system has it (debootstrap writes none, and the shipped configuration names the broker "localhost").
 */
const PREPARE = [
  'ln -sf /dev/null /etc/systemd/system/console-getty.service',
  "printf '127.0.0.1\\tlocalhost\\n::1\\tlocalhost ip6-localhost ip6-loopback\\n' > /etc/hosts",
].join(' && ');
const CACHE = path.join(ROOT, '.cache', 'debian-root');
/** debootstrap downloads about 60 MB and unpacks 250 MB: minutes on a slow link, never unbounded. */
const DEBOOTSTRAP_TIMEOUT_MS = 300_000;

/** The Debian mirror for SUITE from this machine's apt sources (one-line and deb822), or $DEBIAN_MIRROR. */
export function debianMirror(): string {
  if (process.env.DEBIAN_MIRROR) return process.env.DEBIAN_MIRROR;
  const dir = '/etc/apt/sources.list.d';
  const files = ['/etc/apt/sources.list', ...(existsSync(dir) ? readdirSync(dir).map((f) => path.join(dir, f)) : [])];
  for (const file of files.filter((f) => existsSync(f))) {
    const text = readFileSync(file, 'utf8');
    if (file.endsWith('.sources')) {
      for (const stanza of text.split(/\n\s*\n/)) {
        const field = (name: string): string[] => (new RegExp(`^${name}:\\s*(.*)$`, 'mi').exec(stanza)?.[1] ?? '').trim().split(/\s+/);
        const uri = field('URIs')[0];
        if (field('Types').includes('deb') && field('Suites').includes(SUITE) && uri) return uri;
      }
    } else if (file.endsWith('.list')) {
      for (const m of text.matchAll(/^deb\s+(?:\[[^\]]*\]\s+)?(\S+)\s+(\S+)/gm)) if (m[1] && m[2] === SUITE) return m[1];
    }
  }
  throw new Error(`no apt source for Debian ${SUITE} in /etc/apt/sources.list(.d): set DEBIAN_MIRROR`);
}

function cacheKey(): string {
  return createHash('sha256').update(JSON.stringify({ SUITE, VARIANT, PACKAGES, PREPARE })).digest('hex').slice(0, 16);
}

/** Makes the cached tarball with debootstrap; throws with debootstrap's last lines when it fails. */
function bootstrap(tarball: string): void {
  const mirror = debianMirror();
  const work = tmpDir('voice-hub-debootstrap-');
  const target = path.join(work, 'root');
  const res = spawnSync('debootstrap', [`--variant=${VARIANT}`, `--include=${PACKAGES.join(',')}`, SUITE, target, mirror], {
    encoding: 'utf8',
    timeout: DEBOOTSTRAP_TIMEOUT_MS,
    maxBuffer: 64 * 1024 * 1024,
  });
  if (res.error || res.status !== 0) {
    const tail = `${res.stdout ?? ''}${res.stderr ?? ''}`.trim().split('\n').slice(-15).join('\n');
    const why = res.error ? res.error.message : `exit ${res.status}`;
    throw new Error(`debootstrap ${SUITE} from ${mirror} failed (${why}):\n${tail}`);
  }
  execFileSync('chroot', [target, 'sh', '-c', PREPARE]);
  mkdirSync(CACHE, { recursive: true });
  const partial = `${tarball}.${process.pid}.partial`;
  execFileSync('tar', ['--numeric-owner', '-C', target, '-cf', partial, '.'], { timeout: 120_000 });
  renameSync(partial, tarball);
  rmSync(work, { recursive: true, force: true });
}

export interface FreshRoot {
  root: string;
  /** What happened, for the test log: cache hit or debootstrap, and how long it took. */
  how: string;
}

/** A new Debian root folder, from the cache (made first if missing). */
export function freshDebianRoot(): FreshRoot {
  const started = Date.now();
  const tarball = path.join(CACHE, `${SUITE}-${VARIANT}-${cacheKey()}.tar`);
  const cached = existsSync(tarball);
  if (!cached) bootstrap(tarball);
  const root = tmpDir('voice-hub-root-');
  // It becomes /: the service user must be able to walk it (mkdtemp made it private).
  chmodSync(root, 0o755);
  execFileSync('tar', ['--numeric-owner', '-C', root, '-xpf', tarball], { timeout: 120_000 });
  const seconds = ((Date.now() - started) / 1000).toFixed(1);
  const what = `${path.relative(ROOT, tarball)} (${PACKAGES.join(', ')})`;
  return { root, how: cached ? `unpacked cached ${what} in ${seconds} s` : `debootstrap ${SUITE} into ${what} and unpacked in ${seconds} s` };
}
