// `voice-hub config check`: the effective configuration with secrets masked, and the values stored
// through the API (/api/config/{category}) that override the file and defaults; then it refuses what
// `serve` would refuse, with the same line and exit code. It only reads, so it works beside a running
// service and writes nothing to its data directory.
import path from 'node:path';
import { acceptsStored } from '../api/routes/config.js';
import { formatConfigReport } from '../config/report.js';
import { jsonText } from '../config/shown.js';
import { loadCaFile, loadTlsFiles } from '../http/tls.js';
import type { LoadedConfig } from '../config/types.js';
import { CATEGORY_NAMES, ConfigCategories } from '../settings/categories.js';
import { openSettingsReadOnly, type ReadOnlySettings } from '../store/read-only.js';
import { publicServerUrl } from '../upstream/public-url.js';
import { DATABASE_FILE_NAME } from '../store/index.js';
import { assertDataFilesUsable } from '../wiring/data-files.js';
import { dataDirFailure, systemFailureText } from './fatal.js';
import { assertListenAddress } from '../process/port-owner.js';
import { listenRefusal } from './listen-refusal.js';
import { CliExit } from './load.js';

/**
 * Prints the configuration, each key with the value the service uses (a stored one in its place), then
 * what the database stores: the configuration comes out even when serve would refuse it or a data file
 * (damaged, not this user's), and the failure after it says why.
 */
export async function configCheck(loaded: LoadedConfig, print: (lines: string[]) => void, wasmBinary?: Uint8Array): Promise<void> {
  let store: ReadOnlySettings | undefined;
  let unreadable: { error: unknown } | undefined;
  try {
    store = await openSettingsReadOnly(loaded.config.Storage.DataDir, wasmBinary);
  } catch (error) {
    unreadable = { error };
  }
  try {
    const categories = store && new ConfigCategories(loaded, store.settings, acceptsStored);
    print(formatConfigReport(loaded, publicServerUrl, categories?.storedByConfigKey()));
    // What serve checks before it listens, in its order: the address (a host that does not resolve,
    // 78; one not this machine's, 1), then a certificate, key or CA file it would refuse (78). Refused
    // here alike, so a passing check means the service starts with these settings.
    await assertListenAddress(loaded.config.Server.Host, loaded.config.Server.Port).catch((e: unknown) => {
      throw listenRefusal(e, loaded.config.Server) ?? e;
    });
    loadTlsFiles(loaded.config.Server);
    loadCaFile(loaded.config.VoiceService.CaFile);
    // Then the data files it would refuse (65), in its order: the key and the instance id, the database.
    try {
      assertDataFilesUsable(loaded.config);
    } catch (e) {
      throw dataDirRefusal(loaded.config.Storage.DataDir, e);
    }
    if (unreadable) throw dataDirRefusal(loaded.config.Storage.DataDir, unreadable.error);
    if (categories) print(storedLines(categories));
  } finally {
    store?.close();
  }
}

/** The system's refusal of the data directory in the words serve and token use for it (the folder, what to do); anything else as it is. */
function dataDirRefusal(dir: string, e: unknown): unknown {
  if (systemFailureText(e) === undefined) return e;
  return new CliExit(1, `voice-hub config: cannot read the data directory ${dir}: ${dataDirFailure(dir, path.join(dir, DATABASE_FILE_NAME), e)}`);
}

function storedLines(categories: ConfigCategories): string[] {
  const lines = ['# stored through the API (override the file and defaults, not env or flags)'];
  for (const category of CATEGORY_NAMES) {
    const values = categories.get(category);
    for (const [key, source] of Object.entries(categories.sources(category))) {
      if (source === 'api') lines.push(`${category}.${key} = ${jsonText(values[key])}  (api)`);
    }
  }
  for (const { setting, configKey, source } of categories.overridden()) {
    lines.push(`${setting}  (stored, not used: ${configKey} is set by ${source === 'env' ? 'the environment' : 'a flag'}, which wins)`);
  }
  for (const unusable of categories.unusable()) lines.push(`${unusable}  (stored, not used: the API would refuse it; PUT a valid value or null)`);
  return lines;
}
