// Loads the native uWebSockets.js addon directly. The package's own loader silently falls back to a
// slow JavaScript implementation when the addon does not load (DESIGN.md "Runtime"); we never allow
// that: if no native addon loads, start-up fails with the paths tried and why.
import { createRequire } from 'node:module';
import { existsSync } from 'node:fs';
import path from 'node:path';
import type * as uws from 'uWebSockets.js';
import { extractNativeAddon } from '../runtime/assets.js';

export type Uws = typeof uws;

export interface NativeUws {
  readonly uws: Uws;
  readonly addonPath: string;
}

/** File name of the addon for this process, as the package names it (`uws_linux_arm64_115.node`). */
export function addonFileName(platform = process.platform, arch = process.arch, abi = process.versions.modules): string {
  return `uws_${platform}_${arch}_${abi}.node`;
}

let loaded: NativeUws | undefined;

/**
 * Candidate locations, first match wins: an explicit path (set by the single-executable launcher after
 * it unpacked the addon), `native/` beside the bundle, then the npm package's `binaries/` folder.
 */
function candidates(explicit: string | undefined, bundleDir: string | undefined): string[] {
  const name = addonFileName();
  const list: string[] = [];
  if (explicit) list.push(explicit);
  if (bundleDir) list.push(path.join(bundleDir, 'native', name));
  try {
    const req = createRequire(path.join(process.cwd(), 'noop.js'));
    list.push(path.join(path.dirname(req.resolve('uWebSockets.js/package.json')), 'binaries', name));
  } catch {
    // package not installed: only the bundled copy can work
  }
  return list;
}

export function loadNativeUws(options: { addonPath?: string; bundleDir?: string } = {}): NativeUws {
  if (loaded) return loaded;
  const tried: string[] = [];
  let explicit = options.addonPath ?? process.env.VOICE_HUB_UWS_ADDON;
  try {
    // A single executable carries its addon: unpacked to the cache dir, it comes before any file on disk.
    explicit ??= extractNativeAddon(addonFileName());
  } catch (e) {
    tried.push(`addon embedded in ${process.execPath}: ${e instanceof Error ? e.message : String(e)}`);
  }
  for (const file of candidates(explicit, options.bundleDir)) {
    if (!existsSync(file)) {
      tried.push(`${file}: not found`);
      continue;
    }
    try {
      // require() caches by path, so a second load of the same file (tests import the package too)
      // returns the same module instead of failing to self-register.
      const mod = createRequire(file)(file) as Uws;
      if (typeof mod.App !== 'function') throw new Error('not a uWebSockets.js addon');
      loaded = { uws: mod, addonPath: file };
      return loaded;
    } catch (e) {
      tried.push(`${file}: ${e instanceof Error ? e.message.split('\n')[0] : String(e)}`);
    }
  }
  throw new Error(
    `the native uWebSockets.js addon (${addonFileName()}) did not load; refusing to fall back to the slow JS implementation. Tried: ${tried.join('; ')}`,
  );
}
