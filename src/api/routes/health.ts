// GET /health: the UIResponseWriter JSON, or the bare
// status word for `Accept: text/plain`, as ASP.NET Core's default writer answers.
import type { HealthCheck } from '../../health/checks.js';
import { httpStatusFor, runHealth } from '../../health/report.js';
import type { Route } from '../../http/router.js';
import { ref } from '../openapi/components.js';

function wantsText(accept: string | undefined): boolean {
  if (!accept) return false;
  const types = accept.split(',').map((t) => t.split(';')[0]!.trim().toLowerCase());
  return types.includes('text/plain') && !types.includes('application/json');
}

export function healthRoutes(checks: Record<string, HealthCheck>): Route[] {
  return [
    {
      method: 'GET',
      path: '/health',
      operationId: 'health',
      summary: 'Health of voice-service (upstream), database and mqtt; 503 when Unhealthy',
      tag: 'Health',
      auth: {},
      responses: {
        200: { description: 'Healthy or Degraded', schema: ref('HealthReport') },
        503: { description: 'Unhealthy', schema: ref('HealthReport') },
      },
      handler: async ({ request }) => {
        const report = await runHealth(checks);
        const status = httpStatusFor(report);
        const headers = { 'Cache-Control': 'no-store, no-cache' };
        if (wantsText(request.headers.accept)) return { status, text: report.status, headers };
        return { status, body: report, contentType: 'application/json; charset=utf-8', headers };
      },
    },
  ];
}
