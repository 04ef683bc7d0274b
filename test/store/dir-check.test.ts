// The data dir check behind /health's database entry: a real file created, written and removed, with
// nothing left behind, and as few trips through libuv's thread pool as that takes. Each trip is a hand
// to a pool thread and back; on a board whose cores are busy each one waits to be scheduled, so /health
// under load took as long as the trips it made one after another (four before: open, write, close,
// unlink; 46-59 ms p99 in bench section 9 against 36-40 ms with two). The rounds are counted with
// async_hooks, not timed: a file-system request of any kind that starts while none is in flight opens
// a round, and a round counts once all its requests have come back before the check answers.
import assert from 'node:assert/strict';
import { createHook } from 'node:async_hooks';
import { readFile, readdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { checkDirWritable } from '../../src/store/durable-file.js';
import { openLogged } from './helpers.js';
import { scratchDir } from '../support/tmp.js';

const FS_REQUESTS = new Set(['FSREQPROMISE', 'FSREQCALLBACK', 'FILEHANDLECLOSEREQ']);

/** Runs `work` and counts the thread-pool rounds it waited for before it settled. */
async function poolRounds(work: () => Promise<void>): Promise<{ rounds: number; error?: unknown }> {
  const pending = new Set<number>();
  let rounds = 0;
  const hook = createHook({
    init(id, type) {
      if (FS_REQUESTS.has(type)) pending.add(id);
    },
    before(id) {
      if (pending.delete(id) && pending.size === 0) rounds++;
    },
  });
  hook.enable();
  try {
    await work();
    return { rounds };
  } catch (error) {
    return { rounds, error };
  } finally {
    hook.disable();
  }
}

test('a writable data dir passes after two rounds of the thread pool, and keeps no file', async (t) => {
  const dir = await scratchDir();
  t.after(() => dir.cleanup());
  const { rounds, error } = await poolRounds(() => checkDirWritable(dir.path));
  assert.equal(error, undefined);
  assert.equal(rounds, 2);
  // The descriptor is closed after the answer; the name was removed before it.
  assert.deepEqual(await readdir(dir.path), []);
});

test('a data dir that is gone fails with its error code after one round, and nothing is created', async (t) => {
  const dir = await scratchDir();
  t.after(() => dir.cleanup());
  const gone = path.join(dir.path, 'gone');
  const { rounds, error } = await poolRounds(() => checkDirWritable(gone));
  assert.ok(error instanceof Error);
  assert.equal(error.message, `data dir ${gone} is not writable: ENOENT`);
  assert.equal(rounds, 1);
  assert.deepEqual(await readdir(dir.path), []);
});

test('a data dir that is a plain file fails with ENOTDIR, and the file is left as it was', async (t) => {
  const dir = await scratchDir();
  t.after(() => dir.cleanup());
  const file = path.join(dir.path, 'a-file');
  // A plain file where the data dir should be: creating anything in it is ENOTDIR, for root too.
  await writeFile(file, 'not a directory');
  const { error } = await poolRounds(() => checkDirWritable(file));
  assert.ok(error instanceof Error);
  assert.equal(error.message, `data dir ${file} is not writable: ENOTDIR`);
  assert.deepEqual(await readdir(dir.path), ['a-file']);
  assert.equal(await readFile(file, 'utf8'), 'not a directory');
});

test('checks at the same moment each use a name of their own', async (t) => {
  const dir = await scratchDir();
  t.after(() => dir.cleanup());
  await Promise.all(Array.from({ length: 8 }, () => checkDirWritable(dir.path)));
  assert.deepEqual(await readdir(dir.path), []);
});

// A service killed between a check's open and its unlink leaves the probe for good (the next process
// has another pid): 25 kills under /health polling left two. Opening the store, with the data
// directory's lock held, removes every probe but this process's own.
test('probe files a killed process left are removed when the store opens, and logged; nothing else is', async (t) => {
  const dir = await scratchDir();
  const left = [`.voice-hub-check-${process.pid + 1}-0f6a`, '.voice-hub-check-1-bd750748-aa6c-4d3e-9a59-1c51e2a1b0c3'];
  const kept = [`.voice-hub-check-${process.pid}-mine`, 'voice-hub-check-2-x', '.voice-hub-checks'];
  for (const name of [...left, ...kept]) await writeFile(path.join(dir.path, name), '');
  const { lines } = await openLogged(t, dir);
  assert.deepEqual((await readdir(dir.path)).filter((name) => name.includes('check')).sort(), [...kept].sort());
  for (const name of left) assert.ok(lines.some((l) => l.endsWith(`removed ${name} left by an interrupted write`)), `${name}:\n${lines.join('\n')}`);
});
