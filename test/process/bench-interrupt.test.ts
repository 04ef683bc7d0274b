// An interrupted benchmark or comparison (Ctrl-C, a timeout's SIGTERM) must not leave the services it
// started running, nor its data dirs in /tmp: it kills them, removes its run folder and exits 130.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { once } from 'node:events';
import { test } from 'node:test';

/** Running: a zombie (killed, its parent gone, not yet reaped by init) counts as gone. */
const alive = (pid: number): boolean => {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
};

// A run in miniature: what the bench's entry points do (run.ts, lib/builds.ts runComparison) before they measure.
const RUN = `
  import { cleanUpOnInterrupt, ProcessSet, tempDir } from './bench/lib/proc.ts';
  const procs = new ProcessSet();
  cleanUpOnInterrupt(procs);
  const dir = tempDir('interrupt');
  const child = procs.spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)']);
  process.stdout.write(JSON.stringify({ dir, pid: child.pid }) + '\\n');
  setInterval(() => {}, 1000);
`;

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  test(`${signal} kills what the run started and removes its folder, exiting 130`, async (t) => {
    const run = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', RUN], { cwd: path.resolve(import.meta.dirname, '../..'), stdio: ['ignore', 'pipe', 'inherit'] });
    t.after(() => run.kill('SIGKILL'));
    const [line] = (await once(run.stdout!, 'data')) as [Buffer];
    const { dir, pid } = JSON.parse(line.toString()) as { dir: string; pid: number };
    assert.ok(dir.startsWith(path.join(os.tmpdir(), `voice-hub-bench-${run.pid}`)), dir);
    assert.ok(existsSync(dir) && alive(pid), 'the run started its folder and its child');

    run.kill(signal);
    const [code] = (await once(run, 'exit')) as [number | null];
    assert.equal(code, 130);
    assert.equal(existsSync(path.dirname(dir)), false, 'its run folder is gone');
    // The signal is delivered a moment after the run exits.
    for (let i = 0; i < 50 && alive(pid); i++) await new Promise((resolve) => setTimeout(resolve, 20));
    assert.equal(alive(pid), false, 'its child is gone');
  });
}
