// The folder an executable unpacks its native code and keeps its code cache in: code is loaded from it,
// so it must be this user's alone, and a file in it is never seen half-written.
import { randomBytes } from 'node:crypto';
import { lstatSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';

/**
 * Refuses `dir` unless it is a real folder of this user that nobody else can write (a shared temp dir is
 * open to other users). Makes it first (mode 0700) when `create` says so.
 */
export function assertPrivateDir(dir: string, create: boolean): void {
  if (create) mkdirSync(dir, { recursive: true, mode: 0o700 });
  const st = lstatSync(dir);
  const uid = process.getuid?.();
  if (!st.isDirectory()) throw new Error(`${dir} is not a directory`);
  if (uid !== undefined && st.uid !== uid) throw new Error(`${dir} belongs to uid ${st.uid}, not to this user (${uid})`);
  if ((st.mode & 0o022) !== 0) throw new Error(`${dir} is writable by others (mode ${(st.mode & 0o777).toString(8)})`);
}

/**
 * Puts `bytes` at `dir/name` (`dir` made and checked first) unless that file holds them already, through
 * a temp file and a rename, so that a concurrent start or a crash never leaves half a file under the
 * name; then removes the other files of `dir` that `supersedes` names (older versions). Returns the path.
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
      writeFileSync(tmp, bytes, { mode, flag: 'wx' });
      renameSync(tmp, target);
    } finally {
      rmSync(tmp, { force: true });
    }
  }
  for (const other of readdirSync(dir)) {
    if (other !== name && supersedes(other)) rmSync(path.join(dir, other), { force: true });
  }
  return target;
}
