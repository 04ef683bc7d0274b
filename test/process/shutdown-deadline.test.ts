// A drain that outlasts the shutdown deadline (a broker, a client or a disk that hangs) still ends with
// the database written: telemetry answered 200 is coalesced in memory until the next flush, and exiting
// at the deadline without writing lost it. A second signal takes the same way out, and only once.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createLogger } from '../../src/log/logger.js';
import { Shutdown } from '../../src/process/shutdown.js';
import { device, open } from '../store/helpers.js';
import { scratchDir } from '../support/tmp.js';
import { waitUntil } from '../support/wait.js';

const TELEMETRY = { status: 'busy', lastSeen: '2026-12-03T17:00:00.000Z', batteryLevel: 42, temperature: 21.5, memoryUsage: 10, cpuUsage: 5 };

async function stoppedWith(trigger: (shutdown: Shutdown) => void) {
  const dir = await scratchDir();
  const store = await open(dir.path);
  await store.devices.insert(device('kitchen'));
  store.devices.updateTelemetry('kitchen', TELEMETRY); // answered 200, on disk at the next flush only
  const lines: string[] = [];
  const exits: number[] = [];
  const shutdown = new Shutdown({
    logger: createLogger({ levels: { Default: 'Information' }, timestamps: false, write: (line) => lines.push(line) }),
    stop: () => new Promise<void>(() => {}), // a drain that never ends
    closeStore: () => store.close(),
    exit: (code) => exits.push(code),
    deadlineMs: 200,
  });
  trigger(shutdown);
  await waitUntil(() => exits.length > 0, 'the exit');
  await new Promise((resolve) => setTimeout(resolve, 300));
  const reopened = await open(dir.path);
  const kept = reopened.devices.get('kitchen');
  await reopened.close();
  await dir.cleanup();
  return { lines, exits, kept };
}

test('past the deadline the database is written, then the process exits 1', async () => {
  const { lines, exits, kept } = await stoppedWith((s) => s.begin('SIGTERM'));
  assert.deepEqual(exits, [1]);
  assert.deepEqual(lines, [
    'info: App: SIGTERM received: draining and flushing',
    'warn: App: shutdown took longer than 200 ms: not waiting any more; writing the database, then exiting',
  ]);
  assert.equal(kept?.status, 'busy');
  assert.equal(kept?.batteryLevel, 42);
});

test('a second signal writes the database, and the deadline after it writes nothing more', async () => {
  const { lines, exits, kept } = await stoppedWith((s) => {
    s.begin('SIGINT');
    s.again('SIGINT');
  });
  assert.deepEqual(exits, [1]);
  assert.deepEqual(lines, [
    'info: App: SIGINT received: draining and flushing',
    'warn: App: SIGINT again: not waiting for requests and sessions; writing the database, then exiting',
  ]);
  assert.equal(kept?.status, 'busy');
});
