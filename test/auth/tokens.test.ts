// TokenService on its own: the verified-token cache must never outlive a token's expiry or
// accept what the signature check refuses.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { test } from 'node:test';
import { TokenService, VERIFIED_TOKEN_CACHE_SIZE } from '../../src/auth/tokens.js';

test('a cached token still expires', async () => {
  let now = Date.now();
  const tokens = new TokenService(randomBytes(32), () => now);
  const { token } = await tokens.issueDevice('d1', 1, 5_000);
  assert.equal((await tokens.verify(token)).sub, 'd1');
  assert.equal((await tokens.verify(token)).sub, 'd1'); // from the cache
  now += 6_000;
  await assert.rejects(tokens.verify(token), { code: 'unauthenticated', message: 'The token expired.' });
});

test('failures are not cached and a forged variant of a cached token is refused', async () => {
  const tokens = new TokenService(randomBytes(32));
  const { token } = await tokens.issueAdmin(60_000);
  await tokens.verify(token);
  const forged = token.slice(0, -2) + (token.at(-2) === 'A' ? 'B' : 'A') + token.slice(-1);
  assert.notEqual(forged, token);
  await assert.rejects(tokens.verify(forged), { code: 'unauthenticated', message: 'The token is invalid.' });
  await assert.rejects(tokens.verify(forged), { code: 'unauthenticated', message: 'The token is invalid.' });
});

test('the cache is bounded: the oldest entries fall out and verify again from scratch', async () => {
  const tokens = new TokenService(randomBytes(32));
  const first = (await tokens.issueDevice('first', 1, 60_000)).token;
  await tokens.verify(first);
  for (let i = 0; i < VERIFIED_TOKEN_CACHE_SIZE; i++) await tokens.verify((await tokens.issueDevice(`d${i}`, 1, 60_000)).token);
  const cache = (tokens as unknown as { verified: Map<string, unknown> }).verified;
  assert.equal(cache.size, VERIFIED_TOKEN_CACHE_SIZE);
  assert.equal(cache.has(first), false);
  assert.equal((await tokens.verify(first)).sub, 'first');
});

test('the cache keeps what was used last: a token used again outlives the ones verified after it', async () => {
  const tokens = new TokenService(randomBytes(32));
  const kept = (await tokens.issueDevice('kept', 1, 60_000)).token;
  await tokens.verify(kept);
  const others: string[] = [];
  for (let i = 0; i < VERIFIED_TOKEN_CACHE_SIZE - 1; i++) {
    others.push((await tokens.issueDevice(`d${i}`, 1, 60_000)).token);
    await tokens.verify(others[i]!);
  }
  await tokens.verify(kept); // the oldest entry, used again: now the most recent
  await tokens.verify((await tokens.issueDevice('new', 1, 60_000)).token); // one more than the cache holds
  const cache = (tokens as unknown as { verified: Map<string, unknown> }).verified;
  assert.deepEqual(
    { size: cache.size, kept: cache.has(kept), firstOther: cache.has(others[0]!), secondOther: cache.has(others[1]!) },
    { size: VERIFIED_TOKEN_CACHE_SIZE, kept: true, firstOther: false, secondOther: true },
  );
});
