// Log levels per category (case-insensitive, as .NET), journald priority prefixes, one line per event.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createLogger } from '../../src/log/logger.js';

test('levels per category, matched case-insensitively, Default for the rest', () => {
  const lines: string[] = [];
  const root = createLogger({ levels: { Default: 'Warning', hub: 'Debug' }, write: (l) => lines.push(l), journald: false, timestamps: false });
  root.info('dropped');
  root.warn('kept');
  const hub = root.child('Hub');
  hub.debug('hub debug');
  hub.trace('hub trace dropped');
  root.child('Mqtt').info('mqtt info dropped');
  assert.deepEqual(lines, ['warn: App: kept', 'dbug: Hub: hub debug']);
});

test('journald gets syslog priorities and no timestamps; newlines cannot forge entries', () => {
  const lines: string[] = [];
  const log = createLogger({ levels: { Default: 'Trace' }, write: (l) => lines.push(l), journald: true });
  log.error('bad\nfail: App: forged');
  log.info('fine');
  assert.deepEqual(lines, ['<3>fail: App: bad fail: App: forged', '<6>info: App: fine']);
});
