// The challenge of every 401 a bearer token draws (RFC 9110 section 15.5.2: a 401 carries
// WWW-Authenticate). A token that was presented and refused says so, as RFC 6750 section 3.1 asks and
// ASP.NET Core's JwtBearer handler writes it (`error="invalid_token"` with the reason); a request
// without a token gets the bare `Bearer`. The hub's negotiate and WebSocket upgrade answer alike.
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { call } from '../support/http.js';
import { answered, assertProblem } from '../support/problem.js';
import { startService, type TestService } from '../support/service.js';
import { adminToken, registerDevice, tokenServiceFor } from '../support/tokens.js';
import { upgradeChallenge } from '../hub/helpers.js';

const refused = (reason: string): string => `Bearer error="invalid_token", error_description="${reason}"`;

describe('the WWW-Authenticate challenge of a 401', () => {
  let svc: TestService;
  let admin: string;
  let forged: string;
  let expired: string;
  let revoked: string;
  before(async () => {
    svc = await startService();
    admin = await adminToken(svc);
    const device = await registerDevice(svc);
    const [h, p, s] = device.token.split('.');
    forged = `${h}.${p}.${(s![0] === 'A' ? 'B' : 'A') + s!.slice(1)}`;
    expired = (await tokenServiceFor(svc, () => Date.now() - 2 * 86_400_000).issueAdmin(3_600_000)).token;
    const gone = await registerDevice(svc);
    revoked = gone.token;
    assert.equal((await call(svc.url, 'DELETE', `/api/device/${gone.id}`, { token: admin })).status, 200);
  });

  it('no token, or a header of another scheme: the bare Bearer challenge', async () => {
    for (const headers of [{}, { authorization: 'Basic YWRtaW46eA==' }] as Array<Record<string, string>>) {
      const res = await call(svc.url, 'GET', '/api/device/list', { headers });
      assert.equal(res.status, 401, res.text);
      assert.equal(res.headers.get('www-authenticate'), 'Bearer');
    }
  });

  it('a forged, expired or revoked token: error="invalid_token" with the reason, on every route that checks one', async () => {
    const cases: Array<[string, string]> = [
      [forged, 'The token is invalid.'],
      [expired, 'The token expired.'],
      [revoked, 'The token has been revoked.'],
    ];
    for (const [token, reason] of cases) {
      for (const [method, path] of [['GET', '/api/device/list'], ['GET', '/api/config/voice'], ['POST', '/api/device/x/token']] as const) {
        const res = await call(svc.url, method, path, { token });
        assertProblem(answered(res), 401, { detail: reason });
        assert.equal(res.headers.get('www-authenticate'), refused(reason), `${method} ${path}`);
      }
    }
  });

  // JwtBearer takes whatever follows `Bearer ` as the token: text that is no token at all was still presented.
  // (Non-ASCII bytes at the very end of a header value never arrive: uWS' parser trims them with the
  // trailing white space, so `Bearer é` reaches us as `Bearer`.)
  const notTokens = ['a b', 'é.x', 'x, Bearer y', '"quoted"', 'a\tb'];

  it('text after Bearer that is no token: refused as an invalid token, not read as no token', async () => {
    for (const text of notTokens) {
      const res = await call(svc.url, 'GET', '/api/device/list', { headers: { authorization: `Bearer ${text}` } });
      assertProblem(answered(res), 401, { detail: 'The token is invalid.' });
      assert.equal(res.headers.get('www-authenticate'), refused('The token is invalid.'), text);
    }
    // The scheme in any case, spaces around the token: the token itself.
    const ok = await call(svc.url, 'GET', '/api/device/list', { headers: { authorization: `bEARER   ${admin}  ` } });
    assert.equal(ok.status, 200, ok.text);
    // The scheme alone presents nothing.
    const bare = await call(svc.url, 'GET', '/api/device/list', { headers: { authorization: 'Bearer' } });
    assertProblem(answered(bare), 401, { detail: 'The Authorization header must be "Bearer <token>".' });
    assert.equal(bare.headers.get('www-authenticate'), 'Bearer');
  });

  it('the hub: text after Bearer that is no token is refused, not taken for an anonymous connection', async () => {
    const ws = svc.url.replace(/^http/, 'ws');
    for (const text of notTokens) {
      const negotiate = await call(svc.url, 'POST', '/voice-hub/negotiate?negotiateVersion=1', { headers: { authorization: `Bearer ${text}` } });
      assert.equal(negotiate.status, 401, text);
      assert.equal(negotiate.headers.get('www-authenticate'), refused('The token is invalid.'));
      assert.deepEqual(await upgradeChallenge(`${ws}/voice-hub`, { authorization: `Bearer ${text}` }), { status: 401, challenge: refused('The token is invalid.') }, text);
    }
  });

  it('the hub: negotiate and the WebSocket upgrade refuse a bad token with the same challenge', async () => {
    const negotiate = await call(svc.url, 'POST', '/voice-hub/negotiate?negotiateVersion=1', { token: forged });
    assert.equal(negotiate.status, 401);
    assert.equal(negotiate.headers.get('www-authenticate'), refused('The token is invalid.'));
    const ws = svc.url.replace(/^http/, 'ws');
    assert.deepEqual(await upgradeChallenge(`${ws}/voice-hub?access_token=${revoked}`), { status: 401, challenge: refused('The token has been revoked.') });
    assert.deepEqual(await upgradeChallenge(`${ws}/voice-hub`, { authorization: `Bearer ${expired}` }), { status: 401, challenge: refused('The token expired.') });
  });
});
