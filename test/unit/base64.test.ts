// Strict Base64: what every audio packet and `bytes` parameter is checked with. White space (space, tab,
// CR, LF) is skipped anywhere, as .NET's Convert.FromBase64String skips it.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { decodeBase64, isBase64, isCanonicalBase64 } from '../../src/base64.js';

test('decodeBase64 takes the standard alphabet in padded groups of four and nothing else', () => {
  assert.deepEqual(decodeBase64('AQID'), Buffer.from([1, 2, 3]));
  assert.deepEqual(decodeBase64('AQ=='), Buffer.from([1]));
  assert.deepEqual(decodeBase64('AQI='), Buffer.from([1, 2]));
  assert.deepEqual(decodeBase64('+/+/'), Buffer.from([0xfb, 0xff, 0xbf]));
  assert.deepEqual(decodeBase64(''), Buffer.alloc(0));
  for (const bad of ['AQ', 'AQI', 'AQ-_', 'A===', '====', '=AAA', 'AA=A', 'AQ==AQ==', 'AQ\u00e9D', 'AQ\u0100D', 'AQI\u2028', 'AQ\u00a0ID', 'AQ\vID', 'AQ\fID', 'AQ=\nA', 'A Q I']) {
    assert.equal(decodeBase64(bad), undefined, JSON.stringify(bad));
  }
});

test('white space anywhere is skipped: MIME line breaks, a trailing newline, spaces between groups and padding', () => {
  const bytes = Buffer.from(Array.from({ length: 120 }, (_, i) => (i * 73) % 256));
  const mime = bytes.toString('base64').replace(/.{76}/g, '$&\r\n');
  assert.deepEqual(decodeBase64(mime), bytes);
  for (const [text, expected] of [['AQ ID', [1, 2, 3]], ['AQ\nID', [1, 2, 3]], ['AQID\n', [1, 2, 3]], ['\tAQ=\r\n=', [1]], [' \n', []]] as const) {
    assert.deepEqual(decodeBase64(text), Buffer.from(expected), JSON.stringify(text));
  }
});

test('isBase64 agrees with the grammar written as a regular expression, on every short string over a mixed alphabet', () => {
  const grammar = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
  // Letters, digits, both specials, padding, the URL-safe pair, a space and characters past ASCII.
  const symbols = ['A', 'z', '0', '+', '/', '=', '-', '_', ' ', '\n', '\u00ff', '\u{1F600}'];
  let checked = 0;
  let accepted = 0;
  const visit = (prefix: string, depth: number): void => {
    const expected = grammar.test(prefix.replace(/[ \n]/g, ''));
    if (expected) assert.deepEqual(decodeBase64(prefix), Buffer.from(prefix.replace(/[ \n]/g, ''), 'base64'), JSON.stringify(prefix));
    assert.equal(isBase64(prefix), expected, JSON.stringify(prefix));
    checked++;
    if (expected) accepted++;
    if (depth === 0) return;
    for (const s of symbols) visit(prefix + s, depth - 1);
  };
  visit('', 5);
  assert.ok(checked === 271_453 && accepted > 2000, `${checked} checked, ${accepted} accepted`);
});

test('isBase64 accepts what Buffer encodes, whatever its length', () => {
  for (let n = 0; n < 300; n++) {
    const bytes = Buffer.alloc(n, n * 37);
    assert.equal(isBase64(bytes.toString('base64')), true, `${n} bytes`);
    assert.equal(isBase64(bytes.toString('base64url')), n % 3 === 0 && !/[-_]/.test(bytes.toString('base64url')), `${n} bytes, URL-safe`);
  }
});

test('isCanonicalBase64: true for exactly the text Buffer writes for the bytes the text decodes to', () => {
  let nonCanonical = 0;
  for (const body of ['', 'AQID']) {
    for (const a of 'AQgw/+9z') {
      for (const b of 'ABCDPQRSgh') {
        for (const tail of [`${a}${b}==`, `${a}${b}A=`, `${a}${b}B=`, `${a}${b}C=`, `${a}${b}D=`, `${a}${b}E=`]) {
          const text = body + tail;
          const canonical = Buffer.from(text, 'base64').toString('base64') === text;
          assert.equal(isCanonicalBase64(text, Buffer.from(text, 'base64').length), canonical, text);
          if (!canonical) nonCanonical++;
        }
      }
    }
  }
  assert.ok(nonCanonical > 100, `${nonCanonical} non-canonical texts seen`);
  assert.equal(isCanonicalBase64('', Buffer.from('', 'base64').length), true);
  assert.equal(isCanonicalBase64('AQID', Buffer.from('AQID', 'base64').length), true);
  assert.equal(isCanonicalBase64('AB==', Buffer.from('AB==', 'base64').length), false);
  assert.equal(isCanonicalBase64('AA==', Buffer.from('AA==', 'base64').length), true);
  assert.equal(isCanonicalBase64('AQJ=', Buffer.from('AQJ=', 'base64').length), false);
  assert.equal(isCanonicalBase64('AQI=', Buffer.from('AQI=', 'base64').length), true);
  // White space is skipped on the way in, not passed on.
  assert.equal(isCanonicalBase64('AQ ID', 3), false);
  assert.equal(isCanonicalBase64('AQID\n', 3), false);
});
