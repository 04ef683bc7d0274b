// Every kind of bad token is refused with its status (docs/security.md, "Authentication").
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { before, describe, it } from 'node:test';
import { TokenService } from '../../src/auth/tokens.js';
import { call } from '../support/http.js';
import { startService, type TestService } from '../support/service.js';
import { adminToken, registerDevice, tokenServiceFor } from '../support/tokens.js';

const b64 = (o: unknown): string => Buffer.from(JSON.stringify(o)).toString('base64url');

describe('token verification', () => {
  let svc: TestService;
  let dev: { id: string; token: string };
  const put = (token: string, id = dev.id) => call(svc.url, 'PUT', `/api/device/${id}/status`, { token, body: { status: 'online' } });

  before(async () => {
    svc = await startService();
    dev = await registerDevice(svc);
  });

  const expect401 = async (token: string, detail: string) => {
    const res = await put(token);
    assert.equal(res.status, 401);
    // RFC 6750 section 3.1, as ASP.NET Core's JwtBearer handler writes it: the token was looked at and refused.
    assert.equal(res.headers.get('www-authenticate'), `Bearer error="invalid_token", error_description="${detail}"`);
    assert.equal(res.json.detail, detail);
  };

  it('accepts the genuine token', async () => {
    assert.equal((await put(dev.token)).status, 200);
  });

  it('refuses an expired token', async () => {
    const past = tokenServiceFor(svc, () => Date.now() - 2 * 86_400_000);
    const { token } = await past.issueDevice(dev.id, 1, 3_600_000);
    await expect401(token, 'The token expired.');
  });

  it('refuses a token with a forged signature or payload', async () => {
    const [h, p, s] = dev.token.split('.');
    const flipped = (s![0] === 'A' ? 'B' : 'A') + s!.slice(1);
    await expect401(`${h}.${p}.${flipped}`, 'The token is invalid.');
    const claims = JSON.parse(Buffer.from(p!, 'base64url').toString());
    await expect401(`${h}.${b64({ ...claims, role: 'admin', sub: 'admin' })}.${s}`, 'The token is invalid.');
  });

  it('accepts a token only in its one spelling: no padding, no standard-alphabet characters, no stray bits', async () => {
    // A genuine token of the device whose signature has a character the standard alphabet spells otherwise.
    const { gen } = JSON.parse(Buffer.from(dev.token.split('.')[1]!, 'base64url').toString()) as { gen: number };
    let token = dev.token;
    while (!/[-_]/.test(token.split('.')[2]!)) token = (await tokenServiceFor(svc).issueDevice(dev.id, gen, 3_600_000)).token;
    const [h, p, s] = token.split('.') as [string, string, string];
    const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
    const last = ALPHABET.indexOf(s.at(-1)!);
    // Each of these verified before: RFC 7515 section 2 allows none of them.
    const respellings = [
      `${token}=`,
      `${h}.${p}.${s.replaceAll('-', '+').replaceAll('_', '/')}`,
      // The signature's 43rd character carries two bits past its 32 bytes: only zeros are canonical.
      ...[1, 2, 3].map((bits) => `${h}.${p}.${s.slice(0, -1)}${ALPHABET[last ^ bits]}`),
    ];
    for (const respelt of respellings) await expect401(respelt, 'The token is invalid.');
    assert.equal((await put(token)).status, 200);
  });

  it('refuses alg none', async () => {
    const claims = JSON.parse(Buffer.from(dev.token.split('.')[1]!, 'base64url').toString());
    await expect401(`${b64({ alg: 'none', typ: 'JWT' })}.${b64(claims)}.`, 'The token is invalid.');
    await expect401(`${b64({ alg: 'none', typ: 'JWT' })}.${b64(claims)}.x`, 'The token is invalid.');
  });

  it('refuses a token signed with another key', async () => {
    const other = new TokenService(randomBytes(32));
    await expect401((await other.issueDevice(dev.id, 1, 3_600_000)).token, 'The token is invalid.');
    await expect401((await other.issueAdmin(3_600_000)).token, 'The token is invalid.');
  });

  it("refuses another device's token with 403", async () => {
    const other = await registerDevice(svc);
    const res = await put(other.token);
    assert.equal(res.status, 403);
    assert.equal(res.json.detail, 'The token belongs to another device.');
  });

  it("refuses a deleted device's token before it expires", async () => {
    const gone = await registerDevice(svc);
    assert.equal((await call(svc.url, 'DELETE', `/api/device/${gone.id}`, { token: await adminToken(svc) })).status, 200);
    const res = await put(gone.token, gone.id);
    assert.equal(res.status, 401);
    assert.equal(res.json.detail, 'The token has been revoked.');
  });

  it('refuses garbage in the Authorization header', async () => {
    await expect401('not-a-jwt', 'The token is invalid.');
    const res = await call(svc.url, 'PUT', `/api/device/${dev.id}/status`, { body: { status: 'online' }, headers: { authorization: 'Bearer' } });
    assert.equal(res.status, 401);
    assert.equal(res.json.detail, 'The Authorization header must be "Bearer <token>".');
  });
});
