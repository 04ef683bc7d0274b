// Temporary folders that clean themselves up when the test file ends.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';

const made: string[] = [];
// Removed when the test process exits, after every service using them has stopped.
process.on('exit', () => {
  for (const dir of made) rmSync(dir, { recursive: true, force: true });
});

export function tmpDir(prefix = 'voice-hub-test-'): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), prefix));
  made.push(dir);
  return dir;
}

/**
 * A fresh folder that the test removes itself with `cleanup()`, for tests that open and reopen files in
 * it many times over and want it gone as soon as they are done (the storage tests).
 */
export async function scratchDir(prefix = 'voice-hub-store-'): Promise<{ path: string; cleanup: () => Promise<void> }> {
  const dir = await mkdtemp(path.join(os.tmpdir(), prefix));
  return { path: dir, cleanup: () => rm(dir, { recursive: true, force: true }) };
}

/** Mounts a tmpfs of `bytes` at a new folder; undefined (and why) when this machine does not let us. */
export function mountTmpfs(bytes: number): { dir: string } | { skip: string } {
  const dir = tmpDir();
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${bytes},mode=0700`, 'tmpfs', dir], { stdio: 'pipe' });
    return { dir };
  } catch (e) {
    return { skip: `cannot mount a tmpfs here (needs root): ${(e as Error).message.split('\n')[0]}` };
  }
}
