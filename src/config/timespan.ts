// .NET TimeSpan text <-> milliseconds. Configuration time spans are written as in appsettings.json
// (`hh:mm:ss`, `d.hh:mm:ss`, optional `.fffffff`), and /health reports durations in the invariant
// "c" format (`[-][d.]hh:mm:ss[.fffffff]`) that .NET health-check dashboards read.

const TICKS_PER_MS = 10_000;
const TICKS_PER_SECOND = 10_000_000;
const TICKS_PER_MINUTE = 60 * TICKS_PER_SECOND;
const TICKS_PER_HOUR = 60 * TICKS_PER_MINUTE;
const TICKS_PER_DAY = 24 * TICKS_PER_HOUR;

// Seconds are required: "05:00" would read as five hours in .NET, a classic surprise, so it is refused.
const TIME_SPAN_SYNTAX = String.raw`(-)?(?:(\d{1,8})\.)?(\d{1,9}):(\d{1,2}):(\d{1,2})(?:\.(\d{1,7}))?`;
const TIME_SPAN = new RegExp(`^${TIME_SPAN_SYNTAX}$`);
/**
 * The texts parseTimeSpan reads (white space around them included) as a JSON Schema pattern: the OpenAPI
 * document shows it beside `x-timespan`, which no generic validator knows, so that a client's own check
 * refuses what the service would refuse for its form. Ranges (minutes up to 59, the bounds) stay in words.
 */
export const TIME_SPAN_PATTERN = String.raw`^\s*` + TIME_SPAN_SYNTAX + String.raw`\s*$`;

/** The expected shapes, for error messages. */
export const TIME_SPAN_FORMATS = 'hh:mm:ss or d.hh:mm:ss (optionally .fffffff)';

/**
 * Parses `hh:mm:ss`, `d.hh:mm:ss` and either with a fraction of up to 7 digits; returns milliseconds
 * (fractional below 1 ms, to the 100 ns tick). `24:00:00` is 24 hours: in the form without days the
 * hours may exceed 23. Throws on anything else.
 */
export function parseTimeSpan(text: string): number {
  const m = TIME_SPAN.exec(text.trim());
  if (!m) throw new Error(`invalid time span '${text}': use ${TIME_SPAN_FORMATS}`);
  const [, minus, days, hours, minutes, seconds, fraction] = m;
  const d = days === undefined ? 0 : Number(days);
  const h = Number(hours);
  const min = Number(minutes);
  const s = Number(seconds);
  if ((days !== undefined && h > 23) || min > 59 || s > 59) {
    throw new Error(`invalid time span '${text}': hours 0-23 after days, minutes and seconds 0-59`);
  }
  const ticks =
    d * TICKS_PER_DAY + h * TICKS_PER_HOUR + min * TICKS_PER_MINUTE + s * TICKS_PER_SECOND +
    (fraction === undefined ? 0 : Number(fraction.padEnd(7, '0')));
  if (!Number.isSafeInteger(ticks)) throw new Error(`invalid time span '${text}': too large`);
  const ms = ticks / TICKS_PER_MS;
  return minus && ms !== 0 ? -ms : ms;
}

/** .NET "c" format: `hh:mm:ss`, `d.hh:mm:ss`, `.fffffff` only when there is a fraction of a second. */
export function formatTimeSpan(ms: number): string {
  if (!Number.isFinite(ms)) throw new Error(`cannot format ${ms} as a time span`);
  let ticks = Math.round(Math.abs(ms) * TICKS_PER_MS);
  const sign = ms < 0 && ticks !== 0 ? '-' : '';
  const days = Math.floor(ticks / TICKS_PER_DAY);
  ticks -= days * TICKS_PER_DAY;
  const hours = Math.floor(ticks / TICKS_PER_HOUR);
  ticks -= hours * TICKS_PER_HOUR;
  const minutes = Math.floor(ticks / TICKS_PER_MINUTE);
  ticks -= minutes * TICKS_PER_MINUTE;
  const seconds = Math.floor(ticks / TICKS_PER_SECOND);
  ticks -= seconds * TICKS_PER_SECOND;
  const two = (n: number): string => String(n).padStart(2, '0');
  return (
    sign + (days > 0 ? `${days}.` : '') + `${two(hours)}:${two(minutes)}:${two(seconds)}` +
    (ticks > 0 ? `.${String(ticks).padStart(7, '0')}` : '')
  );
}
