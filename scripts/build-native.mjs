// The project's own native addons, compiled for each target into dist/native/<name>_linux_<arch>.node:
// natively with `gcc` for this machine's arch, with Debian's cross compilers (gcc-aarch64-linux-gnu,
// gcc-arm-linux-gnueabihf) for the others. Neither needs Node, libc or library headers: what they call is
// declared in src/native/node-exports.h or in the source, resolves against the running node, and so they
// link with -nostdlib.
//   src/native/malloc-tune.c   glibc malloc thresholds set from inside the process.
//   src/native/opus-decode.c   the system libopus (opened at run time, so no libopus to link against),
//                              inline or on decoder threads of its own; libgcc for the compiler's helpers
//                              (32-bit ARM has no divide instruction).
import { execFileSync } from 'node:child_process';
import { mkdirSync, renameSync, rmSync } from 'node:fs';
import path from 'node:path';
import { mallocAddonFileName, opusAddonFileName } from '../src/runtime/asset-manifest.mjs';

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');

/** Node's arch name -> the Debian cross compiler for it. */
const CROSS = { x64: 'x86_64-linux-gnu-gcc', arm64: 'aarch64-linux-gnu-gcc', arm: 'arm-linux-gnueabihf-gcc' };
export const NATIVE_ARCHS = Object.keys(CROSS);

const COMMON_FLAGS = ['-shared', '-fPIC', '-O2', '-Wall', '-Wextra', '-Werror', '-fvisibility=hidden', '-ffreestanding', '-nostdlib',
  // Reproducible: no build id that differs between otherwise identical builds.
  '-Wl,--build-id=none'];

/** Each addon: its source, its file name for an arch, and the libraries it links (after the source). */
export const OWN_ADDONS = Object.freeze({
  'malloc-tune': { source: 'src/native/malloc-tune.c', fileName: mallocAddonFileName, libs: [] },
  'opus-decode': { source: 'src/native/opus-decode.c', fileName: opusAddonFileName, libs: ['-lgcc'] },
});

export function compilerFor(arch) {
  if (!CROSS[arch]) throw new Error(`no compiler known for ${arch}`);
  return arch === process.arch ? 'gcc' : CROSS[arch];
}

/**
 * Compiles addon `name` (a key of OWN_ADDONS) for `arch` into `<distDir>/native/` and returns its path.
 * Written beside and renamed: a running service has the old one mapped, and rewriting it in place
 * would crash it.
 */
export function buildAddon(distDir, arch, name) {
  const addon = OWN_ADDONS[name];
  if (!addon) throw new Error(`no addon named ${name}`);
  const dir = path.join(distDir, 'native');
  mkdirSync(dir, { recursive: true });
  const dest = path.join(dir, addon.fileName(arch));
  const tmp = `${dest}.tmp-${process.pid}`;
  const cc = compilerFor(arch);
  try {
    execFileSync(cc, [...COMMON_FLAGS, '-o', tmp, path.join(root, addon.source), ...addon.libs], { stdio: 'pipe' });
  } catch (e) {
    rmSync(tmp, { force: true });
    const debianPackage = cc === 'gcc' ? 'gcc' : `gcc-${cc.slice(0, -'-gcc'.length)}`;
    const why = e.code === 'ENOENT' ? `${cc} is not installed (Debian package ${debianPackage})` : `${e.stderr ?? e.message}`;
    throw new Error(`cannot build ${addon.fileName(arch)}: ${why}`);
  }
  renameSync(tmp, dest);
  return dest;
}

/** Every addon of OWN_ADDONS for `arch`; returns their paths. */
export function buildOwnAddons(distDir, arch) {
  return Object.keys(OWN_ADDONS).map((name) => buildAddon(distDir, arch, name));
}

