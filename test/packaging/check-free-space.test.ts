// scripts/check-free-space.sh, which `make test` runs before the suite: it stops a run that would fail
// for want of disk, naming the folder, what is free and what is needed, and lets a need of 0 skip it.
import assert from 'node:assert/strict';
import { statfsSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { ROOT, runProcess } from '../support/service.js';

const SCRIPT = path.join(ROOT, 'scripts/check-free-space.sh');
const freeGib = (dir: string): number => {
  const fs = statfsSync(dir);
  return (fs.bavail * fs.bsize) / 2 ** 30;
};

describe('scripts/check-free-space.sh', () => {
  it('passes when every folder has the space', async () => {
    const need = Math.max(1, Math.floor(Math.min(freeGib(os.tmpdir()), freeGib(ROOT))) - 1);
    const res = await runProcess(SCRIPT, [String(need), os.tmpdir(), ROOT]);
    assert.deepEqual([res.code, res.stdout, res.stderr], [0, '', '']);
  });

  it('stops with the folder, what is free and what is needed when one lacks it', async () => {
    const need = `${Math.ceil(freeGib(ROOT)) + 10}.5`;
    const res = await runProcess(SCRIPT, [need, ROOT]);
    assert.equal(res.code, 1);
    assert.match(
      res.stderr,
      new RegExp(`^make test: \\d+\\.\\d GiB free for ${ROOT.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}; the suite needs about ${need.replace('.', '\\.')} GiB there at its peak\\.\nFree some space, or run 'make test TEST_FREE_GIB=0' to skip this check\\.\n$`),
    );
  });

  it('checks nothing when the need is 0', async () => {
    const res = await runProcess(SCRIPT, ['0', '/no/such/folder']);
    assert.deepEqual([res.code, res.stderr], [0, '']);
  });

  it('refuses a need that is not a number', async () => {
    const res = await runProcess(SCRIPT, ['2GB', ROOT]);
    assert.deepEqual([res.code, res.stderr], [2, "check-free-space.sh: '2GB' is not a number of GiB\n"]);
  });
});
