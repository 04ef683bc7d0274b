// The HTTP API on uWebSockets.js: one catch-all handler that copies the request, checks its framing,
// matches the route table, authenticates, reads and validates the body, runs the handler and writes
// the reply. uWS rules live here: copy everything out of `req` synchronously, register onAborted
// before any await, cork writes that happen after an await.
//
// Keep-alive and pipelining, as uWS does them: it parses every complete request one read brought and
// calls the next handler only once the previous response is written; when a complete request follows
// an unanswered one in the same read, it closes the connection without calling us. Hence:
// - an answer written before the handler's promise jobs run out keeps the connection pipelining;
// - once an answer waits for I/O, reading is paused, so a request sent behind it waits in the kernel
//   rather than in uWS's parser, and reading resumes as the answer is written;
// - a request that changes something (any method but GET) runs only after uWS has finished the read
//   it came in: if uWS closed the connection meanwhile, it never runs, so no effect is applied that
//   the client was not answered for;
// - an answer that closes the connection (ill-framed requests, see framing-guard.ts; a 413) is written
//   after that read too: written at once, uWS would still run the requests behind it (a smuggled one
//   among them) and forget the close.
import { STATUS_CODES } from 'node:http';
import type { HttpRequest, HttpResponse, TemplatedApp, us_listen_socket } from 'uWebSockets.js';
import { DomainError, errorText, isDomainError } from '../errors.js';
import type { Logger } from '../log/logger.js';
import type { Uws } from './uws-native.js';
import { authenticate, apiKeyAccepted, INVALID_API_KEY, type AuthDeps } from './auth.js';
import { isJsonContentType, readBody, type ResponseState } from './body.js';
import { headerLines, joinHeaderLines, type HeaderLines } from './framing.js';
import { refuseIllFramed } from './framing-guard.js';
import type { RequestGate } from './gate.js';
import { problem, problemFromError } from './problem.js';
import type { Reply, RequestInfo, Router } from './router.js';
import { validateBody } from './schemas.js';

export interface HttpApiOptions {
  router: Router;
  maxBodyBytes: number;
  auth: AuthDeps;
  logger: Logger;
  /** Per-request access log (category `Microsoft.AspNetCore`, as ASP.NET names its own). */
  accessLog: Logger;
  /** True on the TLS listener: `RequestInfo.secure`, hub URLs with `wss://`, no HTTPS redirect. */
  secure?: boolean;
  /** Host filtering and the HTTPS redirect, before any routing. */
  gate?: RequestGate;
}

const statusLine = (status: number): string => `${status} ${STATUS_CODES[status] ?? 'Unknown'}`;

export function copyRequest(req: HttpRequest, secure: boolean, lines: HeaderLines): RequestInfo {
  return { method: req.getMethod().toUpperCase(), path: req.getUrl(), query: req.getQuery() ?? '', headers: joinHeaderLines(lines), secure };
}

/** Resolves once uWS has parsed all of the read the current request came in (libuv's check phase). */
const afterThisRead = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** Stops reading further requests from the connection until this response is written. */
function pauseReading(res: HttpResponse, state: ResponseState): void {
  if (state.aborted || state.done || state.paused) return;
  state.paused = true;
  res.pause();
}

export function writeReply(res: HttpResponse, state: ResponseState, reply: Reply, closeConnection = false): void {
  if (state.aborted || state.done) return;
  state.done = true;
  let payload: string | Buffer;
  let type: string;
  if (reply.text !== undefined) {
    payload = reply.text;
    type = reply.contentType ?? 'text/plain; charset=utf-8';
  } else if (reply.body !== undefined) {
    payload = JSON.stringify(reply.body);
    type = reply.contentType ?? (reply.status >= 400 ? 'application/problem+json' : 'application/json; charset=utf-8');
  } else {
    payload = '';
    type = '';
  }
  res.cork(() => {
    // Reading resumes with the answer on the wire, unless the connection is closing anyway.
    if (state.paused && !closeConnection) res.resume();
    state.paused = false;
    res.writeStatus(statusLine(reply.status));
    if (type) res.writeHeader('Content-Type', type);
    res.writeHeader('X-Content-Type-Options', 'nosniff');
    for (const [k, v] of Object.entries(reply.headers ?? {})) res.writeHeader(k, v);
    res.end(payload, closeConnection);
  });
}

function errorReply(e: unknown, logger: Logger, req: RequestInfo): Reply {
  if (isDomainError(e)) {
    const reply: Reply = { status: 0, body: problemFromError(e) };
    reply.status = (reply.body as { status: number }).status;
    if (reply.status === 401) reply.headers = { 'WWW-Authenticate': 'Bearer' };
    return reply;
  }
  // A bug, not bad input: log it with the stack, answer a generic 500 without internals.
  logger.error(`unhandled error in ${req.method} ${req.path}: ${e instanceof Error ? (e.stack ?? e.message) : errorText(e)}`);
  return { status: 500, body: problem(500) };
}

export function mountHttpApi(app: TemplatedApp, opts: HttpApiOptions): void {
  const { router, logger } = opts;
  const secure = opts.secure ?? false;
  app.any('/*', (res, req) => {
    const started = performance.now();
    const lines = headerLines(req);
    const request = copyRequest(req, secure, lines);
    const logged = (status: number): void => {
      if (opts.accessLog.enabled('Information')) {
        opts.accessLog.info(`${request.method} ${request.path} ${status} ${(performance.now() - started).toFixed(1)}ms`);
      }
    };
    if (refuseIllFramed(res, req, lines, logged)) return;
    const state: ResponseState = { aborted: false, done: false, paused: false };
    res.onAborted(() => {
      state.aborted = true;
    });
    const send = (reply: Reply): void => {
      writeReply(res, state, reply);
      logged(reply.status);
    };
    // Like a refused framing (see framing-guard.ts): written after the read, so nothing behind it runs.
    const sendAndClose = (reply: Reply): void => {
      setImmediate(() => {
        writeReply(res, state, reply, true);
        logged(reply.status);
      });
    };

    const refusal = opts.gate?.({
      host: request.headers.host ?? '',
      path: request.path,
      query: request.query,
      secure,
      forwardedProto: request.headers['x-forwarded-proto'] ?? '',
    });
    if (refusal) return send({ status: refusal.status, headers: { ...refusal.headers }, ...(refusal.text ? { text: refusal.text } : {}) });

    const match = router.match(request.method, request.path);
    if (match.kind === 'not_found') return send({ status: 404, body: problem(404, `No route matches ${request.method} ${request.path}.`) });
    if (match.kind === 'bad_path') return send({ status: 400, body: problem(400, 'The request path is not valid percent-encoding.') });
    if (match.kind === 'method_not_allowed') {
      return send({ status: 405, body: problem(405, `Method ${request.method} is not allowed here.`), headers: { Allow: match.allow.join(', ') } });
    }
    const { route, params } = match;
    if (route.auth.apiKey && !apiKeyAccepted(request.headers['x-api-key'], opts.auth.apiKeys)) {
      return send({ status: 401, text: INVALID_API_KEY });
    }

    let body: Promise<Buffer> | undefined;
    if (route.body) {
      const type = request.headers['content-type'];
      if (!type || !isJsonContentType(type)) {
        return send({ status: 415, body: problem(415, 'The request body must be JSON (Content-Type: application/json).') });
      }
      // Framing was checked above: the length, when given, is plain digits.
      const lengthHeader = request.headers['content-length'];
      const declared = lengthHeader !== undefined ? Number(lengthHeader.trim()) : undefined;
      if (declared === undefined && !request.headers['transfer-encoding']) body = Promise.resolve(Buffer.alloc(0));
      else body = readBody(res, state, declared, opts.maxBodyBytes);
      // Observed below; this keeps an early rejection from being reported as unhandled.
      body.catch(() => {});
    }

    void (async () => {
      try {
        const principal = await authenticate(request.headers, route.auth, opts.auth);
        let parsed: unknown;
        if (body && route.body) {
          const bytes = await body;
          if (bytes.length === 0) throw new DomainError('invalid_argument', 'A request body is required.', { $: ['A non-empty request body is required.'] });
          try {
            parsed = JSON.parse(bytes.toString('utf8'));
          } catch (e) {
            throw new DomainError('invalid_argument', 'The request body is not valid JSON.', { $: [errorText(e)] });
          }
          validateBody(route.body, parsed);
        }
        // The request is read to its end: whatever the client sends next waits until this is answered.
        pauseReading(res, state);
        if (route.method !== 'GET') await afterThisRead();
        if (state.aborted) {
          logger.debug(`${request.method} ${request.path} not run: the connection closed before it could be answered`);
          return;
        }
        const reply = await route.handler({ request, params, body: parsed, principal });
        send(reply);
      } catch (e) {
        const reply = errorReply(e, logger, request);
        // After a 413 the rest of the body is still on the wire: close rather than read it.
        if (reply.status === 413) sendAndClose(reply);
        else send(reply);
      }
    })();
  });
}

export interface Listening {
  readonly port: number;
  close(): void;
}

export function listen(uws: Uws, app: TemplatedApp, host: string, port: number): Promise<Listening> {
  return new Promise((resolve, reject) => {
    // Exclusive: by default uWS sets SO_REUSEPORT, and a second voice-hub on the same port would start
    // without a word while the kernel split connections between two processes and two databases.
    // The addon exports the flag by name; its typings lack the (host, port, options, cb) overload.
    const exclusive = (uws as unknown as { LIBUS_LISTEN_EXCLUSIVE_PORT?: number }).LIBUS_LISTEN_EXCLUSIVE_PORT;
    if (typeof exclusive !== 'number') {
      reject(new Error('the uWebSockets.js addon has no LIBUS_LISTEN_EXCLUSIVE_PORT: it cannot listen exclusively'));
      return;
    }
    const listenWithOptions = app.listen as unknown as (h: string, p: number, options: number, cb: (s: us_listen_socket | false) => void) => TemplatedApp;
    listenWithOptions.call(app, host, port, exclusive, (socket: us_listen_socket | false) => {
      if (!socket) {
        reject(new Error(`cannot listen on ${host}:${port} (address in use or not available)`));
        return;
      }
      let open = true;
      resolve({
        port: uws.us_socket_local_port(socket as unknown as Parameters<Uws['us_socket_local_port']>[0]),
        close: () => {
          if (open) uws.us_listen_socket_close(socket);
          open = false;
        },
      });
    });
  });
}
