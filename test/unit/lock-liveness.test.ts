// Whether a data directory's lock holder is alive: the PID's start time must be the one the holder
// recorded. qemu-user, which runs the ARM builds, reports the emulated process's own start time one
// clock tick off what the kernel tells everyone else; a live holder was then taken for gone and a second
// service took over its data directory. A few ticks of slack keep PID reuse detected.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { holderLiveness } from '../../src/process/data-dir-lock.js';

/** Field 22 of /proc/<pid>/stat, counted after the command name's closing parenthesis. */
const startOf = (pid: number): number => {
  const line = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return Number(line.slice(line.lastIndexOf(')') + 2).split(' ')[19]);
};

describe('holderLiveness', () => {
  const pid = process.ppid; // alive for as long as this test runs, and not us
  const start = startOf(pid);
  const cases: [string, string | undefined, string][] = [
    ['the same start time', String(start), 'alive'],
    ['one tick early, as qemu-user reports it', String(start - 1), 'alive'],
    ['two ticks late', String(start + 2), 'alive'],
    ['three ticks off: another process under a PID handed out again', String(start + 3), 'gone'],
    ['a start a minute earlier', String(start - 6000), 'gone'],
    ['no start recorded (an older lock file)', undefined, 'alive'],
    ['a start that is not a number', 'abc', 'gone'],
  ];
  for (const [name, recorded, expected] of cases) {
    it(`${name}: ${expected}`, () => {
      assert.equal(holderLiveness({ pid, start: recorded, boot: undefined, uid: process.getuid?.(), since: undefined }), expected);
    });
  }
});
