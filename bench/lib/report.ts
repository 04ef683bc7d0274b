// What a benchmark section produces (rows: a figure, its baseline from the same run, a target), the
// percentile helper, and the printed table.

export interface Figure {
  value: number;
  unit: string;
}

export interface Row {
  section: string;
  name: string;
  value: number;
  unit: string;
  /** The same kind of figure for the baseline, measured in this run. */
  baseline?: Figure & { name: string };
  /** value / baseline.value, or the figure the target is about when it is not the value itself. */
  ratio?: number;
  target?: { text: string; pass: boolean };
  /** Anything else worth keeping in the JSON (latencies, counts, CPU seconds). */
  detail?: Record<string, unknown>;
  note?: string;
}

/** p in [0, 100]; nearest-rank on a sorted copy. NaN for no samples. */
export function percentile(samples: ArrayLike<number>, p: number): number {
  if (samples.length === 0) return NaN;
  const sorted = Float64Array.from(samples).sort();
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank]!;
}

export function latencySummary(samplesMs: ArrayLike<number>): { p50: number; p99: number; max: number; count: number } {
  return {
    p50: percentile(samplesMs, 50),
    p99: percentile(samplesMs, 99),
    max: percentile(samplesMs, 100),
    count: samplesMs.length,
  };
}

export function fmt(value: number, unit = ''): string {
  if (!Number.isFinite(value)) return '-';
  const abs = Math.abs(value);
  let text: string;
  if (unit === 'B' || unit === 'B/conn' || unit === 'B/session' || unit === 'B/update') {
    if (abs >= 1024 * 1024) return `${(value / 1024 / 1024).toFixed(1)} MiB${unit.slice(1)}`;
    if (abs >= 1024) return `${(value / 1024).toFixed(1)} KiB${unit.slice(1)}`;
    return `${Math.round(value)} B${unit.slice(1)}`;
  }
  if (abs >= 1000) text = Math.round(value).toLocaleString('en-US');
  else if (Number.isInteger(value)) text = String(value);
  else if (abs >= 100) text = value.toFixed(0);
  else if (abs >= 10) text = value.toFixed(1);
  else text = value.toFixed(2);
  return unit ? `${text} ${unit}` : text;
}

const pad = (s: string, n: number): string => s + ' '.repeat(Math.max(0, n - s.length));

export function renderTable(rows: readonly Row[]): string {
  const header = ['#', 'measurement', 'value', 'baseline (same run)', 'ratio', 'target', 'result'];
  const lines = rows.map((r) => [
    r.section,
    r.name,
    fmt(r.value, r.unit),
    r.baseline ? `${fmt(r.baseline.value, r.baseline.unit)} ${r.baseline.name}` : '',
    r.ratio !== undefined && Number.isFinite(r.ratio) ? `${r.ratio.toFixed(2)}x` : '',
    r.target?.text ?? '',
    r.target ? (r.target.pass ? 'PASS' : 'FAIL') : '',
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i]!.length)));
  const row = (cells: string[]): string => `| ${cells.map((c, i) => pad(c, widths[i]!)).join(' | ')} |`;
  return [row(header), `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...lines.map(row)].join('\n');
}

export function renderNotes(rows: readonly Row[]): string {
  return rows
    .filter((r) => r.note)
    .map((r) => `- ${r.section} ${r.name}: ${r.note}`)
    .join('\n');
}
