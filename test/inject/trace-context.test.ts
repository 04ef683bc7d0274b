// A problem's traceId continues the trace of a valid W3C `traceparent`, as ASP.NET Core's does: its
// trace id and sampled flag, a span id of the request's own. Anything malformed is ignored: a new trace.
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import type { InjectResponse } from '../../src/http/inject.js';
import { VALIDATION_TITLE } from '../../src/http/problem.js';
import { assertProblem } from '../support/problem.js';
import { startService, type TestService } from '../support/service.js';

const TRACE = '0af7651916cd43dd8448eb211c80319c';
const PARENT = 'b7ad6b7169203331';

describe('traceparent', () => {
  let svc: TestService;
  before(async () => {
    svc = await startService();
  });
  const traceIdOf = (res: InjectResponse): string => (res.json() as { traceId: string }).traceId;
  const notFound = async (traceparent: string | string[]): Promise<InjectResponse> => {
    const res = await svc.app.inject({ method: 'GET', url: '/api/nothing', headers: { traceparent } });
    assertProblem(res, 404, { detail: 'No route matches GET /api/nothing.' });
    return res;
  };

  it('continues a valid trace with a new span id and its sampled flag, on every kind of problem', async () => {
    const spans = new Set<string>();
    for (const flags of ['01', '00', '03', '02']) {
      const traceparent = `00-${TRACE}-${PARENT}-${flags}`;
      const sampled = flags === '01' || flags === '03' ? '01' : '00';
      const answers = [
        await notFound(traceparent),
        await svc.app.inject({ method: 'GET', url: '/api/device/list', headers: { traceparent } }),
        await svc.app.inject({ method: 'POST', url: '/api/device/register', headers: { traceparent }, body: { deviceId: 'x' } }),
      ];
      assertProblem(answers[1]!, 401, { detail: 'A bearer token is required.' });
      assertProblem(answers[2]!, 400, {
        title: VALIDATION_TITLE,
        detail: 'The request body is invalid.',
        errors: { deviceName: ['The deviceName field is required.'], deviceType: ['The deviceType field is required.'] },
      });
      for (const res of answers) {
        const m = new RegExp(`^00-${TRACE}-([0-9a-f]{16})-${sampled}$`).exec(traceIdOf(res));
        assert.ok(m, `${traceparent}: ${traceIdOf(res)}`);
        assert.notEqual(m[1], PARENT);
        spans.add(m[1]!);
      }
    }
    assert.equal(spans.size, 12, 'each answer has a span of its own');
  });

  it('ignores a malformed traceparent: a new trace', async () => {
    const malformed: Array<string | string[]> = [
      `00-${TRACE.toUpperCase()}-${PARENT}-01`,
      `ff-${TRACE}-${PARENT}-01`,
      `00-${'0'.repeat(32)}-${PARENT}-01`,
      `00-${TRACE}-${'0'.repeat(16)}-01`,
      `00-${TRACE}-${PARENT}-01-extra`,
      `00-${TRACE.slice(1)}-${PARENT}-01`,
      `00-${TRACE}-${PARENT}`,
      // Two header lines, even equal ones.
      [`00-${TRACE}-${PARENT}-01`, `00-${TRACE}-${PARENT}-01`],
      '',
    ];
    for (const traceparent of malformed) {
      const id = traceIdOf(await notFound(traceparent));
      assert.match(id, /^00-[0-9a-f]{32}-[0-9a-f]{16}-00$/, String(traceparent));
      assert.ok(!id.includes(TRACE), `${String(traceparent)}: ${id}`);
    }
  });
});
