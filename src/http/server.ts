// The HTTP API on uWebSockets.js: a thin adapter that copies each request out of uWS and runs the
// transport-free pipeline (pipeline.ts) over it. uWS rules live here: copy everything out of `req`
// synchronously, register onAborted before any await, cork writes that happen after an await.
//
// Keep-alive and pipelining, as uWS does them: it parses every complete request one read brought and
// calls the next handler only once the previous response is written; when a complete request follows
// an unanswered one in the same read, it closes the connection without calling us. Hence:
// - an answer written before the handler's promise jobs run out keeps the connection pipelining;
// - once an answer waits for I/O, reading is paused, so a request sent behind it waits in the kernel
//   rather than in uWS's parser, and reading resumes as the answer is written. Whether it waits is
//   decided once per event-loop turn, after every handler started in it has run its promise jobs
//   (libuv's check phase, before the next read): pausing every request up front cost 40 % of the
//   API's CPU (two poll changes per request), and most answers are written before that point;
// - a request that changes something (any method but GET and HEAD) runs only after uWS has finished the read
//   it came in: if uWS closed the connection meanwhile, it never runs, so no effect is applied that
//   the client was not answered for;
// - an answer that closes the connection (ill-framed requests; a 413) is written after that read too:
//   written at once, uWS would still run the requests behind it (a smuggled one among them) and forget
//   the close.
import type { HttpRequest, HttpResponse, TemplatedApp, us_listen_socket } from 'uWebSockets.js';
import type { Uws } from './uws-native.js';
import { readBody, type ResponseState } from './body.js';
import { closesWith, endBounded, type AnswerEnd } from './bounded-end.js';
import { headerLines, uwsClosesAfter } from './framing.js';
import type { HttpExchange, HttpPipeline, IncomingRequest, RenderedReply } from './pipeline.js';
import type { InFlightRequests } from './in-flight.js';
import { takenByDottedPathRoute } from './dotted-paths.js';
import { mayHaveDotSegments } from './route-path.js';

function copyRequest(req: HttpRequest, secure: boolean): IncomingRequest {
  return { method: req.getMethod().toUpperCase(), path: req.getUrl(), query: req.getQuery() ?? '', lines: headerLines(req), secure };
}

/**
 * Resolves once uWS has parsed all of the read the current request came in (libuv's check phase). One
 * immediate serves every request dispatched before it runs: they all came in reads of this poll phase,
 * and an immediate for each (with the pause check queued anew behind it) cost a status update 13 % more CPU.
 */
let endOfRead: Promise<void> | undefined;

const queueEndOfRead = (): Promise<void> =>
  new Promise((resolve) =>
    setImmediate(() => {
      endOfRead = undefined;
      resolve();
    }),
  );

/** Stops reading further requests from the connection until this response is written. */
function pauseReading(res: HttpResponse, state: ResponseState): void {
  if (state.aborted || state.done || state.paused) return;
  state.paused = true;
  res.pause();
}

/** Responses started in this event-loop turn, to pause the ones still unanswered at its end. */
const startedThisTurn: Array<readonly [HttpResponse, ResponseState]> = [];
let endOfTurn: NodeJS.Immediate | undefined;

function pauseUnanswered(): void {
  endOfTurn = undefined;
  for (const [res, state] of startedThisTurn) pauseReading(res, state);
  startedThisTurn.length = 0;
}

/**
 * Pauses the connection at the end of this turn unless answered by then. `last`: an immediate was just
 * queued that requests wait for (endOfRead); the check must come after it, so the pending check is
 * queued anew behind it.
 */
function pauseIfUnansweredThisTurn(res: HttpResponse, state: ResponseState, last: boolean): void {
  startedThisTurn.push([res, state]);
  if (endOfTurn && last) {
    clearImmediate(endOfTurn);
    endOfTurn = undefined;
  }
  endOfTurn ??= setImmediate(pauseUnanswered);
}

/** `uwsCloses`: uWS closes after this answer by its own reading of the request (AnswerEnd). */
function writeReply(res: HttpResponse, state: ResponseState, head: boolean, uwsCloses: boolean, reply: RenderedReply, close?: AnswerEnd['close']): void {
  if (state.aborted || state.done) return;
  state.done = true;
  state.inFlight?.end();
  const end: AnswerEnd = { status: reply.status, head, close, uwsCloses };
  res.cork(() => {
    // Reading resumes with the answer on the wire, unless the connection is closing anyway.
    if (state.paused && !closesWith(end)) res.resume();
    state.paused = false;
    res.writeStatus(reply.statusLine);
    for (const [k, v] of reply.headers) res.writeHeader(k, v);
    endBounded(res, reply.payload, end);
  });
}

/** The exchange over one uWS response: body from onData, pausing and the after-the-read rules. */
function uwsExchange(res: HttpResponse, state: ResponseState, head: boolean, uwsCloses: boolean): HttpExchange {
  return {
    readBody: (maxBytes) => readBody(res, state, maxBytes),
    readyToRun: (method) => {
      // The request is read to its end: whatever the client sends next waits until this is answered.
      if (method === 'GET' || method === 'HEAD') {
        pauseIfUnansweredThisTurn(res, state, false);
        return !state.aborted;
      }
      const queued = endOfRead === undefined;
      const readDone = (endOfRead ??= queueEndOfRead());
      pauseIfUnansweredThisTurn(res, state, queued);
      return readDone.then(() => !state.aborted);
    },
    send: (reply, after, written) => {
      if (after !== 'close') {
        writeReply(res, state, head, uwsCloses, reply, after === 'close-as-asked' ? 'asked' : undefined);
        written();
        return;
      }
      // Written once uWS has parsed the rest of this read, so nothing behind it runs (see above).
      setImmediate(() => {
        writeReply(res, state, head, uwsCloses, reply, 'forced');
        written();
      });
    },
  };
}

/** `secure`: this is the TLS listener (hub URLs with `wss://`, no HTTPS redirect). */
export function mountHttpApi(app: TemplatedApp, pipeline: HttpPipeline, secure: boolean, inFlight: InFlightRequests): void {
  app.any('/*', (res, req) => {
    const request = copyRequest(req, secure);
    if (mayHaveDotSegments(request.path) && takenByDottedPathRoute(app, res, req)) return;
    inFlight.begin();
    const state: ResponseState = { aborted: false, done: false, paused: false, inFlight };
    res.onAborted(() => {
      // A response already written (a large one still draining) was counted out then.
      if (!state.done) inFlight.end();
      state.aborted = true;
    });
    pipeline(request, uwsExchange(res, state, request.method === 'HEAD', uwsClosesAfter(req)));
  });
}

export interface Listening {
  readonly port: number;
  /** Stops accepting for good. */
  close(): void;
  /** Stops accepting until resume(): the listening socket is closed, so the kernel refuses new connections. */
  pause(): void;
  /** Accepts again on the same address and port; false (and still paused) when that cannot be listened on now. */
  resume(): Promise<boolean>;
}

type ListenSocket = Parameters<Uws['us_socket_local_port']>[0];

/** Listens on `host`:`port` (0: a port the system picks) exclusively; resolves with the socket, or false. */
function listenSocket(uws: Uws, app: TemplatedApp, host: string, port: number): Promise<ListenSocket | false> {
  // Exclusive: by default uWS sets SO_REUSEPORT, and a second voice-hub on the same port would start
  // without a word while the kernel split connections between two processes and two databases.
  // The addon exports the flag by name; its typings lack the (host, port, options, cb) overload.
  const exclusive = (uws as unknown as { LIBUS_LISTEN_EXCLUSIVE_PORT?: number }).LIBUS_LISTEN_EXCLUSIVE_PORT;
  if (typeof exclusive !== 'number') {
    return Promise.reject(new Error('the uWebSockets.js addon has no LIBUS_LISTEN_EXCLUSIVE_PORT: it cannot listen exclusively'));
  }
  const listenWithOptions = app.listen as unknown as (h: string, p: number, options: number, cb: (s: us_listen_socket | false) => void) => TemplatedApp;
  return new Promise((resolve) => {
    listenWithOptions.call(app, host, port, exclusive, (socket: us_listen_socket | false) => resolve(socket ? (socket as unknown as ListenSocket) : false));
  });
}

export async function listen(uws: Uws, app: TemplatedApp, host: string, port: number): Promise<Listening> {
  const first = await listenSocket(uws, app, host, port);
  if (!first) throw new Error(`cannot listen on ${host}:${port} (address in use or not available)`);
  let socket: ListenSocket | undefined = first;
  let closed = false;
  const bound = uws.us_socket_local_port(first);
  const release = (): void => {
    if (socket) uws.us_listen_socket_close(socket as unknown as us_listen_socket);
    socket = undefined;
  };
  return {
    port: bound,
    close: () => {
      closed = true;
      release();
    },
    pause: release,
    resume: async () => {
      if (closed) return false;
      if (socket) return true;
      const again = await listenSocket(uws, app, host, bound);
      if (!again) return false;
      // Closed while the listen was under way: let the new socket go at once.
      if (closed) uws.us_listen_socket_close(again as unknown as us_listen_socket);
      else socket = again;
      return !closed;
    },
  };
}
