// The times a session is dated with (its record's startTime and endTime, the `started` and `ended`
// events MQTT publishes) come from the wall clock, which NTP may set back while a session runs or
// between a crash and the next start: a Pi without a real-time clock boots at the time it saved at
// shutdown, or at 1970. A session dated as ending before it started, or an `ended` event older than its
// `started`, is a negative duration to whoever subtracts them; the clock is known to be wrong then, and
// the latest time the session was dated with is the nearest to the truth that is known.

/** `now`, or the instant `earliest` (ISO 8601, or ms since the epoch) when `now` is before it. */
export function notBefore(now: Date, earliest: string | number): Date {
  const floor = typeof earliest === 'number' ? earliest : Date.parse(earliest);
  return now.getTime() < floor ? new Date(floor) : now;
}
