// The trace id of a request's problem answers, as ASP.NET Core makes it (its request Activity's id): a
// request with a valid W3C `traceparent` continues that trace, with a span id of its own; any other gets
// a new trace. So a client's or a proxy's trace leads to the answer and to the log line naming it.
import { randomBytes } from 'node:crypto';
import { newTraceId } from '../errors.js';

/**
 * Version 00's form, and no other length (as .NET reads a parent id); version ff is invalid, and so are
 * an all-zero trace id and parent id (W3C Trace Context, section 3.2).
 */
const TRACEPARENT = /^(?!ff)[0-9a-f]{2}-(?!0{32})([0-9a-f]{32})-(?!0{16})[0-9a-f]{16}-([0-9a-f]{2})$/;

/**
 * `00-<trace id>-<new span id>-<flags>`: the trace id and the sampled flag of a valid `traceparent` (two
 * header lines are joined, and so invalid, as W3C has it), else a new id.
 */
export function traceIdFor(traceparent: string | undefined): string {
  const m = traceparent === undefined ? null : TRACEPARENT.exec(traceparent);
  if (!m) return newTraceId();
  const sampled = (Number.parseInt(m[2]!, 16) & 1) === 1;
  return `00-${m[1]}-${randomBytes(8).toString('hex')}-${sampled ? '01' : '00'}`;
}
