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

test('hidden characters are written as escapes, every line end as a space', () => {
  const lines: string[] = [];
  const log = createLogger({ levels: { Default: 'Trace' }, write: (l) => lines.push(l), journald: true });
  log.warn('a\x1b[31mb\x00c\x07d\x7fe\x85f\u009bg\u202eh\u2066i\u200fj\tk\r\nl\u2028m\u2029n');
  log.info('caf\u00e9 \u00fc\u00df \u4e2d \u{1f600} stay as they are');
  assert.deepEqual(lines, [
    '<4>warn: App: a\\x1b[31mb\\x00c\\x07d\\x7fe\\x85f\\x9bg\\u202eh\\u2066i\\u200fj\\x09k l m n',
    '<6>info: App: caf\u00e9 \u00fc\u00df \u4e2d \u{1f600} stay as they are',
  ]);
});
