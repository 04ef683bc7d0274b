// The hub's account of unsent bytes (src/hub/unsent-account.ts): the sum of what each connection last
// saw, moved by one subtraction and addition per observation, and the policy it answers.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FAIR_SHARE_BYTES, UnsentAccount } from '../../src/hub/unsent-account.js';

describe('UnsentAccount', () => {
  it('sums what each connection last observed; a connection that ends gives its share back', () => {
    const account = new UnsentAccount(1000, 100);
    let a = account.move(0, 300);
    let b = account.move(0, 500);
    assert.equal(account.total, 800);
    a = account.move(a, 200);
    assert.equal(account.total, 700);
    b = account.move(b, 0);
    a = account.move(a, 0);
    assert.equal(account.total, 0);
    assert.equal(a + b, 0);
  });

  it('a connection over its fair share must go only while the total is over the bound', () => {
    const account = new UnsentAccount(1000, 100);
    let a = account.move(0, 950);
    assert.equal(account.overShare(a), false, 'at the bound: nothing closes');
    const b = account.move(0, 60);
    assert.equal(account.total, 1010);
    assert.equal(account.overShare(b), false, 'under its share: kept, whatever the total');
    assert.equal(account.overShare(101), true);
    assert.equal(account.overShare(a), true);
    a = account.move(a, 0);
    assert.equal(account.overShare(101), false, 'back under the bound');
  });

  it("the fair share defaults to ASP.NET Core's pause threshold", () => {
    assert.equal(FAIR_SHARE_BYTES, 64 * 1024);
    assert.equal(new UnsentAccount(1).fairShare, 64 * 1024);
  });
});
