// `voice-hub token admin`: mints an admin token with this installation's signing key.
import { existsSync } from 'node:fs';
import path from 'node:path';
import { loadSigningKey, SIGNING_KEY_FILE } from '../auth/signing-key.js';
import { TokenService } from '../auth/tokens.js';
import { MAX_TOKEN_LIFETIME } from '../config/schema.js';
import { parseTimeSpan } from '../config/timespan.js';
import type { LoadedConfig } from '../config/types.js';
import { acquireDataDirLock, dataDirOwner, DataDirInUseError, LOCK_FILE_NAME } from '../process/data-dir-lock.js';
import { dataDirFailure, systemFailureText } from './fatal.js';
import { CliExit, EXIT_IN_USE } from './load.js';

const UNITS: Record<string, number> = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 };

/** `30d`, `12h`, `90m`, `45s`, `2w`, or a .NET time span (`7.00:00:00`), in ms; throws saying what is wrong. */
export function parseTtl(text: string): number {
  const m = /^(\d+)([smhdw])$/.exec(text.trim());
  let ms: number;
  try {
    ms = m ? Number(m[1]) * UNITS[m[2]!]! : parseTimeSpan(text);
  } catch {
    throw new Error(`invalid --ttl '${text}': use e.g. 30d, 12h, 90m or a time span like 7.00:00:00`);
  }
  if (!(ms > 0)) throw new Error(`--ttl must be positive, not '${text}'`);
  if (ms > parseTimeSpan(MAX_TOKEN_LIFETIME)) throw new Error(`--ttl '${text}' is longer than a token may live (${MAX_TOKEN_LIFETIME}, ten years)`);
  return ms;
}

/** The token, and a note for stderr when the signing key had to be created for it. */
export async function mintAdminToken(loaded: LoadedConfig, ttlMs: number): Promise<{ token: string; note?: string }> {
  const { key, created } = signingKey(loaded);
  const { token } = await new TokenService(key).issueAdmin(ttlMs);
  // A token signed with a key made just now is accepted only by a service started on this directory:
  // a mistyped --data-dir handed out a token every running service refuses, and said nothing.
  const dir = loaded.config.Storage.DataDir;
  return created ? { token, note: `no signing key was in ${dir}: created ${path.join(dir, SIGNING_KEY_FILE)}; a service using another data directory will refuse this token` } : { token };
}

/**
 * The running service's key. Beside a running service (it holds the data directory) the key file is
 * only read: the service created it at start, and a missing one means it signs with a configured
 * Auth.SigningKey this command was not given. With no service running, the key is created if needed
 * under the data directory lock, exactly as the service would at its next start.
 */
function signingKey(loaded: LoadedConfig): { key: Uint8Array; created: boolean } {
  const { Auth, Storage } = loaded.config;
  if (Auth.SigningKey) return { key: loadSigningKey(Auth.SigningKey, Storage.DataDir), created: false };
  const owner = takingDataDir(Storage.DataDir, () => dataDirOwner(Storage.DataDir));
  if (owner) {
    try {
      return { key: loadSigningKey('', Storage.DataDir, { create: false }), created: false };
    } catch (e) {
      throw new CliExit(1, `${e instanceof Error ? e.message : String(e)}, although voice-hub (PID ${owner.holder.pid}) runs on ` +
        `${Storage.DataDir}: it signs with a configured Auth.SigningKey; give this command the same configuration`);
    }
  }
  const lock = takingDataDir(Storage.DataDir, () => acquireDataDirLock(Storage.DataDir));
  try {
    const created = !existsSync(path.join(Storage.DataDir, SIGNING_KEY_FILE));
    return { key: loadSigningKey('', Storage.DataDir), created };
  } finally {
    lock.release();
  }
}

/**
 * Reading or taking the data directory's lock; its failures in the words serve uses for them: the folder,
 * why, and what to do (a bare ENOENT named a temporary file, for a --data-dir of /proc/1).
 */
function takingDataDir<T>(dir: string, take: () => T): T {
  try {
    return take();
  } catch (e) {
    if (e instanceof DataDirInUseError) throw new CliExit(EXIT_IN_USE, e.message);
    if (systemFailureText(e) === undefined) throw e;
    throw new CliExit(1, `voice-hub token: cannot take the data directory ${dir}: ${dataDirFailure(dir, path.join(dir, LOCK_FILE_NAME), e)}`);
  }
}
