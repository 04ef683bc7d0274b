// `voice-hub config check`: the effective configuration with secrets masked, and the values stored
// through the API (/api/config/{category}) that override the file and defaults. It only reads, so it
// works beside a running service and writes nothing to its data directory.
import { formatConfigReport } from '../config/report.js';
import type { LoadedConfig } from '../config/types.js';
import { CATEGORY_NAMES, ConfigCategories } from '../settings/categories.js';
import { openSettingsReadOnly } from '../store/read-only.js';

export async function configCheckLines(loaded: LoadedConfig, wasmBinary?: Uint8Array): Promise<string[]> {
  const lines = formatConfigReport(loaded);
  const store = await openSettingsReadOnly(loaded.config.Storage.DataDir, wasmBinary);
  if (!store) return lines;
  try {
    const categories = new ConfigCategories(loaded, store.settings);
    lines.push('# stored through the API (override the file and defaults, not env or flags)');
    for (const category of CATEGORY_NAMES) {
      const values = categories.get(category);
      for (const [key, source] of Object.entries(categories.sources(category))) {
        if (source === 'api') lines.push(`${category}.${key} = ${JSON.stringify(values[key])}  (api)`);
      }
    }
  } finally {
    store.close();
  }
  return lines;
}
