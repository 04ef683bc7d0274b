// ThrottledLog: the first lines of a window as they come, the rest summed up once, never lost at shutdown.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createLogger } from '../../src/log/logger.js';
import { ThrottledLog } from '../../src/log/throttled.js';

function setup() {
  const lines: string[] = [];
  const logger = createLogger({ levels: { Default: 'Trace' }, write: (l) => lines.push(l), journald: false, timestamps: false });
  const clock = { now: 0 };
  const log = new ThrottledLog(logger, 2, 60_000, () => clock.now, (count, seconds, last) => `${count} left out in ${seconds} s, last: ${last}`);
  return { lines, clock, log };
}

test('2 lines a window as they come; flush writes the sum of the rest with the last line left out, once', () => {
  const { lines, log } = setup();
  for (let i = 1; i <= 5; i++) log.warn(`line ${i}`);
  assert.deepEqual(lines, ['warn: App: line 1', 'warn: App: line 2']);
  log.flush();
  log.flush();
  assert.deepEqual(lines.slice(2), ['warn: App: 3 left out in 60 s, last: line 5']);
});

test('a flush with nothing left out writes nothing; a new window logs again', () => {
  const { lines, clock, log } = setup();
  log.info('a');
  log.flush();
  assert.deepEqual(lines, ['info: App: a']);
  log.info('b');
  log.info('c');
  clock.now = 60_000;
  log.info('d');
  log.flush();
  assert.deepEqual(lines, ['info: App: a', 'info: App: b', 'info: App: d', 'warn: App: 1 left out in 60 s, last: c']);
});
