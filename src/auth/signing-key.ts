// The key that signs tokens: `Auth.SigningKey` when set, otherwise a random key generated on first
// start and kept in the data dir with mode 0600, so `voice-hub token admin` on the box signs with
// the same key as the running service.
import { randomBytes } from 'node:crypto';
import { chmodSync, closeSync, existsSync, fsyncSync, mkdirSync, openSync, readFileSync, rmSync, writeSync } from 'node:fs';
import path from 'node:path';

export const SIGNING_KEY_FILE = 'signing.key';

/**
 * `create: false` only reads (beside a running service, which owns the key file): a missing file is
 * an error then, never a second key.
 */
export function loadSigningKey(configured: string, dataDir: string, { create = true } = {}): Uint8Array {
  if (configured) {
    const bytes = new TextEncoder().encode(configured);
    if (bytes.length < 32) throw new Error('Auth.SigningKey must be at least 32 bytes long');
    return bytes;
  }
  const file = path.join(dataDir, SIGNING_KEY_FILE);
  if (!create) {
    if (!existsSync(file)) throw new Error(`there is no signing key file ${file}`);
    return readKey(file);
  }
  mkdirSync(dataDir, { recursive: true, mode: 0o750 });
  let fd: number | undefined;
  try {
    fd = openSync(file, 'wx', 0o600);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
  }
  if (fd !== undefined) {
    try {
      try {
        writeSync(fd, randomBytes(32).toString('base64url') + '\n');
        fsyncSync(fd);
      } finally {
        closeSync(fd);
      }
    } catch (e) {
      // An empty or partial key left by a full disk would stop every later start as "damaged".
      rmSync(file, { force: true });
      throw e;
    }
  }
  // A key file copied in with loose permissions is tightened rather than refused.
  chmodSync(file, 0o600);
  return readKey(file);
}

function readKey(file: string): Uint8Array {
  const text = readFileSync(file, 'utf8').trim();
  if (text.length < 32) throw new Error(`signing key file ${file} is damaged (too short); remove it to generate a new one (all issued tokens become invalid)`);
  return new TextEncoder().encode(text);
}
