// GET /health answers the report as JSON, or the status word alone when the request's Accept prefers
// text/plain to application/json by quality (ranges and q-values as RFC 9110 weighs them).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { healthRoutes } from '../../src/api/routes/health.js';

const route = healthRoutes({ database: async () => ({ status: 'Healthy', description: 'ok' }) })[0]!;
const answer = async (accept: string | undefined) => {
  const reply = (await route.handler({ request: { headers: accept === undefined ? {} : { accept } } } as never)) as { status: number; text?: string; body?: unknown };
  return reply.text !== undefined ? `text:${reply.text}` : `json:${(reply.body as { status: string }).status}`;
};

describe('GET /health content negotiation', () => {
  const cases: [string | undefined, string][] = [
    [undefined, 'json:Healthy'],
    ['', 'json:Healthy'],
    ['*/*', 'json:Healthy'],
    ['application/json', 'json:Healthy'],
    ['text/plain', 'text:Healthy'],
    ['TEXT/PLAIN; charset=utf-8', 'text:Healthy'],
    ['text/*', 'text:Healthy'],
    ['text/plain, application/json', 'json:Healthy'],
    ['application/json;q=0.5, text/plain', 'text:Healthy'],
    ['application/json; q=0.9, text/plain; q=0.8', 'json:Healthy'],
    ['text/plain;q=0, */*', 'json:Healthy'],
    ['text/html, text/*;q=0.9, */*;q=0.1', 'text:Healthy'],
    ['text/plain;q=0.5, */*;q=0.5', 'json:Healthy'],
    ['text/plain;q=abc', 'json:Healthy'],
    ['image/png', 'json:Healthy'],
  ];
  for (const [accept, expected] of cases) {
    it(`Accept: ${accept === undefined ? '(none)' : JSON.stringify(accept)} -> ${expected}`, async () => {
      assert.equal(await answer(accept), expected);
    });
  }
});
