// An array is one value: the highest source that gives any item of it gives all of it (test/config/
// load.test.ts), and within a source no item may be given twice. `--Cors.AllowedOrigins A
// --Cors.AllowedOrigins.0 B` used to drop A without a word, as did `.1 B` (B came out first and alone).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { problemsOf } from './helpers.js';

const A = 'http://a.local';
const B = 'http://b.local';

describe('arrays within one source', () => {
  it('flags give an array whole or by index, not both', () => {
    for (const index of ['0', '1']) {
      assert.deepEqual(problemsOf({ flags: { 'Cors.AllowedOrigins': A, [`Cors.AllowedOrigins.${index}`]: B } }), [
        `Cors.AllowedOrigins: given both whole (flag --Cors.AllowedOrigins) and by index (flag --Cors.AllowedOrigins.${index}): give the array one way`,
      ]);
    }
    assert.deepEqual(problemsOf({ flags: { apikeys: ['k1', 'k2'], 'ApiKeys.2': 'k3' }, flagNames: { apikeys: 'apikeys' } }), [
      'ApiKeys: given both whole (flag --apikeys) and by index (flag --ApiKeys.2): give the array one way',
    ]);
  });

  it('an index is given once, however it is written', () => {
    assert.deepEqual(problemsOf({ flags: { 'Cors.AllowedOrigins.0': A, 'Cors.AllowedOrigins.00': B } }), [
      'Cors.AllowedOrigins[0]: set by both flag --Cors.AllowedOrigins.0 and flag --Cors.AllowedOrigins.00; keep one',
    ]);
    assert.deepEqual(problemsOf({ env: { Cors__AllowedOrigins__1: A, CORS__ALLOWEDORIGINS__001: B } }), [
      'Cors.AllowedOrigins[1]: set by both env CORS__ALLOWEDORIGINS__001 and env Cors__AllowedOrigins__1; keep one',
    ]);
  });
});
