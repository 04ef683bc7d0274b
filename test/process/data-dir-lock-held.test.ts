// The lock is re-checked before each write of the database (src/wiring/store.ts): held while its file is
// the one this process linked; not held once it was removed or replaced, even by a file that reuses its
// inode number. A directory that is away altogether (a vanished mount) holds nothing to overwrite.
import assert from 'node:assert/strict';
import { linkSync, mkdirSync, readdirSync, renameSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { acquireDataDirLock } from '../../src/process/data-dir-lock.js';
import { tmpDir } from '../support/tmp.js';

test('held while the lock file is its own, also after a starter moved it aside and linked it back', () => {
  const lock = acquireDataDirLock(tmpDir());
  assert.equal(lock.held(), true);
  assert.equal(lock.held(), true);
  const aside = `${lock.file}.aside`;
  renameSync(lock.file, aside);
  linkSync(aside, lock.file);
  unlinkSync(aside);
  assert.equal(lock.held(), true);
  lock.release();
});

test('not held once removed, or replaced by another holder\'s file', () => {
  const lock = acquireDataDirLock(tmpDir());
  rmSync(lock.file);
  assert.equal(lock.held(), false);

  const other = acquireDataDirLock(tmpDir());
  // Removed and another holder's written at once: the inode number is likely the same.
  rmSync(other.file);
  writeFileSync(other.file, JSON.stringify({ pid: 1 }) + '\n');
  assert.equal(other.held(), false);
});

test('a directory moved away and back holds it all along; made anew and locked by another, it is not held', () => {
  const dir = path.join(tmpDir(), 'data');
  const lock = acquireDataDirLock(dir);
  renameSync(dir, `${dir}-away`);
  writeFileSync(dir, 'not a directory');
  assert.equal(lock.held(), true, 'nothing there to overwrite: writes fail on their own');
  rmSync(dir);
  renameSync(`${dir}-away`, dir);
  assert.equal(lock.held(), true);

  rmSync(dir, { recursive: true });
  mkdirSync(dir);
  writeFileSync(lock.file, JSON.stringify({ pid: 1 }) + '\n');
  assert.equal(lock.held(), false);
});

test("temporary files of starters that died while taking the lock are removed; a running process's are left to it", () => {
  const dir = tmpDir();
  const dead = ['voice-hub.lock.new-99999999-0a1b2c3d', 'voice-hub.lock.stale-99999998-deadbeef'];
  const running = `voice-hub.lock.new-${process.ppid}-0a1b2c3d`;
  const others = ['voice-hub.lock.new-99999999-x', 'voice-hub.lock.bak', 'voice-hub.db'];
  for (const name of [...dead, running, ...others]) writeFileSync(path.join(dir, name), '');
  const lock = acquireDataDirLock(dir);
  assert.deepEqual([...lock.leftovers].sort(), [...dead].sort());
  assert.deepEqual(readdirSync(dir).sort(), ['voice-hub.lock', running, ...others].sort());
  lock.release();
});
