// Loads the native uWebSockets.js addon directly. The package's own loader silently falls back to a
// slow JavaScript implementation when the addon does not load; we never allow that: if the native
// addon does not load, start-up fails with the path tried and why.
import { createRequire } from 'node:module';
import type * as uws from 'uWebSockets.js';
import { uwsAddonFileName } from '../runtime/asset-manifest.mjs';
import { assetFile } from '../runtime/assets.js';

export type Uws = typeof uws;

export interface NativeUws {
  readonly uws: Uws;
  readonly addonPath: string;
}

/**
 * File name of the addon for this process, as the package names it (`uws_linux_arm64_137.node`): the
 * one built for the running Node's module ABI, so Node 20 and Node 24 each load their own.
 */
export function addonFileName(platform: string = process.platform, arch: string = process.arch, abi: string = process.versions.modules): string {
  return uwsAddonFileName(arch, platform, abi);
}

let loaded: NativeUws | undefined;

/**
 * The addon comes from an explicit path when the caller gives one (`addonPath`), else through the
 * asset lookup: unpacked from the single executable into the cache dir, `native/` beside the bundle, or
 * the pinned package's file under development. No environment variable names another: native code is
 * loaded only from files the service wrote or shipped (docs/security.md, "Code loaded from disk").
 */
export function loadNativeUws(options: { addonPath?: string; bundleDir?: string } = {}): NativeUws {
  if (loaded) return loaded;
  const name = addonFileName();
  let file = options.addonPath;
  try {
    file ??= assetFile(`native/${name}`, options.bundleDir);
    // require() caches by path, so a second load of the same file (tests import the package too)
    // returns the same module instead of failing to self-register.
    const mod = createRequire(file)(file) as Uws;
    if (typeof mod.App !== 'function') throw new Error(`${file} is not a uWebSockets.js addon`);
    loaded = { uws: mod, addonPath: file };
    return loaded;
  } catch (e) {
    const reason = e instanceof Error ? e.message.split('\n')[0] : String(e);
    throw new Error(`the native uWebSockets.js addon (${name}) did not load; refusing to fall back to the slow JS implementation: ${reason}`);
  }
}
