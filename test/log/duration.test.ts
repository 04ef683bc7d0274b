// How time spans read in log lines: milliseconds under a second, never "0 s".
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { durationText } from '../../src/log/duration.js';

describe('durationText', () => {
  const table: [number, string][] = [
    [0, '0 ms'], [0.4, '0 ms'], [1, '1 ms'], [250, '250 ms'], [249.6, '250 ms'], [999.4, '999 ms'], [999.5, '1 s'],
    [1000, '1 s'], [1234.5, '1.23 s'], [1500, '1.5 s'], [9994, '9.99 s'], [12_345, '12.3 s'], [59_940, '59.9 s'],
    [60_000, '60 s'], [90_400, '90 s'], [3_600_000, '3600 s'],
  ];
  for (const [ms, text] of table) it(`${ms} -> ${text}`, () => assert.equal(durationText(ms), text));
});
