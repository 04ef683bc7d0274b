// ServiceSignals with real signals sent to this process: shutdown signals that come before the service
// can stop (while it claims its data directory) are handed over in order once it can.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createLogger } from '../../src/log/logger.js';
import { IGNORED_SIGNALS, SHUTDOWN_SIGNALS, ServiceSignals, type ShutdownSignal } from '../../src/process/signals.js';
import { waitUntil } from '../support/wait.js';

test('early shutdown signals wait for the handler and arrive counted; the ignored ones are logged', async (t) => {
  // Node 24's test runner starts its test processes with diagnostic reports on SIGUSR2 switched on: the
  // signal below would write one, environment and all, into the working directory.
  const reportOnSignal = process.report.reportOnSignal;
  process.report.reportOnSignal = false;
  t.after(() => {
    for (const signal of [...SHUTDOWN_SIGNALS, ...IGNORED_SIGNALS]) process.removeAllListeners(signal);
    process.report.reportOnSignal = reportOnSignal;
  });
  const lines: string[] = [];
  const signals = new ServiceSignals(createLogger({ levels: { Default: 'Information' }, write: (l) => lines.push(l), journald: false, timestamps: false }));
  const seen: Array<[ShutdownSignal, number]> = [];
  process.kill(process.pid, 'SIGHUP');
  process.kill(process.pid, 'SIGINT');
  process.kill(process.pid, 'SIGUSR2');
  await waitUntil(() => lines.length === 1, 'the SIGUSR2 line');
  assert.equal(seen.length, 0);
  signals.handle = (signal, count) => seen.push([signal, count]);
  assert.deepEqual(seen, [['SIGHUP', 1], ['SIGINT', 2]]);
  process.kill(process.pid, 'SIGTERM');
  await waitUntil(() => seen.length === 3, 'the SIGTERM');
  assert.deepEqual(seen[2], ['SIGTERM', 3]);
  assert.deepEqual(lines, ['warn: App: SIGUSR2 received: ignored (SIGTERM stops the service)']);
});
