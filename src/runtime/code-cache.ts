// The program's V8 code cache, for the single executables: compiling the 1.6 MB program and the functions
// start-up runs took 30-40 ms of every start (about 15 %); with the cache V8 takes the compiled code as
// it is. The executable writes the cache a few seconds after it starts, when start-up has compiled what
// it needs, into the folder it unpacks its native addon into (systemd's CacheDirectory=), and reads it
// at the next start.
//
// V8 checks that a cache was made by the same V8 with the same flags for a source of the same length,
// not that the source is the same, so the file is named after the program, the Node version and the
// architecture. V8 does not check the bytes either: a file cut short or damaged on disk could crash the
// start, so each file carries a SHA-256 of its contents, and one that does not match is not used.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { Script } from 'node:vm';
import { assertPrivateDir, writePrivateFile } from './private-dir.js';

const PREFIX = 'program-';
const EXTENSION = '.v8cache';
const DIGEST_BYTES = 32;

/** Whether `name` is a program code cache's file name (of any program). */
export const isCodeCacheFile = (name: string): boolean => name.startsWith(PREFIX) && name.endsWith(EXTENSION);

/** How long after start the cache is written: start-up has compiled its functions by then. */
export const CODE_CACHE_DELAY_MS = 5_000;

const sha256 = (...parts: (string | Uint8Array)[]): Buffer => {
  const hash = createHash('sha256');
  for (const part of parts) hash.update(part);
  return hash.digest();
};

export class ProgramCodeCache {
  /** The cache for this program as V8 takes it, when a sound one is there. */
  readonly data: Buffer | undefined;
  /** Where this program's cache is kept. */
  readonly file: string;

  /** `program` as its file's bytes or as its text: an ASCII program's key is the same either way. */
  constructor(private readonly dir: string, program: string | Uint8Array) {
    const key = sha256(program, '\0', process.version, '\0', process.arch).toString('hex').slice(0, 16);
    this.file = path.join(dir, `${PREFIX}${key}${EXTENSION}`);
    this.data = this.read();
  }

  /**
   * Writes the cache of `script` `delayMs` from now, unless the one read was taken; what stops it is
   * told to `warn`. The timer does not keep the process alive.
   */
  saveLater(script: Script, warn: (message: string) => void, delayMs = CODE_CACHE_DELAY_MS): void {
    if (this.data && !script.cachedDataRejected) return;
    setTimeout(() => {
      try {
        this.write(script.createCachedData());
      } catch (e) {
        warn(`the program's code cache was not written to ${this.dir}: ${e instanceof Error ? e.message : String(e)}`);
      }
    }, delayMs).unref();
  }

  private read(): Buffer | undefined {
    let bytes: Buffer;
    try {
      // Only from a folder nobody else could have written it into.
      assertPrivateDir(this.dir, false);
      bytes = readFileSync(this.file);
    } catch {
      return undefined; // none yet, or not ours to trust: compiled as if none, and written anew later
    }
    if (bytes.length <= DIGEST_BYTES) return undefined;
    const data = bytes.subarray(DIGEST_BYTES);
    return sha256(data).equals(bytes.subarray(0, DIGEST_BYTES)) ? data : undefined;
  }

  /** Replaces the file whole (writePrivateFile); the caches of other programs go. */
  private write(data: Buffer): void {
    writePrivateFile(this.dir, path.basename(this.file), Buffer.concat([sha256(data), data]), 0o600, isCodeCacheFile);
  }
}
