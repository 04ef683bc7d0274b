// The files of the data directory a start refuses (exit 65) that it would otherwise meet only after
// creating others: the signing key and the hub instance id, read before the store is opened and
// anything is made. Only read, so `config check` refuses the same files beside a running service.
// (The database needs no such look ahead: opening it refuses it before anything is written.)
import { checkSigningKeyFile } from '../auth/signing-key.js';
import type { AppConfig } from '../config/types.js';
import { readInstanceId } from '../process/instance-id.js';

/** Throws DataFileError for a file a start would refuse, or the system's error where it cannot look. */
export function assertDataFilesUsable(config: AppConfig): void {
  // A configured key leaves the key file unused: a start neither reads nor makes it.
  if (!config.Auth.SigningKey) checkSigningKeyFile(config.Storage.DataDir);
  readInstanceId(config.Storage.DataDir);
}
