// Trimming a set of characters from the ends of a text by scanning, never by a pattern such as
// /^[ \t]+|[ \t]+$/g or /\/+$/: an unanchored pattern retries its run from every position inside a long
// run of those characters, which is quadratic; a 32 KiB header of blanks cost the event loop seconds.

/** `value` without the characters of `set` at its start (unless `start` is false) and at its end. */
export function stripEnds(value: string, set: string, start = true): string {
  let from = 0;
  let to = value.length;
  if (start) while (from < to && set.includes(value[from]!)) from++;
  while (to > from && set.includes(value[to - 1]!)) to--;
  return from === 0 && to === value.length ? value : value.slice(from, to);
}

/**
 * A header field value without the optional whitespace (RFC 9110 section 5.6.3: SP and HTAB) at its
 * ends, which is not part of it and which uWS passes through.
 */
export const trimOws = (value: string): string => stripEnds(value, ' \t');
