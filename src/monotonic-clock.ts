// The program's one monotonic clock, in milliseconds from an arbitrary origin: durations, timeouts and
// rates, never a time of day. Not Node's `performance` global: its first use loads perf_hooks and eight
// internal modules with it, which then stay in every service (0.3 MiB of an idle service's RSS) for
// nothing the program uses them for.
export function monotonicMs(): number {
  const [seconds, nanoseconds] = process.hrtime();
  return seconds * 1e3 + nanoseconds / 1e6;
}
