// A directory and its missing parents, made one at a time from the top. Not mkdir's `recursive`:
// Node's own walk, on an ENOENT, makes the parent and tries the directory again, for as long as the
// parent answers EEXIST; /proc and /sys answer exactly that (`/proc/voice-hub`: no such file, yet
// `/proc` exists), and it spun at 100 % of a core for good, inside one call no signal handler could
// interrupt: SIGTERM went unanswered until systemd's stop timeout killed it. Here each parent is
// tried once, and an error of the last one tried is the answer.
import { mkdirSync, statSync } from 'node:fs';
import path from 'node:path';

/** Makes `dir` (and any parent missing) with `mode`; throws Node's error of the mkdir that failed. */
export function makeDirs(dir: string, mode: number): void {
  const missing: string[] = [];
  for (let at = path.resolve(dir); ; at = path.dirname(at)) {
    try {
      statSync(at);
      break;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
      missing.push(at);
      if (path.dirname(at) === at) break;
    }
  }
  // Nothing missing: an existing directory is done, and mkdir says EEXIST of anything else.
  if (missing.length === 0) {
    if (!statSync(dir).isDirectory()) mkdirSync(dir, { mode });
    return;
  }
  for (const at of missing.reverse()) {
    try {
      mkdirSync(at, { mode });
    } catch (e) {
      // Made meanwhile by another process: as good, if a directory. A parent that is anything else
      // (or a dangling link) fails at the mkdir below it.
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST' || (at === missing.at(-1) && !statSync(at).isDirectory())) throw e;
    }
  }
}
