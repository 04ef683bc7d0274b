// How the hub's message budgets count a message, written once: the hub's token bucket charges it, its
// close text and log line say it, and the configuration's descriptions of the budgets state it. It
// imports nothing, so configuration can use it without depending on the hub.

/**
 * A message costs a token per 4 KiB begun of it. Decoding costs up to ~150-200 ns a byte for some
 * shapes (an object of thousands of names), so counting messages alone let 64 anonymous ones of
 * 52 KB hold the event loop for most of a second. A device's audio never reaches 4 KiB: the largest
 * 20 ms Opus packet (1,275 B) is 1.7 KB of Base64 in JSON.
 */
export const BYTES_PER_TOKEN = 4096;

/** Tokens a message of `bytes` costs (framing excluded). */
export const messageCost = (bytes: number): number => Math.max(1, Math.ceil(bytes / BYTES_PER_TOKEN));

/** How the budgets count, in the words of the hub's close text, its log and the configuration reference. */
export const PER_TOKEN_TEXT = `a message counting once per ${BYTES_PER_TOKEN / 1024} KiB begun`;
