// The /health report: runs the checks side by side and writes the shape of .NET's UIResponseWriter
// (`{status, totalDuration, entries}`, camelCase, TimeSpan text), which health dashboards read.
import { formatTimeSpan } from '../config/timespan.js';
import type { CheckResult, HealthCheck, HealthEntry, HealthStatus } from './checks.js';
import { monotonicMs } from '../monotonic-clock.js';

export interface HealthReport {
  status: HealthStatus;
  totalDuration: string;
  entries: Record<string, HealthEntry>;
}

const RANK: Record<HealthStatus, number> = { Healthy: 0, Degraded: 1, Unhealthy: 2 };

/** The worst of the statuses; Healthy when there are none (as .NET's HealthReport). */
export function worstStatus(statuses: Iterable<HealthStatus>): HealthStatus {
  let worst: HealthStatus = 'Healthy';
  for (const s of statuses) if (RANK[s] > RANK[worst]) worst = s;
  return worst;
}

/** 200 for Healthy and Degraded, 503 for Unhealthy (ASP.NET Core's default ResultStatusCodes). */
export function httpStatusFor(report: HealthReport): 200 | 503 {
  return report.status === 'Unhealthy' ? 503 : 200;
}

export interface RunHealthOptions {
  /** A check still running after this is reported Unhealthy. Default 10 s. */
  timeoutMs?: number;
}

/** Runs every check at once; entries keep the order of `checks`. Never rejects. */
export async function runHealth(checks: Record<string, HealthCheck>, options: RunHealthOptions = {}): Promise<HealthReport> {
  const timeoutMs = options.timeoutMs ?? 10_000;
  const started = monotonicMs();
  const names = Object.keys(checks);
  const entries = await Promise.all(names.map((name) => runOne(checks[name]!, timeoutMs)));
  return {
    status: worstStatus(entries.map((e) => e.status)),
    totalDuration: formatTimeSpan(monotonicMs() - started),
    entries: Object.fromEntries(names.map((name, i) => [name, entries[i]!])),
  };
}

async function runOne(check: HealthCheck, timeoutMs: number): Promise<HealthEntry> {
  const started = monotonicMs();
  let timer: NodeJS.Timeout | undefined;
  let result: CheckResult;
  try {
    const timeout = new Promise<CheckResult>((resolve) => {
      timer = setTimeout(() => {
        const text = `check did not complete within ${timeoutMs} ms`;
        resolve({ status: 'Unhealthy', description: text, exception: text });
      }, timeoutMs);
    });
    result = await Promise.race([Promise.resolve().then(check), timeout]);
  } catch (e) {
    // A check that throws is a failed component, not a failed report.
    const text = e instanceof Error ? e.message || e.name : String(e);
    result = { status: 'Unhealthy', description: text, exception: text };
  } finally {
    clearTimeout(timer);
  }
  // Members in the order the interface lists them: status, description, duration, data, exception (when
  // there is one), tags.
  return {
    status: result.status,
    description: result.description,
    duration: formatTimeSpan(monotonicMs() - started),
    data: result.data ?? {},
    ...(result.exception !== undefined ? { exception: result.exception } : {}),
    // The registration's tags whatever the outcome, a timeout or a throw included.
    tags: [...(result.tags ?? check.tags ?? [])],
  };
}
