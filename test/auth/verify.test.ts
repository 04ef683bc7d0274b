// The one token verification HTTP and the hub share: what TokenService refuses stays refused, and a
// well-signed token whose device generation moved on (revoked) is refused with the same error everywhere.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { test } from 'node:test';
import { TokenService, type Principal } from '../../src/auth/tokens.js';
import { tokenVerifier } from '../../src/auth/verify.js';

/** A refusal comes as a rejected promise, never a throw (VerifyToken), even for a token verified before. */
function refusal(answer: Principal | Promise<Principal>): Promise<Principal> {
  assert.ok(answer instanceof Promise, 'a refusal is a promise');
  return answer;
}

test('valid, revoked, forged and expired tokens', async () => {
  let now = Date.now();
  const tokens = new TokenService(randomBytes(32), () => now);
  const generation = new Map([['d1', 2]]);
  const asked: Principal[] = [];
  const verify = tokenVerifier(tokens, (p) => {
    asked.push(p);
    return p.role === 'admin' || generation.get(p.sub) === p.gen;
  });

  const current = (await tokens.issueDevice('d1', 2, 60_000)).token;
  assert.deepEqual(await verify(current), { role: 'device', sub: 'd1', gen: 2, exp: Math.floor(now / 1000) + 60 });
  assert.equal((await verify((await tokens.issueAdmin(60_000)).token)).role, 'admin');
  // Verified before: answered at once, without a promise hop (a status update's token check).
  assert.deepEqual(verify(current), { role: 'device', sub: 'd1', gen: 2, exp: Math.floor(now / 1000) + 60 });

  const old = (await tokens.issueDevice('d1', 1, 60_000)).token;
  await assert.rejects(refusal(verify(old)), { name: 'DomainError', code: 'unauthenticated', message: 'The token has been revoked.' });
  generation.set('d1', 3); // deleting or re-registering the device moves its generation on
  await assert.rejects(refusal(verify(current)), { code: 'unauthenticated', message: 'The token has been revoked.' });

  const asksBefore = asked.length;
  // One signature character replaced by another, away from the end: the last characters carry padding
  // bits, so replacing them could leave the same signature (this failed once in about a thousand runs).
  const at = current.length - 10;
  const forged = `${current.slice(0, at)}${current[at] === 'A' ? 'B' : 'A'}${current.slice(at + 1)}`;
  await assert.rejects(refusal(verify(forged)), { code: 'unauthenticated', message: 'The token is invalid.' });
  await assert.rejects(refusal(verify('not-a-jwt')), { code: 'unauthenticated', message: 'The token is invalid.' });
  now += 61_000;
  await assert.rejects(refusal(verify(current)), { code: 'unauthenticated', message: 'The token expired.' });
  assert.equal(asked.length, asksBefore, 'revocation is only asked about tokens that verified');
});
