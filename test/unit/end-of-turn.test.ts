// EndOfTurn: work gathered in a turn and finished at its end, the upstream writes and decoder jobs
// (held) let go once they have waited MAX_HOLD_MS, the hub's socket batches (wholeTurn) never early.
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { EndOfTurn, MAX_HOLD_MS, useClock } from '../../src/end-of-turn.js';

const turnEnd = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));
// The hold is measured on a clock that moves only when a test says so: on a loaded machine a few
// statements can take longer than MAX_HOLD_MS, and the tests must not depend on that.
let now = 0;
after(useClock(() => now));
/** Time passes past the hold, as in a long turn. */
function spinPastHold(): void {
  now += MAX_HOLD_MS + 0.5;
}

test('items added in a turn are finished once each, in order, at its end', async () => {
  const done: string[] = [];
  const eot = new EndOfTurn<string>((item) => done.push(item));
  assert.equal(eot.add('a'), true);
  assert.equal(eot.add('b'), true);
  assert.equal(eot.add('a'), false, 'already waiting');
  eot.add('c');
  eot.delete('c');
  assert.deepEqual(done, [], 'nothing before the turn ends');
  await turnEnd();
  assert.deepEqual(done, ['a', 'b'], 'once each, a deleted item skipped');
  eot.add('a');
  await turnEnd();
  assert.deepEqual(done, ['a', 'b', 'a'], 'the next turn starts afresh');
});

test('held work waits at most MAX_HOLD_MS: the next add after that lets it go, its own item waits', async () => {
  const writes: string[] = [];
  const jobs: string[] = [];
  const frames: string[] = [];
  const upstream = new EndOfTurn<string>((item) => writes.push(item));
  const decoder = new EndOfTurn<string>((item) => jobs.push(item));
  const sockets = new EndOfTurn<string>((item) => frames.push(item), { wholeTurn: true });
  upstream.add('w1');
  decoder.add('j1');
  sockets.add('f1');
  decoder.add('j2');
  assert.deepEqual([writes, jobs, frames], [[], [], []], 'within the hold, everything waits');
  spinPastHold();
  sockets.add('f2');
  assert.deepEqual(writes, ['w1'], 'an add to any EndOfTurn releases the held ones');
  assert.deepEqual(jobs, ['j1', 'j2']);
  assert.deepEqual(frames, [], 'socket batches wait for the whole turn');
  upstream.add('w2');
  assert.deepEqual(writes, ['w1'], 'a new hold starts with the first item after the release');
  spinPastHold();
  assert.equal(upstream.add('w2'), true, 'released, then waiting again');
  assert.deepEqual(writes, ['w1', 'w2']);
  await turnEnd();
  assert.deepEqual(writes, ['w1', 'w2', 'w2']);
  assert.deepEqual(frames, ['f1', 'f2']);
});

test('work a flush adds goes out in the same pass', async () => {
  const order: string[] = [];
  const second = new EndOfTurn<string>((item) => order.push(`second ${item}`));
  const first = new EndOfTurn<string>((item) => {
    order.push(`first ${item}`);
    if (item === 'x') {
      first.add('y');
      second.add('z');
    }
  });
  first.add('x');
  await turnEnd();
  assert.deepEqual(order, ['first x', 'first y', 'second z']);
  await turnEnd();
  assert.deepEqual(order, ['first x', 'first y', 'second z'], 'nothing left for the next turn');
});
