// The folder an executable unpacks its native code and keeps its code cache in: code is loaded from it,
// so it must be this user's alone.
import { lstatSync, mkdirSync } from 'node:fs';

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
