// `make check` runs the test folders the Makefile lists in FAST_TEST_DIRS, promised to need no Debian
// package, executable, bundle or child process. This keeps the promise: a test file in one of those
// folders that starts a process or reads the build output fails here, and belongs in another folder.
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { it } from 'node:test';

const ROOT = path.resolve(import.meta.dirname, '../..');
// What a file needs to leave the fast tier's promise: a process, the bundle, the executables, Debian packages.
const FORBIDDEN = [/node:child_process/, /\bspawnService\b|\brunBundle\b|\brunProcess\b/, /\bBUNDLE\b|dist\//, /ensure-debs/, /mosquitto|playwright/];

it('the fast tier folders exist and their files start no process and need no build', () => {
  const line = /^FAST_TEST_DIRS :=(.*)$/m.exec(readFileSync(path.join(ROOT, 'Makefile'), 'utf8'));
  assert.ok(line, 'the Makefile defines FAST_TEST_DIRS');
  const dirs = line[1]!.trim().split(/\s+/);
  assert.ok(dirs.includes('unit') && dirs.includes('inject'), dirs.join(' '));
  const offenders: string[] = [];
  for (const dir of dirs) {
    const folder = path.join(ROOT, 'test', dir);
    assert.ok(existsSync(folder), `test/${dir} exists`);
    for (const name of readdirSync(folder).filter((n) => n.endsWith('.ts'))) {
      // This file names what it looks for.
      if (path.join(folder, name) === import.meta.filename) continue;
      const text = readFileSync(path.join(folder, name), 'utf8');
      for (const pattern of FORBIDDEN) if (pattern.test(text)) offenders.push(`test/${dir}/${name}: ${pattern}`);
    }
  }
  assert.deepEqual(offenders, []);
});
