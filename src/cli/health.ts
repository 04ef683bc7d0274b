// `voice-hub health [--url]`: asks a running service for /health and prints it as a table.
// Exit codes: 0 Healthy, 1 Degraded, 2 Unhealthy, 3 the service could not be reached or answered nonsense.
import type { HealthReport } from '../health/report.js';
import { exitCodeFor, formatHealthTable } from '../health/table.js';
import { stripEnds } from '../trim.js';

export const EXIT_UNREACHABLE = 3;

export async function healthCommand(url: string, timeoutMs = 15_000): Promise<{ code: number; text: string }> {
  let res: Response;
  try {
    res = await fetch(url, { headers: { accept: 'application/json' }, signal: AbortSignal.timeout(timeoutMs) });
  } catch (e) {
    const cause = (e as { cause?: { message?: string } }).cause?.message ?? (e instanceof Error ? e.message : String(e));
    return { code: EXIT_UNREACHABLE, text: `voice-hub is not reachable at ${url}: ${cause}\n` };
  }
  let report: HealthReport;
  try {
    report = (await res.json()) as HealthReport;
    if (!report || typeof report.status !== 'string' || typeof report.entries !== 'object') throw new Error('not a health report');
  } catch {
    return { code: EXIT_UNREACHABLE, text: `${url} answered HTTP ${res.status} without a health report\n` };
  }
  return { code: exitCodeFor(report.status), text: formatHealthTable(report) };
}

/**
 * The /health address for `--url`, which takes the service's address as simulate's does
 * (`http://host:5000`, with or without the slash, or under a reverse proxy's prefix) or the full
 * health address (`http://host:5000/health`). `given` is an http(s) URL.
 */
export function healthUrlFrom(given: string): string {
  const url = new URL(given);
  const path = stripEnds(url.pathname, '/', false);
  url.pathname = /\/health$/i.test(path) ? path : `${path}/health`;
  return url.href;
}

/** The local service's /health address from its configuration. */
export function localHealthUrl(host: string, port: number): string {
  const h = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host.includes(':') ? `[${host}]` : host;
  return `http://${h}:${port}/health`;
}
