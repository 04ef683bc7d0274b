// parseBody notes every whole number written with a fraction or an exponent, and skips the scan for them
// only where none can be (number-syntax.ts): checked against JSON.parse's own reading of many generated
// number tokens, the digits 0 and 9 favoured since they are where a fraction rounds to a whole number.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { markedTwin, parseBody } from '../../src/http/number-syntax.js';

/** A small seeded generator: the same tokens on every run. */
function generator(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    return state / 2 ** 32;
  };
}

function digits(random: () => number, count: number): string {
  let out = '';
  for (let i = 0; i < count; i++) {
    const r = random();
    out += r < 0.35 ? '9' : r < 0.7 ? '0' : String(Math.floor(random() * 10));
  }
  return out;
}

function numberToken(random: () => number): string {
  const whole = digits(random, 1 + Math.floor(random() * 20)).replace(/^0+(?=\d)/, '');
  const fraction = random() < 0.8 ? `.${digits(random, 1 + Math.floor(random() * 22))}` : '';
  const exponent = random() < 0.15 ? `e${random() < 0.5 ? '-' : ''}${Math.floor(random() * 4)}` : '';
  return `${random() < 0.2 ? '-' : ''}${whole}${fraction}${exponent}`;
}

test('a number with a fraction or an exponent gets a marker exactly when JSON.parse makes it whole, and one past Int32', () => {
  const random = generator(20261130);
  let whole = 0;
  for (let i = 0; i < 20_000; i++) {
    const token = numberToken(random);
    const value = Number(token);
    const expected = Number.isInteger(value) && (/[.eE]/.test(token) || Math.abs(value) > 2 ** 31 - 1 + (value < 0 ? 1 : 0));
    if (expected) whole++;
    const body = parseBody(`{"status":"online","temperature":41.5,"n":${token}}`);
    assert.equal(markedTwin(body) !== undefined, expected, token);
  }
  assert.ok(whole > 1000, `the tokens hold whole numbers written with a fraction: ${whole}`);
});
