// Ending a uWS HTTP response without letting a client that does not read make the service hold its
// answers. `res.end()` hands uWS the whole body and uWS keeps what the socket cannot take; a client
// that pipelines thousands of small requests and never reads got every answer kept (measured: 1.1 MB of
// pipelined GETs for the OpenAPI document took the service from 79 MB to 765 MB). `tryEnd` writes only
// what the socket takes now: the rest stays with us, one answer per connection, and goes out as the
// socket drains (onWritable). While an answer waits, the response is unfinished, and uWS refuses to run
// a request pipelined behind an unfinished one: it closes the connection instead (server.ts). Reading is
// not paused meanwhile: this uWS build's pause() stops the socket's writable events too, so an answer
// larger than the kernel took at once (4 MB on loopback, far less over Wi-Fi) stopped there for good.
import type { HttpResponse } from 'uWebSockets.js';

/** How an answer ends besides its body. */
export interface AnswerEnd {
  /** Its status: 204 and 304 have no content, and no Content-Length saying there is some (RFC 9110 sections 8.6, 15.3.5, 15.4.5). */
  readonly status: number;
  /** The request was HEAD: headers only, with the length a GET would get (RFC 9110 section 9.3.2). */
  readonly head?: boolean;
  /** `asked`: the client's Connection header asked to close after this answer; `forced`: the service closes it. */
  readonly close?: 'asked' | 'forced';
  /** uWS closes after this answer by its own reading of the request, and says nothing (framing.ts, uwsClosesAfter). */
  readonly uwsCloses?: boolean;
}

const hasNoContent = (status: number): boolean => status === 204 || status === 304;

/**
 * Whether endBounded closes the connection with this answer. uWS closes only through its own end with
 * a body, which writes a Content-Length (`0` for an empty one) and the body even for HEAD. So an answer
 * without content that the client asked to close is written as on an open connection, with `Connection:
 * close`: uWS closes it by itself when the request's header was a lone `close` (its own reading of
 * it, framing.ts' uwsClosesAfter), and otherwise the client, which asked, closes it (RFC 9112 section
 * 9.6). Only a close the service forces (ambiguous framing, a refused body) takes uWS' closing end
 * whatever it writes: nothing may be read after it.
 */
export function closesWith(end: AnswerEnd): boolean {
  return end.close === 'forced' || (end.close === 'asked' && !end.head && !hasNoContent(end.status));
}

/**
 * Ends the response (its status line and headers already written) with `body`, all of it now or as the
 * socket drains. The answer to a HEAD request has no body: its Content-Length says what a GET would
 * get, and the connection's next answer starts right after the headers.
 */
export function endBounded(res: HttpResponse, body: string | Buffer, end: AnswerEnd): void {
  const size = typeof body === 'string' ? Buffer.byteLength(body) : body.length;
  // Said whenever the connection closes after this answer: uWS' closing end says it only when it did
  // not read the request as a close itself, and an answer without content asked to close is not
  // written with that end (closesWith).
  if (end.uwsCloses || (end.close === 'asked' && !closesWith(end))) res.writeHeader('Connection', 'close');
  // A closing answer is the connection's last: nothing can pile up behind it, nor be read after it.
  if (closesWith(end)) {
    res.end(body, true);
    return;
  }
  if (hasNoContent(end.status)) {
    res.endWithoutBody();
    return;
  }
  if (end.head) {
    // The header by hand: this uWS build's endWithoutBody(length) leaves the response unfinished (uWS
    // then ends the process when the handler returns); without a length it writes none of its own.
    res.writeHeader('Content-Length', String(size));
    res.endWithoutBody();
    return;
  }
  const [, done] = res.tryEnd(body, size);
  if (done) return;
  const rest = typeof body === 'string' ? Buffer.from(body) : body;
  let aborted = false;
  // uWS ends the process when a handler returns leaving a response unfinished without an abort handler;
  // this one replaces the caller's, which had nothing left to do for a response already ended.
  res.onAborted(() => {
    aborted = true;
  });
  res.onWritable((offset) => {
    if (aborted) return true;
    const [ok] = res.tryEnd(rest.subarray(offset), size);
    return ok;
  });
}
