// How a time span reads in log lines and in the reasons and descriptions built like them, in one place:
// under a second in milliseconds ("250 ms", where seconds would read "0 s" or "0.3 s"), then in seconds
// with fewer decimals the longer the span ("1.25 s", "12.5 s", "90 s").

/** `ms` (a measured span may be fractional) as text: "250 ms", "1.25 s", "12.5 s", "90 s". */
export function durationText(ms: number): string {
  if (ms < 999.5) return `${Math.max(0, Math.round(ms))} ms`;
  const decimals = ms < 10_000 ? 2 : ms < 60_000 ? 1 : 0;
  return `${Number((ms / 1000).toFixed(decimals))} s`;
}
