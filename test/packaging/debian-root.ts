// A fresh Debian root (12 "bookworm" or 13 "trixie") for the booted-package tests: made once by
// debootstrap from the Debian archive this machine's apt uses, kept as a tarball in .cache/debian-root/
// under a key of everything that shapes it (suite, variant, packages, preparation), and unpacked afresh
// for every run.
import { execFileSync, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, renameSync, rmSync } from 'node:fs';
import path from 'node:path';
import { debianMirror } from '../../scripts/debian-libs.mjs';
import { ROOT } from '../support/service.js';
import { tmpDir } from '../support/tmp.js';

const VARIANT = 'minbase';
/**
 * systemd to boot; adduser for the package's Depends and libopus0 for its Recommends (dpkg -i installs
 * neither); curl for the README's `curl .../health`.
 */
const PACKAGES = ['systemd', 'adduser', 'libopus0', 'curl'];
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

function cacheKey(suite: string): string {
  return createHash('sha256').update(JSON.stringify({ SUITE: suite, VARIANT, PACKAGES, PREPARE })).digest('hex').slice(0, 16);
}

/** Makes the cached tarball with debootstrap; throws with debootstrap's last lines when it fails. */
function bootstrap(suite: string, tarball: string): void {
  // Any Debian mirror this machine's apt names carries every suite.
  const mirror = debianMirror(['bookworm', 'trixie']);
  const work = tmpDir('voice-hub-debootstrap-');
  const target = path.join(work, 'root');
  const res = spawnSync('debootstrap', [`--variant=${VARIANT}`, `--include=${PACKAGES.join(',')}`, suite, target, mirror], {
    encoding: 'utf8',
    timeout: DEBOOTSTRAP_TIMEOUT_MS,
    maxBuffer: 64 * 1024 * 1024,
  });
  if (res.error || res.status !== 0) {
    const tail = `${res.stdout ?? ''}${res.stderr ?? ''}`.trim().split('\n').slice(-15).join('\n');
    const why = res.error ? res.error.message : `exit ${res.status}`;
    throw new Error(`debootstrap ${suite} from ${mirror} failed (${why}):\n${tail}`);
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

/** A new root folder of Debian `suite`, from the cache (made first if missing). */
export function freshDebianRoot(suite: string): FreshRoot {
  const started = Date.now();
  const tarball = path.join(CACHE, `${suite}-${VARIANT}-${cacheKey(suite)}.tar`);
  const cached = existsSync(tarball);
  if (!cached) bootstrap(suite, tarball);
  const root = tmpDir('voice-hub-root-');
  // It becomes /: the service user must be able to walk it (mkdtemp made it private).
  chmodSync(root, 0o755);
  execFileSync('tar', ['--numeric-owner', '-C', root, '-xpf', tarball], { timeout: 120_000 });
  const seconds = ((Date.now() - started) / 1000).toFixed(1);
  const what = `${path.relative(ROOT, tarball)} (${PACKAGES.join(', ')})`;
  return { root, how: cached ? `unpacked cached ${what} in ${seconds} s` : `debootstrap ${suite} into ${what} and unpacked in ${seconds} s` };
}
