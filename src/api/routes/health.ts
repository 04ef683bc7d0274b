// GET /health: the UIResponseWriter JSON, or the bare
// status word for `Accept: text/plain`, as ASP.NET Core's default writer answers.
import type { HealthCheck } from '../../health/checks.js';
import { httpStatusFor, runHealth } from '../../health/report.js';
import type { Route } from '../../http/router.js';
import { ref } from '../openapi/components.js';

/**
 * Whether `Accept` prefers `text/plain` to `application/json`, by quality (RFC 9110 12.5.1: each type
 * takes the `q` of its most specific range, `*` ranges included). A tie, or an Accept naming neither,
 * gets JSON, the answer without an Accept.
 */
function wantsText(accept: string | undefined): boolean {
  if (!accept) return false;
  const ranges = accept.split(',').map((entry) => {
    const [range = '', ...params] = entry.split(';').map((p) => p.trim().toLowerCase());
    const q = params.find((p) => p.startsWith('q='));
    const quality = q === undefined ? 1 : Number(q.slice(2));
    return { range, quality: Number.isFinite(quality) ? Math.min(Math.max(quality, 0), 1) : 0 };
  });
  const qualityOf = (type: string): number => {
    const [major] = type.split('/');
    let best = { specificity: -1, quality: 0 };
    for (const { range, quality } of ranges) {
      const specificity = range === type ? 2 : range === `${major}/*` ? 1 : range === '*/*' ? 0 : -1;
      if (specificity > best.specificity) best = { specificity, quality };
    }
    return best.quality;
  };
  return qualityOf('text/plain') > qualityOf('application/json');
}

/** The bare status word of the text answer, as ASP.NET Core's default health writer sends it. */
const statusWord = (words: string[]) => ({ type: 'string', enum: words });

/**
 * ASP.NET Core's HealthCheckMiddleware headers (AllowCachingResponses false): Pragma and Expires too, for
 * HTTP/1.0 caches and proxies that ignore Cache-Control and would hand a probe a stale verdict.
 */
const NOT_CACHED = { 'Cache-Control': 'no-store, no-cache', Pragma: 'no-cache', Expires: 'Thu, 01 Jan 1970 00:00:00 GMT' };
/** The answer is chosen by Accept (wantsText): said as RFC 9110 section 12.5.5 asks, for whatever ignores no-store. */
const ANSWER_HEADERS = { ...NOT_CACHED, Vary: 'Accept' };

/** Where the health report is answered (served over plain HTTP even when HTTPS redirects the rest). */
export const HEALTH_PATH = '/health';

export function healthRoutes(checks: Record<string, HealthCheck>): Route[] {
  const handler: Route['handler'] = async ({ request }) => {
    const report = await runHealth(checks);
    const status = httpStatusFor(report);
    const headers = ANSWER_HEADERS;
    if (wantsText(request.headers.accept)) return { status, text: report.status, headers };
    return { status, body: report, contentType: 'application/json; charset=utf-8', headers };
  };
  const common = { path: HEALTH_PATH, tag: 'Health', auth: {}, handler } as const;
  return [
    // ASP.NET Core maps its health endpoint for every method (MapHealthChecks is a Map, not a MapGet): a
    // probe configured with POST or OPTIONS gets the report too, never a 405.
    {
      ...common,
      method: 'GET',
      anyMethod: true,
      operationId: 'health',
      summary: 'Health of voice-service (upstream), database and mqtt; 503 when Unhealthy',
      responses: {
        200: { description: 'Healthy or Degraded (the report; with `Accept: text/plain` preferred, the status word alone)', schema: ref('HealthReport'), alternatives: { 'text/plain': statusWord(['Healthy', 'Degraded']) } },
        503: { description: 'Unhealthy (the report; with `Accept: text/plain` preferred, the status word alone)', schema: ref('HealthReport'), alternatives: { 'text/plain': statusWord(['Unhealthy']) } },
      },
    },
    // Probes that read only the status ask with HEAD (`wget --spider`, `curl -I`, load balancers): the
    // checks run as for GET, and the answer is the GET's status and headers without the body.
    {
      ...common,
      method: 'HEAD',
      operationId: 'healthHead',
      summary: 'The status of GET /health without its body: 200 Healthy or Degraded, 503 Unhealthy',
      responses: {
        200: { description: 'Healthy or Degraded' },
        503: { description: 'Unhealthy' },
      },
    },
  ];
}
