// The members of a problem body in the order ASP.NET Core writes them: ProblemDetails' type, title,
// status and detail (its JsonPropertyOrder), then ValidationProblemDetails' errors, then the traceId
// extension, which System.Text.Json writes last as extension data. The docs name them in this order
// (`{type, title, status, detail, traceId}`); a body that put traceId before detail or errors read
// differently from ASP.NET's to anyone comparing the text (golden files, logs, a client's report).
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { call } from '../support/http.js';
import { startService, type TestService } from '../support/service.js';
import { adminToken } from '../support/tokens.js';

/** The member names of the JSON object in `text`, in the order they were written. */
const membersOf = (text: string): string[] => Object.keys(JSON.parse(text) as Record<string, unknown>);

describe('the member order of problem bodies', () => {
  let svc: TestService;
  let admin: string;
  before(async () => {
    svc = await startService();
    admin = await adminToken(svc);
  });

  it('a problem with a detail: type, title, status, detail, traceId', async () => {
    const res = await call(svc.url, 'PUT', '/api/device/nobody/status', { body: { status: 'idle' }, token: admin });
    assert.equal(res.status, 404, res.text);
    assert.deepEqual(membersOf(res.text), ['type', 'title', 'status', 'detail', 'traceId']);
  });

  it('a 401 without a token: the same order', async () => {
    const res = await call(svc.url, 'GET', '/api/device/list');
    assert.equal(res.status, 401, res.text);
    assert.deepEqual(membersOf(res.text), ['type', 'title', 'status', 'detail', 'traceId']);
  });

  it('a validation problem: errors after detail, traceId last', async () => {
    const res = await call(svc.url, 'POST', '/api/device/register', { body: {} });
    assert.equal(res.status, 400, res.text);
    assert.deepEqual(membersOf(res.text), ['type', 'title', 'status', 'detail', 'errors', 'traceId']);
  });

  it('a route that does not exist: the same order', async () => {
    const res = await call(svc.url, 'GET', '/api/nothing-here');
    assert.equal(res.status, 404, res.text);
    assert.deepEqual(membersOf(res.text), ['type', 'title', 'status', 'detail', 'traceId']);
  });
});
