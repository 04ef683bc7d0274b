// Log levels per category (case-insensitive, as .NET), journald priority prefixes, one line per event.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { printable } from '../../src/cli/health.js';
import { jsonText } from '../../src/config/shown.js';
import { createLogger, MAX_LINE_TEXT, oneLine } from '../../src/log/logger.js';

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

test('a line is cut at MAX_LINE_TEXT, never inside an escape or a surrogate pair, saying how much was left out', () => {
  const lines: string[] = [];
  const log = createLogger({ levels: { Default: 'Trace' }, write: (l) => lines.push(l), journald: true });
  // journald splits a line past 48 KiB into entries of their own: the rest must never reach it.
  log.debug(`unknown hub method '${'M'.repeat(60_000)} <3>fail: App: forged' from c1`);
  log.warn('\x1b'.repeat(5000));
  log.info('\u{1f600}'.repeat(5000));
  const text = lines.map((l) => l.replace(/^<\d>\w+: App: /, ''));
  const [method, escapes, emoji] = text.map((t) => /^(.*)\.\.\. \((\d+) more characters\)$/su.exec(t)!);
  assert.equal(method![1], `unknown hub method '${'M'.repeat(method![1]!.length - 20)}`);
  assert.equal(method![1]!.length + Number(method![2]), 60_050);
  assert.ok(!lines[0]!.includes('forged'));
  assert.equal(escapes![1], '\\x1b'.repeat(escapes![1]!.length / 4));
  assert.equal(escapes![1]!.length / 4 + Number(escapes![2]), 5000);
  assert.equal(emoji![1], '\u{1f600}'.repeat(emoji![1]!.length / 2));
  assert.equal(emoji![1]!.length + Number(emoji![2]), 10_000);
  for (const t of text) assert.ok(t.length <= MAX_LINE_TEXT && t.length > MAX_LINE_TEXT - 8, `${t.length}`);
  assert.ok(MAX_LINE_TEXT * 3 < 48 * 1024, 'at most 3 bytes of UTF-8 per code unit stay below journald\'s LineMax');
});

test('a lone surrogate is written as an escape; a pair as its character', () => {
  const lines: string[] = [];
  const log = createLogger({ levels: { Default: 'Trace' }, write: (l) => lines.push(l), journald: false, timestamps: false });
  log.info('a\ud800b\udc00c\u{1f600}d');
  assert.deepEqual(lines, ['info: App: a\\ud800b\\udc00c\u{1f600}d']);
});

// Every mark Unicode counts as a bidirectional control (Bidi_Control), not only the overrides and
// isolates: the Arabic letter mark U+061C reorders a line as the right-to-left mark U+200F does, and came
// through as it was. The log, configuration values as shown and the health table escape all of them.
test('every Bidi_Control mark is written as an escape, in the log, in shown values and in the health table', () => {
  const marks: string[] = [];
  for (let c = 0; c < 0x10000; c++) if (/\p{Bidi_Control}/u.test(String.fromCharCode(c))) marks.push(String.fromCharCode(c));
  assert.ok(marks.includes('\u061c') && marks.includes('\u202e'), 'the property is known to this Node');
  const lines: string[] = [];
  const log = createLogger({ levels: { Default: 'Trace' }, write: (l) => lines.push(l), journald: false, timestamps: false });
  for (const mark of marks) {
    const escape = `\\u${mark.charCodeAt(0).toString(16).padStart(4, '0')}`;
    log.info(`a${mark}b`);
    assert.equal(lines.pop(), `info: App: a${escape}b`);
    // Past the length bound the text is escaped by another path (cut): the same there.
    assert.ok(oneLine(`${mark}${'x'.repeat(MAX_LINE_TEXT)}`).startsWith(`${escape}x`), escape);
    assert.equal(jsonText(`a${mark}b`), `"a${escape}b"`);
    assert.equal(printable(`a${mark}b`), `a${escape}b`);
  }
});

test('a JSON Web Token a client put where a name goes is not written: the line says one was there', () => {
  const lines: string[] = [];
  const log = createLogger({ levels: { Default: 'Trace' }, write: (l) => lines.push(l), journald: false, timestamps: false });
  const header = Buffer.from('{"alg":"HS256","typ":"JWT"}').toString('base64url');
  const payload = Buffer.from('{"sub":"dev-1","role":"device"}').toString('base64url');
  const jwt = `${header}.${payload}.c2lnbmF0dXJlX29mX3RoZV90b2tlbg`;
  log.debug(`session '${jwt}' does not exist`);
  log.info(`GET /api/device/${jwt}/status 404`);
  log.warn(`unknown hub method ${jwt}. Closing`);
  // Unsigned (alg none) tokens end in a dot; they are tokens too.
  log.info(`token ${header}.${payload}. seen`);
  // Words that only look a little like one are kept: ids, versions, a header alone, no payload.
  log.info(`session eyJ-not-a-token v1.2.3 ${header} ${header}..x ok`);
  assert.deepEqual(lines, [
    "dbug: App: session '[a token, not shown]' does not exist",
    'info: App: GET /api/device/[a token, not shown]/status 404',
    'warn: App: unknown hub method [a token, not shown]. Closing',
    'info: App: token [a token, not shown] seen',
    `info: App: session eyJ-not-a-token v1.2.3 ${header} ${header}..x ok`,
  ]);
});

test('the health table shows an answer as the log does: Unicode line breaks as spaces, lone surrogates escaped', () => {
  assert.equal(printable('a\u2028fail: forged\u2029b'), 'a fail: forged b');
  assert.equal(printable('x\ud800y\udc00z \u{1f600}'), 'x\\ud800y\\udc00z \u{1f600}');
  assert.equal(oneLine('x\ud800y\udc00z \u{1f600}'), 'x\\ud800y\\udc00z \u{1f600}');
});
