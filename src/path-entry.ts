// What is at a path itself, a symbolic link there not followed. A dangling link is something: it was put
// there, and reading through it fails with ENOENT as if nothing were, which hid it. And an O_NOFOLLOW
// open says ELOOP both for a link at the name and for folders on the way that loop, two causes with
// two different remedies.
import { lstatSync } from 'node:fs';

/**
 * Whether nothing at all is at `file`, not even a dangling link: no such name (ENOENT), or a file where
 * a folder on the way should be (ENOTDIR). A name that cannot be looked at (a folder on the way that
 * loops, or may not be searched) may hold something: reading it says what.
 */
export function nothingAt(file: string): boolean {
  try {
    lstatSync(file);
    return false;
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    return code === 'ENOENT' || code === 'ENOTDIR';
  }
}

/** Whether `file` itself is a symbolic link (what an ELOOP of an O_NOFOLLOW open of it means only then). */
export function isLinkItself(file: string): boolean {
  try {
    return lstatSync(file).isSymbolicLink();
  } catch {
    return false;
  }
}
