// Storage, the bottom of the house: everything above keeps its records here.
import type { AppConfig } from '../config/types.js';
import type { Logger } from '../log/logger.js';
import { SQL_WASM } from '../runtime/asset-manifest.mjs';
import { requireAsset } from '../runtime/assets.js';
import { openStore } from '../store/index.js';
import type { Store } from '../store/types.js';

export function createStore(config: AppConfig, logger: Logger, bundleDir: string | undefined): Promise<Store> {
  return openStore({
    dataDir: config.Storage.DataDir,
    flushIntervalMs: config.Storage.FlushInterval,
    sessionHistory: config.Storage.SessionHistory,
    logger: logger.child('Storage'),
    wasmBinary: requireAsset(SQL_WASM, bundleDir),
  });
}
