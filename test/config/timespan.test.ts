// .NET time span text: configuration input and /health durations ("c" format).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { formatTimeSpan, parseTimeSpan } from '../../src/config/timespan.js';

describe('parseTimeSpan', () => {
  const valid: Array<[string, number]> = [
    ['00:00:00', 0],
    ['00:00:05', 5_000],
    ['00:05:00', 300_000],
    ['24:00:00', 86_400_000],
    ['36:30:00', 131_400_000],
    ['1.00:00:00', 86_400_000],
    ['1.02:03:04', 93_784_000],
    ['3650.00:00:00', 315_360_000_000],
    ['0:0:1', 1_000],
    ['00:00:00.5', 500],
    ['00:00:00.001', 1],
    ['00:00:00.0123456', 12.3456],
    ['00:00:00.0000001', 0.0001],
    ['1.01:01:01.0010000', 90_061_001],
    [' 00:00:01 ', 1_000],
    ['-00:00:01.5', -1_500],
  ];
  for (const [text, ms] of valid) {
    it(`reads ${JSON.stringify(text)} as ${ms} ms`, () => assert.equal(parseTimeSpan(text), ms));
  }

  const invalid = [
    '', '5', '05:00', '1.05:00', 'abc', '1:2:3:4', '00:60:00', '00:00:60', '1.24:00:00',
    '00:00:00.12345678', '00:00:00.', '1.', '.00:00:01', '00:00:01 s', '99999999.00:00:00', '+00:00:01',
  ];
  for (const text of invalid) {
    it(`refuses ${JSON.stringify(text)}`, () => assert.throws(() => parseTimeSpan(text), /invalid time span/));
  }
});

describe('formatTimeSpan', () => {
  const table: Array<[number, string]> = [
    [0, '00:00:00'],
    [5_000, '00:00:05'],
    [300_000, '00:05:00'],
    [86_400_000, '1.00:00:00'],
    [90_061_001, '1.01:01:01.0010000'],
    [12.3456, '00:00:00.0123456'],
    [0.0001, '00:00:00.0000001'],
    [0.00004, '00:00:00'],
    [-1_500, '-00:00:01.5000000'],
    [2 ** 31 - 1, '24.20:31:23.6470000'],
  ];
  for (const [ms, text] of table) {
    it(`writes ${ms} ms as ${text}`, () => assert.equal(formatTimeSpan(ms), text));
  }

  it('refuses non-finite numbers', () => {
    assert.throws(() => formatTimeSpan(Number.NaN));
    assert.throws(() => formatTimeSpan(Infinity));
  });

  it('round-trips every tick count', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 10 ** 15 }), (ticks) => {
        const ms = ticks / 10_000;
        const text = formatTimeSpan(ms);
        assert.equal(Math.round(parseTimeSpan(text) * 10_000), ticks);
        assert.equal(formatTimeSpan(parseTimeSpan(text)), text);
      }),
      { numRuns: 300 },
    );
  });
});
