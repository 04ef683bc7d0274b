// What the command-line tools read from whatever answers at the address they were given: `health`, the
// simulator's API requests and its SignalR negotiate. The far end may be another program on the port, a
// proxy or a hostile host, so an answer is read up to a bound and the connection dropped past it; fetch's
// own text() and arrayBuffer() would hold all of it, however large.

/** voice-hub's answers to the tools are a few KB (a health report under 2 KB, a device's registration). */
export const MAX_ANSWER_BYTES = 1024 * 1024;

export type BoundedAnswer = { bytes: Buffer } | { tooLarge: true } | { failed: unknown };

/**
 * The body of `res`, or that it is larger than `limit` (then `stop`, the request's controller, is
 * aborted, which drops the connection), or the error that broke it off.
 */
export async function readAtMost(res: Response, stop: AbortController, limit = MAX_ANSWER_BYTES): Promise<BoundedAnswer> {
  if (Number(res.headers.get('content-length')) > limit) {
    stop.abort();
    return { tooLarge: true };
  }
  if (!res.body) return { bytes: Buffer.alloc(0) };
  const reader = res.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      size += value.byteLength;
      if (size > limit) {
        stop.abort();
        return { tooLarge: true };
      }
      chunks.push(value);
    }
  } catch (e) {
    return { failed: e };
  }
  return { bytes: Buffer.concat(chunks) };
}

/** The sentence a tool prints for an answer over the bound. */
export const tooLargeText = (what: string, limit = MAX_ANSWER_BYTES): string =>
  `${what} answered with more than ${limit / 1024 / 1024} MiB, far more than voice-hub sends: stopped reading`;
