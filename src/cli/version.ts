// `voice-hub --version`: what a technician needs to report a problem.
import { loadNativeUws } from '../http/uws-native.js';
import { builtVersion } from '../version.js';

export function versionText(bundleDir: string | undefined): string {
  const version = builtVersion();
  let uws: string;
  try {
    uws = `native (${loadNativeUws({ bundleDir }).addonPath})`;
  } catch (e) {
    uws = `NOT LOADED: ${e instanceof Error ? e.message : String(e)}`;
  }
  return `voice-hub ${version}\nnode ${process.version}\nplatform ${process.platform}-${process.arch}\nuWebSockets.js ${uws}`;
}
