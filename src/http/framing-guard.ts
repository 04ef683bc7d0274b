// The framing check as every uWS request handler runs it first (the API's catch-all, the hub's
// negotiate and WebSocket upgrade): one place that decides how an ill-framed request is refused.
import type { HttpRequest, HttpResponse } from 'uWebSockets.js';
import { endBounded } from './bounded-end.js';
import { checkFraming, headerLines, uwsClosesAfter, type HeaderLines } from './framing.js';
import { problem } from './problem.js';
import { statusLine } from './status-text.js';

/**
 * When the request's framing is ambiguous, answers it with a problem body and `Connection: close` and
 * returns true; the caller must then leave `res` alone. The answer is written once uWS has parsed the
 * rest of the read the request came in: written at once, uWS would go on to run the requests behind it
 * (a smuggled one among them) and forget the close; left pending, a complete request behind it makes
 * uWS close the connection without running it.
 */
export function refuseIllFramed(res: HttpResponse, req: HttpRequest, lines: HeaderLines = headerLines(req), refused?: (status: number) => void): boolean {
  const query = req.getQuery();
  const error = checkFraming(query ? `${req.getUrl()}?${query}` : req.getUrl(), lines);
  if (!error) return false;
  let aborted = false;
  res.onAborted(() => {
    aborted = true;
  });
  const uwsCloses = uwsClosesAfter(req);
  const body = JSON.stringify(problem(error.status, error.detail));
  setImmediate(() => {
    if (aborted) return;
    res.cork(() => {
      res.writeStatus(statusLine(error.status));
      res.writeHeader('Content-Type', 'application/problem+json');
      res.writeHeader('X-Content-Type-Options', 'nosniff');
      // A forced close: even for HEAD the body goes, since nothing is read after it (bounded-end.ts).
      endBounded(res, body, { status: error.status, close: 'forced', uwsCloses });
    });
    refused?.(error.status);
  });
  return true;
}
