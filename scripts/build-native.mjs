// The project's own native addon, src/native/malloc-tune.c (glibc malloc thresholds set from inside
// the process), compiled for each target into dist/native/malloc_tune_linux_<arch>.node: natively with
// `gcc` for this machine's arch, with Debian's cross compilers (gcc-aarch64-linux-gnu,
// gcc-arm-linux-gnueabihf) for the others. It needs no Node or libc headers (see the source).
import { execFileSync } from 'node:child_process';
import { mkdirSync, renameSync, rmSync } from 'node:fs';
import path from 'node:path';
import { mallocAddonFileName as mallocAddonName } from '../src/runtime/asset-manifest.mjs';

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
const SOURCE = path.join(root, 'src/native/malloc-tune.c');

/** Node's arch name -> the Debian cross compiler for it. */
const CROSS = { x64: 'x86_64-linux-gnu-gcc', arm64: 'aarch64-linux-gnu-gcc', arm: 'arm-linux-gnueabihf-gcc' };
export const NATIVE_ARCHS = Object.keys(CROSS);


export function compilerFor(arch) {
  if (!CROSS[arch]) throw new Error(`no compiler known for ${arch}`);
  return arch === process.arch ? 'gcc' : CROSS[arch];
}

/**
 * Compiles the addon for `arch` into `<distDir>/native/` and returns its path. Written beside and
 * renamed: a running service has the old one mapped, and rewriting it in place would crash it.
 */
export function buildMallocAddon(distDir, arch) {
  const dir = path.join(distDir, 'native');
  mkdirSync(dir, { recursive: true });
  const dest = path.join(dir, mallocAddonName(arch));
  const tmp = `${dest}.tmp-${process.pid}`;
  const cc = compilerFor(arch);
  try {
    execFileSync(cc, [
      '-shared', '-fPIC', '-O2', '-Wall', '-Wextra', '-Werror', '-ffreestanding', '-nostdlib', '-fvisibility=hidden',
      // Reproducible: no build id that differs between otherwise identical builds.
      '-Wl,--build-id=none', '-o', tmp, SOURCE,
    ], { stdio: 'pipe' });
  } catch (e) {
    rmSync(tmp, { force: true });
    const debianPackage = cc === 'gcc' ? 'gcc' : `gcc-${cc.slice(0, -'-gcc'.length)}`;
    const why = e.code === 'ENOENT' ? `${cc} is not installed (Debian package ${debianPackage})` : `${e.stderr ?? e.message}`;
    throw new Error(`cannot build ${mallocAddonName(arch)}: ${why}`);
  }
  renameSync(tmp, dest);
  return dest;
}
