// The key that signs tokens: `Auth.SigningKey` when set, otherwise a random key generated on first
// start and kept in the data dir with mode 0600, so `voice-hub token admin` on the box signs with
// the same key as the running service.
import { randomBytes } from 'node:crypto';
import { closeSync, constants, existsSync, fchmodSync, fstatSync, openSync, readSync } from 'node:fs';
import path from 'node:path';
import { DataFileError } from '../errors.js';
import { isLinkItself } from '../path-entry.js';
import { createFileDurablySync, removeStaleTempFilesSync } from '../store/durable-file.js';
import { makeDirs } from '../runtime/make-dirs.js';

export const SIGNING_KEY_FILE = 'signing.key';

/**
 * `create: false` only reads (beside a running service, which owns the key file): a missing file is
 * an error then, never a second key. `created` is told when a new key file was made, `removed` of each
 * temporary file a creation interrupted by a crash left (creating is done with the data directory's
 * lock held, so no other process is writing one).
 */
export function loadSigningKey(
  configured: string,
  dataDir: string,
  { create = true, created, removed }: { create?: boolean; created?: (file: string) => void; removed?: (name: string) => void } = {},
): Uint8Array {
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
  makeDirs(dataDir, 0o750);
  for (const name of removeStaleTempFilesSync(file)) removed?.(name);
  // On disk, its name too, before a token is signed with it: a power cut must not lose the key the
  // tokens out there were signed with.
  if (createFileDurablySync(file, new TextEncoder().encode(randomBytes(32).toString('base64url') + '\n'), 0o600)) created?.(file);
  return readKey(file, { tighten: true });
}

/**
 * Refuses (DataFileError) a key file in `dataDir` that a start would refuse, reading only and making
 * nothing: checked before a start creates any file, and by `config check` beside a running service.
 * None there is fine: the start makes one.
 */
export function checkSigningKeyFile(dataDir: string): void {
  try {
    readKey(path.join(dataDir, SIGNING_KEY_FILE));
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
  }
}

/** A generated key is 44 bytes; a key file far larger is no key (and is not read whole into memory). */
const MAX_KEY_FILE_BYTES = 4096;

/**
 * Reads the key through a descriptor opened without following a symbolic link, and only from a regular
 * file: the data directory is the service's to write, so a link there to another file (/etc/passwd)
 * would have that file read as the key and, `tighten`ed, its mode changed by whoever runs this (root,
 * for `sudo voice-hub token`). A key file copied in with loose permissions is tightened, not refused.
 */
function readKey(file: string, { tighten = false } = {}): Uint8Array {
  let fd: number;
  try {
    fd = openSync(file, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ELOOP' && isLinkItself(file)) throw new DataFileError(`signing key file ${file} is a symbolic link: refused; put the key file itself there`);
    throw e;
  }
  try {
    const stat = fstatSync(fd);
    if (!stat.isFile()) throw new DataFileError(`signing key file ${file} is not a regular file: refused`);
    if (tighten && (stat.mode & 0o777) !== 0o600) fchmodSync(fd, 0o600);
    const buffer = Buffer.alloc(MAX_KEY_FILE_BYTES + 1);
    let length = 0;
    for (let n; length < buffer.length && (n = readSync(fd, buffer, length, buffer.length - length, null)) > 0;) length += n;
    const text = buffer.toString('utf8', 0, length).trim();
    if (length > MAX_KEY_FILE_BYTES) throw new DataFileError(`signing key file ${file} is damaged (more than ${MAX_KEY_FILE_BYTES} bytes, a key has 44); remove it to generate a new one (all issued tokens become invalid)`);
    if (text.length < 32) throw new DataFileError(`signing key file ${file} is damaged (too short); remove it to generate a new one (all issued tokens become invalid)`);
    return new TextEncoder().encode(text);
  } finally {
    closeSync(fd);
  }
}
