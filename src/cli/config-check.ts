// `voice-hub config check`: the effective configuration with secrets masked, and the values stored
// through the API (/api/config/{category}) that override the file and defaults.
import { existsSync } from 'node:fs';
import path from 'node:path';
import { formatConfigReport } from '../config/report.js';
import type { LoadedConfig } from '../config/types.js';
import { silentLogger } from '../log/logger.js';
import { CATEGORY_NAMES, ConfigCategories } from '../settings/categories.js';
import { DATABASE_FILE_NAME, openStore } from '../store/index.js';

export async function configCheckLines(loaded: LoadedConfig, wasmBinary?: Uint8Array): Promise<string[]> {
  const lines = formatConfigReport(loaded);
  const dataDir = loaded.config.Storage.DataDir;
  if (!existsSync(path.join(dataDir, DATABASE_FILE_NAME))) return lines;
  const store = await openStore({ dataDir, flushIntervalMs: 60_000, logger: silentLogger, wasmBinary });
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
    await store.close();
  }
  return lines;
}
