// The folder an executable unpacks its native code and keeps its code cache in: code is loaded from it,
// so it must be this user's alone, and a file in it is never seen half-written.
import { randomBytes } from 'node:crypto';
import { closeSync, fsyncSync, lstatSync, openSync, readdirSync, readFileSync, renameSync, rmSync, writeSync } from 'node:fs';
import path from 'node:path';
import { makeDirs } from './make-dirs.js';

/**
 * Refuses `dir` unless it is a real folder of this user that nobody else can write (a shared temp dir is
 * open to other users). Makes it first (mode 0700) when `create` says so.
 */
export function assertPrivateDir(dir: string, create: boolean): void {
  if (create) makeDirs(dir, 0o700);
  const st = lstatSync(dir);
  const uid = process.getuid?.();
  if (!st.isDirectory()) throw new Error(`${dir} is not a directory`);
  if (uid !== undefined && st.uid !== uid) throw new Error(`${dir} belongs to uid ${st.uid}, not to this user (${uid})`);
  if ((st.mode & 0o022) !== 0) throw new Error(`${dir} is writable by others (mode ${(st.mode & 0o777).toString(8)})`);
}

/**
 * Puts `bytes` at `dir/name` (`dir` made and checked first) unless that file holds them already, through
 * a temp file synced to disk and a rename, so that a concurrent start, a crash or a power cut never
 * leaves half a file under the name; then removes the other files of `dir` that `supersedes` names
 * (older versions). Returns the path.
 */
export function writePrivateFile(dir: string, name: string, bytes: Buffer, mode: number, supersedes: (other: string) => boolean): string {
  assertPrivateDir(dir, true);
  const target = path.join(dir, name);
  let same = false;
  try {
    same = readFileSync(target).equals(bytes);
  } catch {
    // not there yet
  }
  if (!same) {
    const tmp = path.join(dir, `.${name}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`);
    try {
      const fd = openSync(tmp, 'wx', mode);
      try {
        for (let done = 0; done < bytes.length;) done += writeSync(fd, bytes, done, bytes.length - done);
        fsyncSync(fd);
      } finally {
        closeSync(fd);
      }
      renameSync(tmp, target);
    } finally {
      rmSync(tmp, { force: true });
    }
  }
  removeSuperseded(dir, name, supersedes);
  return target;
}

/** Removes the files of `dir` other than `name` that `supersedes` names (older versions of it). */
export function removeSuperseded(dir: string, name: string, supersedes: (other: string) => boolean): void {
  for (const other of readdirSync(dir)) {
    if (other !== name && supersedes(other)) rmSync(path.join(dir, other), { force: true });
  }
}
