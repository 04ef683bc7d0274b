// What `voice-hub health` prints: the /health report as a table a technician reads at a glance, and
// the exit code for it (0 Healthy, 1 Degraded, 2 Unhealthy, 3 unreachable).
import { parseTimeSpan } from '../config/timespan.js';
import type { HealthStatus } from './checks.js';
import type { HealthReport } from './report.js';

/** 0 Healthy, 1 Degraded, 2 Unhealthy; 3 (service unreachable) is the CLI's own. */
export function exitCodeFor(status: HealthStatus): 0 | 1 | 2 {
  return status === 'Healthy' ? 0 : status === 'Degraded' ? 1 : 2;
}

/** `00:00:00.0123456` -> `12.3 ms`; anything unparsable is shown as it came. */
function readableDuration(text: string): string {
  let ms: number;
  try {
    ms = parseTimeSpan(text);
  } catch {
    return text;
  }
  return ms < 1000 ? `${ms.toFixed(1)} ms` : `${(ms / 1000).toFixed(2)} s`;
}

/** One line per cell: a multi-line error message must not break the table. */
const oneLine = (s: string): string => s.split(/[\r\n]+/).map((part) => part.trim()).filter(Boolean).join(' ');

export function formatHealthTable(report: HealthReport): string {
  const header = ['COMPONENT', 'STATUS', 'DURATION', 'DESCRIPTION'];
  const rows = Object.entries(report.entries).map(([name, e]) => [
    name,
    e.status,
    readableDuration(e.duration),
    // The exception is shown only when it adds something to the description.
    oneLine(e.exception && e.exception !== e.description ? `${e.description} (${e.exception})` : e.description),
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]): string =>
    cells.map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]!))).join('  ').trimEnd();
  return [
    `Overall: ${report.status} (${readableDuration(report.totalDuration)})`,
    '',
    line(header),
    ...rows.map(line),
    '',
  ].join('\n');
}
