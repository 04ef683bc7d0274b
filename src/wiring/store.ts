// Storage, the bottom of the house: everything above keeps its records here.
import type { AppConfig } from '../config/types.js';
import type { Logger } from '../log/logger.js';
import type { DataDirLock } from '../process/data-dir-lock.js';
import { SQL_WASM } from '../runtime/asset-manifest.mjs';
import { requireAsset } from '../runtime/assets.js';
import { openStore } from '../store/index.js';
import type { Store } from '../store/types.js';

export function createStore(config: AppConfig, logger: Logger, bundleDir: string | undefined, lock: DataDirLock | undefined): Promise<Store> {
  const storage = logger.child('Storage');
  return openStore({
    dataDir: config.Storage.DataDir,
    flushIntervalMs: config.Storage.FlushInterval,
    sessionHistory: config.Storage.SessionHistory,
    maxDatabaseBytes: config.Storage.MaxDatabaseBytes,
    logger: storage,
    wasmBinary: requireAsset(SQL_WASM, bundleDir),
    ...(lock ? { assertOwner: writesOnlyWhileHeld(lock, config.Storage.DataDir, storage) } : {}),
  });
}

/**
 * Each write replaces the whole file: once the lock is not this process's, a second voice-hub may be
 * writing the same file, and each write would destroy what the other acknowledged. One stat per write
 * (writes are batched); said once while it lasts.
 */
function writesOnlyWhileHeld(lock: DataDirLock, dataDir: string, logger: Logger): () => void {
  let told = false;
  return () => {
    if (lock.held()) {
      told = false; // its directory came back with it (a mount): a later loss is news again
      return;
    }
    if (!told) {
      told = true;
      logger.critical(
        `the data directory lock ${lock.file} is no longer this process's (removed, or made anew by another voice-hub): ` +
          `the database is not written any more, so as not to replace another's; stop every voice-hub using ${dataDir}, then start one`,
      );
    }
    throw new Error('this service no longer holds its data directory lock');
  };
}
