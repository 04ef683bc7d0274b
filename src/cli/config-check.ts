// `voice-hub config check`: the effective configuration with secrets masked, and the values stored
// through the API (/api/config/{category}) that override the file and defaults. It only reads, so it
// works beside a running service and writes nothing to its data directory.
import { acceptsStored } from '../api/routes/config.js';
import { formatConfigReport } from '../config/report.js';
import { loadCaFile, loadTlsFiles } from '../http/tls.js';
import type { LoadedConfig } from '../config/types.js';
import { CATEGORY_NAMES, ConfigCategories } from '../settings/categories.js';
import { openSettingsReadOnly } from '../store/read-only.js';
import { publicServerUrl } from '../upstream/public-url.js';

/**
 * Prints the configuration, then what the database stores: the first part comes out even when the
 * database cannot be read (damaged, not this user's), and the failure after it says why.
 */
export async function configCheck(loaded: LoadedConfig, print: (lines: string[]) => void, wasmBinary?: Uint8Array): Promise<void> {
  print(formatConfigReport(loaded, publicServerUrl));
  // What serve checks before it listens: a certificate, key or CA file it would refuse (exit 78) is
  // refused here too, so a passing check means the service starts with these settings.
  loadTlsFiles(loaded.config.Server);
  loadCaFile(loaded.config.VoiceService.CaFile);
  const store = await openSettingsReadOnly(loaded.config.Storage.DataDir, wasmBinary);
  if (!store) return;
  const lines: string[] = [];
  try {
    const categories = new ConfigCategories(loaded, store.settings, acceptsStored);
    lines.push('# stored through the API (override the file and defaults, not env or flags)');
    for (const category of CATEGORY_NAMES) {
      const values = categories.get(category);
      for (const [key, source] of Object.entries(categories.sources(category))) {
        if (source === 'api') lines.push(`${category}.${key} = ${JSON.stringify(values[key])}  (api)`);
      }
    }
    for (const unusable of categories.unusable()) lines.push(`${unusable}  (stored, not used: the API would refuse it; PUT a valid value or null)`);
  } finally {
    store.close();
  }
  print(lines);
}
