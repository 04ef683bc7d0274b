// The side-by-side tools answer --help with their usage and bad arguments with what is wrong and the
// usage, exiting 2, without a stack trace, and in neither case start a service or leave a run folder.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';

const ROOT = path.resolve(import.meta.dirname, '../..');
const TOOLS = ['compare', 'compare-http', 'compare-memory', 'compare-startup'];

const run = (tool: string, args: string[]) => {
  const result = spawnSync(process.execPath, ['--import', 'tsx', `bench/${tool}.ts`, ...args], { cwd: ROOT, encoding: 'utf8', timeout: 60_000 });
  assert.equal(existsSync(path.join(os.tmpdir(), `voice-hub-bench-${result.pid}`)), false, `${tool} ${args.join(' ')}: no run folder left`);
  return result;
};

for (const tool of TOOLS) {
  test(`bench/${tool}.ts: --help prints its usage; a bad argument exits 2 saying which, with the usage`, () => {
    const help = run(tool, ['--help']);
    assert.equal(help.status, 0, help.stderr);
    assert.match(help.stdout, new RegExp(`^usage: node --import tsx bench/${tool}\\.ts \\[--rounds \\d+\\].* NAME=CHECKOUT \\.\\.\\.\\n`));
    assert.equal(help.stderr, '');
    assert.deepEqual(run(tool, ['-h']).stdout, help.stdout, '-h is --help');

    const bad = run(tool, ['--bogus', 'a=.', 'b=.']);
    assert.equal(bad.status, 2);
    assert.equal(bad.stderr, `${tool}: unknown argument --bogus\n${help.stdout}`);
    assert.equal(bad.stdout, '');

    const one = run(tool, ['a=.']);
    assert.equal(one.status, 2);
    assert.equal(one.stderr, `${tool}: give at least two builds as NAME=CHECKOUT\n${help.stdout}`);
  });
}
