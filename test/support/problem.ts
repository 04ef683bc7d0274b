// Problem details (RFC 9457) as the service answers them: the trace id is random, everything else exact.
import assert from 'node:assert/strict';

const TYPES: Record<number, [string, string]> = {
  400: ['https://tools.ietf.org/html/rfc9110#section-15.5.1', 'Bad Request'],
  401: ['https://tools.ietf.org/html/rfc9110#section-15.5.2', 'Unauthorized'],
  403: ['https://tools.ietf.org/html/rfc9110#section-15.5.4', 'Forbidden'],
  404: ['https://tools.ietf.org/html/rfc9110#section-15.5.5', 'Not Found'],
  405: ['https://tools.ietf.org/html/rfc9110#section-15.5.6', 'Method Not Allowed'],
  409: ['https://tools.ietf.org/html/rfc9110#section-15.5.10', 'Conflict'],
  413: ['https://tools.ietf.org/html/rfc9110#section-15.5.14', 'Content Too Large'],
  415: ['https://tools.ietf.org/html/rfc9110#section-15.5.16', 'Unsupported Media Type'],
  503: ['https://tools.ietf.org/html/rfc9110#section-15.6.4', 'Service Unavailable'],
};

/**
 * Asserts a problem answer: status, media type and the whole body, where `extra` gives `detail`,
 * `errors` or a different `title` (validation problems).
 */
export function assertProblem(
  res: { status: number; headers: Record<string, string>; body: string },
  status: number,
  extra: { detail?: string; title?: string; errors?: Record<string, string[]> } = {},
): void {
  assert.equal(res.status, status, res.body);
  assert.equal(res.headers['content-type'], 'application/problem+json');
  const body = JSON.parse(res.body) as Record<string, unknown>;
  assert.match(String(body.traceId), /^00-[0-9a-f]{32}-[0-9a-f]{16}-0[01]$/);
  const [type, title] = TYPES[status] ?? assert.fail(`no problem type known for ${status}`);
  assert.deepEqual({ ...body, traceId: '' }, { type, title, status, traceId: '', ...extra });
}

/** A `call` result (support/http.ts) in the form assertProblem reads. */
export function answered(res: { status: number; headers: Headers; text: string }): { status: number; headers: Record<string, string>; body: string } {
  return { status: res.status, headers: Object.fromEntries(res.headers), body: res.text };
}
