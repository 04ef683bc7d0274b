// The order of the checks, the same on every route (as ASP.NET runs authentication and authorization
// before model binding): host and framing, then who may call (401/403), then the body's media type
// (415), then its size and content (413/400). Each case is followed on the same connection by a second
// request, which must be answered: a refusal leaves the connection in step whether the body was read
// or not.
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { assertProblem } from '../support/problem.js';
import { VALIDATION_TITLE } from '../../src/http/problem.js';
import { exchange, keepAliveRequest, type RawResponse } from '../support/raw-http.js';
import { startService, type TestService } from '../support/service.js';
import { adminToken, registerDevice } from '../support/tokens.js';

const KEY = 'order-key-1';
const BODIES = {
  'wrong Content-Type': { type: 'text/plain', body: '{}' },
  'malformed JSON': { type: 'application/json', body: '{"a":' },
} as const;
type BodyCase = keyof typeof BODIES;

type Expected =
  | { status: 401; apiKey: true }
  | { status: 401 | 403 | 415; detail: string }
  | { status: 400; title: string; errors: Record<string, string[]>; detail: string };

const NO_TOKEN: Expected = { status: 401, detail: 'A bearer token is required.' };
const BAD_TOKEN: Expected = { status: 401, detail: 'The token is invalid.' };
const BAD_KEY: Expected = { status: 401, apiKey: true };
const NOT_JSON: Expected = { status: 415, detail: 'The request body must be JSON (Content-Type: application/json).' };
const MALFORMED: Expected = { status: 400, title: VALIDATION_TITLE, detail: 'The request body is not valid JSON.', errors: { $: ['Unexpected end of JSON input'] } };
/** What a request that passed every auth check gets for each body. */
const BODY_REFUSAL: Record<BodyCase, Expected> = { 'wrong Content-Type': NOT_JSON, 'malformed JSON': MALFORMED };

function assertAnswer(res: RawResponse | undefined, expected: Expected, what: string): void {
  assert.ok(res, `${what}: no answer`);
  if ('apiKey' in expected) {
    assert.equal(res.status, 401, `${what}: ${res.body}`);
    assert.equal(res.headers['content-type'], 'text/plain; charset=utf-8', what);
    assert.equal(res.body.toString(), 'Invalid API Key', what);
    return;
  }
  const { status, ...extra } = expected;
  assertProblem({ status: res.status, headers: res.headers, body: res.body.toString() }, status, extra);
  // A refused token is named in the challenge (RFC 6750 section 3.1); no token gets the bare scheme.
  if (status === 401) assert.equal(res.headers['www-authenticate'], expected === NO_TOKEN ? 'Bearer' : `Bearer error="invalid_token", error_description="${extra.detail}"`, what);
}

describe('check order on every route that needs authentication', () => {
  let svc: TestService;
  let admin: string;
  let own: string;
  let other: string;
  let ownId: string;
  before(async () => {
    svc = await startService({ env: { ApiKeys__0: KEY } });
    admin = await adminToken(svc);
    const a = await registerDevice(svc, {}, { 'x-api-key': KEY });
    const b = await registerDevice(svc, {}, { 'x-api-key': KEY });
    own = a.token;
    ownId = a.id;
    other = b.token;
  });

  /**
   * Credentials of each case and what they get whatever the body; 'body': they pass the checks before
   * the body, which is refused as BODY_REFUSAL says. Routes without a body read none: one sent to them
   * is skipped as framed, whatever it holds.
   */
  type Credentials = { name: string; headers: () => Array<[string, string]>; expect: Expected | 'body' };
  const bearer = (token: () => string): Array<[string, string]> => [['Authorization', `Bearer ${token()}`]];
  const key: Array<[string, string]> = [['X-API-Key', KEY]];
  const tokenCases = (wrongRole: { token: () => string; expect: Expected | 'body' } | undefined, extra: Array<[string, string]> = []): Credentials[] => [
    { name: 'no token', headers: () => [...extra], expect: NO_TOKEN },
    { name: 'bad token', headers: () => [...extra, ['Authorization', 'Bearer not-a-token']], expect: BAD_TOKEN },
    ...(wrongRole ? [{ name: 'wrong role', headers: () => [...extra, ...bearer(wrongRole.token)], expect: wrongRole.expect }] : []),
  ];
  const keyCases = (token: () => string): Credentials[] => [
    { name: 'no key', headers: () => bearer(token), expect: BAD_KEY },
    { name: 'wrong key', headers: () => [['X-API-Key', 'nope'], ...bearer(token)], expect: BAD_KEY },
    { name: 'no key, no token', headers: () => [], expect: BAD_KEY },
  ];
  const forbiddenAdmin: Expected = { status: 403, detail: 'This operation needs an admin token.' };
  const anotherDevice: Expected = { status: 403, detail: 'The token belongs to another device.' };

  const table: Array<{ method: string; path: () => string; cases: () => Credentials[]; name?: string }> = [
    { method: 'POST', path: () => '/api/device/register', cases: () => keyCases(() => admin).slice(0, 2) },
    { method: 'PUT', name: '/api/device/{deviceId}/status', path: () => `/api/device/${ownId}/status`, cases: () => tokenCases({ token: () => other, expect: anotherDevice }) },
    { method: 'POST', name: '/api/device/{deviceId}/token', path: () => `/api/device/${ownId}/token`, cases: () => tokenCases({ token: () => other, expect: anotherDevice }) },
    { method: 'GET', path: () => '/api/device/list', cases: () => tokenCases({ token: () => own, expect: forbiddenAdmin }) },
    { method: 'DELETE', name: '/api/device/{deviceId}', path: () => `/api/device/${ownId}`, cases: () => tokenCases({ token: () => own, expect: forbiddenAdmin }) },
    { method: 'GET', path: () => '/api/config/voice', cases: () => tokenCases(undefined) },
    { method: 'PUT', path: () => '/api/config/voice', cases: () => tokenCases({ token: () => own, expect: forbiddenAdmin }) },
    // The session's device is named in the body, so another device's token can only be refused once
    // the body is valid: until then these get the body's refusal ('body').
    ...['/api/voice/start', '/api/voice/stop', '/api/voice/message'].map((path) => ({
      method: 'POST',
      path: () => path,
      cases: () => [...keyCases(() => own), ...tokenCases({ token: () => other, expect: 'body' as const }, key)],
    })),
  ];

  for (const route of table) {
    for (const bodyCase of Object.keys(BODIES) as BodyCase[]) {
      it(`${route.method} ${route.name ?? route.path()}: ${bodyCase}`, async () => {
        const { type, body } = BODIES[bodyCase];
        for (const c of route.cases()) {
          const what = `${route.method} ${route.path()} ${c.name}, ${bodyCase}`;
          const expected = c.expect === 'body' ? BODY_REFUSAL[bodyCase] : c.expect;
          const answer = await exchange(svc.port, [
            keepAliveRequest(route.method, route.path(), [['Content-Type', type], ...c.headers()], body),
            keepAliveRequest('GET', '/api/nothing', []),
          ], { expect: 2, stepwise: true });
          assertAnswer(answer.responses[0], expected, what);
          assert.equal(answer.responses[1]?.status, 404, `${what}: the next request on the connection`);
        }
      });
    }
  }
});
