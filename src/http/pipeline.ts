// The HTTP API's request pipeline, free of any socket: framing checks, the host gate, routing,
// authentication (API key, bearer token), the body's type, size, syntax and schema, the handler and
// the problem answers. A transport hands it a copied request and an `HttpExchange` (how to read the body,
// when the handler may run, how to write the answer): the uWS adapter (server.ts) for the listeners,
// `inject` (inject.ts) for calls in the same process. Both run this one code path.
import { DomainError, errorText, isDomainError } from '../errors.js';
import type { Logger } from '../log/logger.js';
import { authenticate, apiKeyAccepted, bearerChallenge, INVALID_API_KEY, requireDeviceAccess, requireStillCurrent, type AuthDeps } from './auth.js';
import { isPreflight, NO_CORS_HEADERS, withCorsHeaders, type CorsPolicy } from './cors.js';
import { startBodyRead } from './body.js';
import { jsonBodyDecoder } from './json-media-type.js';
import { asksToClose, checkFraming, joinHeaderLines, type HeaderLines } from './framing.js';
import { statusLine } from './status-text.js';
import type { RequestGate } from './gate.js';
import { problem, problemFromError } from './problem.js';
import { withoutDotSegments } from './route-path.js';
import type { Reply, RequestInfo, Router } from './router.js';
import { parseBody } from './number-syntax.js';
import { validateBody } from './schemas.js';
import { traceIdFor } from './trace-context.js';
import { monotonicMs } from '../monotonic-clock.js';

export interface HttpPipelineOptions {
  router: Router;
  maxBodyBytes: number;
  auth: AuthDeps;
  logger: Logger;
  /** Per-request access log (category `Microsoft.AspNetCore`, as ASP.NET names its own). */
  accessLog: Logger;
  /** Host filtering and the HTTPS redirect, before any routing. */
  gate?: RequestGate;
  /** Preflights and the CORS headers of every answer past the host gate; none without it. */
  cors?: CorsPolicy;
}

/** A request as copied out of the transport, before any header is interpreted. */
export interface IncomingRequest {
  /** Upper case. */
  readonly method: string;
  /** Without the query, percent-encoding kept. */
  readonly path: string;
  /** Without the `?`; '' when there is none. */
  readonly query: string;
  /** Every header line in arrival order, names in lower case. */
  readonly lines: HeaderLines;
  /** True when the request came in over TLS: hub URLs name `wss://`, no HTTPS redirect. */
  readonly secure: boolean;
}

/** A reply as bytes on the wire would carry it: status, header fields in order, payload. */
export interface RenderedReply {
  readonly status: number;
  readonly statusLine: string;
  readonly headers: ReadonlyArray<readonly [string, string]>;
  readonly payload: string | Buffer;
}

/**
 * What becomes of the connection after an answer: kept; `close`d once the read the request came in has
 * been parsed, so that nothing sent behind it runs (ill-framed requests, a 413); or closed as the client
 * asked (`Connection: close`), right after the answer: a request it pipelined behind anyway is answered
 * as uWS answers one behind a bare `close`.
 */
export type AfterAnswer = 'keep' | 'close' | 'close-as-asked';

export interface HttpExchange {
  /**
   * Starts reading the body; called synchronously while the request is dispatched, at most once.
   * Rejects with a `payload_too_large` DomainError as soon as more than `maxBytes` arrive (a declared
   * Content-Length over the limit is refused before this is called).
   */
  readBody(maxBytes: number): Promise<Buffer>;
  /**
   * The request is read to its end and valid. False (or a promise of it) when its handler must not run
   * after all (the client went away before it could be answered); a plain boolean when that is known at
   * once, which spares the request a promise hop.
   */
  readyToRun(method: string): boolean | Promise<boolean>;
  /**
   * Writes the answer, then keeps the connection or closes it (AfterAnswer). Calls `written` once the
   * answer has been handed to the connection (or dropped with it).
   */
  send(reply: RenderedReply, after: AfterAnswer, written: () => void): void;
}

export type HttpPipeline = (request: IncomingRequest, exchange: HttpExchange) => void;

export function renderReply(reply: Reply): RenderedReply {
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
  const headers: Array<[string, string]> = [];
  if (type) headers.push(['Content-Type', type]);
  headers.push(['X-Content-Type-Options', 'nosniff']);
  for (const [k, v] of Object.entries(reply.headers ?? {})) headers.push([k, v]);
  return { status: reply.status, statusLine: statusLine(reply.status), headers, payload };
}

function errorReply(e: unknown, logger: Logger, req: RequestInfo, traceId: string): Reply {
  if (isDomainError(e)) {
    const body = problemFromError(e, traceId);
    const reply: Reply = { status: body.status, body };
    if (reply.status === 401) reply.headers = { 'WWW-Authenticate': bearerChallenge(e) };
    return reply;
  }
  // A bug, not bad input: log it with the stack, answer a generic 500 without internals. The log line
  // names the answer's traceId, so a client's report leads to the stack.
  const body = problem(500, undefined, { traceId });
  logger.error(`unhandled error in ${req.method} ${req.path} (trace id ${body.traceId}): ${e instanceof Error ? (e.stack ?? e.message) : errorText(e)}`);
  return { status: 500, body };
}

export function httpPipeline(opts: HttpPipelineOptions): HttpPipeline {
  const { router, logger } = opts;
  return (incoming, exchange) => {
    const started = monotonicMs();
    const request: RequestInfo = {
      method: incoming.method,
      // As Kestrel's HttpRequest.Path: what the gate, the routes and the log see (route-path.ts).
      path: withoutDotSegments(incoming.path),
      query: incoming.query,
      headers: joinHeaderLines(incoming.lines),
      secure: incoming.secure,
    };
    // Made only for a problem: most answers carry none.
    const traceId = (): string => traceIdFor(request.headers.traceparent);
    const failed = (status: number, detail: string): Reply['body'] => problem(status, detail, { traceId: traceId() });
    let corsHeaders: Readonly<Record<string, string>> | undefined;
    let sentBody: Promise<Buffer> | undefined;
    let bodyState: 'reading' | 'read' | 'refused' = 'reading';
    const respond = (reply: Reply, close = false): void => {
      // Every answer waits for the body the request sent (startBodyRead).
      if (sentBody && bodyState === 'reading') {
        sentBody.then(
          () => respond(reply, close),
          () => respond(reply, close),
        );
        return;
      }
      // A body over the limit is not read on: the connection closes with whatever the answer is, as Kestrel
      // closes it once draining an unread body passes its limit.
      close ||= bodyState === 'refused';
      if (corsHeaders) reply = { ...reply, headers: withCorsHeaders(reply.headers, corsHeaders) };
      exchange.send(renderReply(reply), close ? 'close' : asksToClose(request.headers.connection) ? 'close-as-asked' : 'keep', () => {
        if (opts.accessLog.enabled('Information')) {
          opts.accessLog.info(`${request.method} ${request.path} ${reply.status} ${(monotonicMs() - started).toFixed(1)}ms`);
        }
      });
    };

    // Ambiguous framing is answered and the connection closed: nothing after it may run (framing.ts).
    const framing = checkFraming(request.query ? `${incoming.path}?${request.query}` : incoming.path, incoming.lines);
    if (framing) return respond({ status: framing.status, body: failed(framing.status, framing.detail) }, true);

    // Read here, while uWS can still hand it over, whatever the answer will be.
    sentBody = startBodyRead(request.headers['content-length'], request.headers['transfer-encoding'], opts.maxBodyBytes, exchange.readBody);
    if (sentBody) {
      sentBody.then(
        () => {
          bodyState = 'read';
        },
        () => {
          bodyState = 'refused';
        },
      );
    }

    const refusal = opts.gate?.({
      host: request.headers.host ?? '',
      path: request.path,
      query: request.query,
      secure: request.secure,
      forwardedProto: request.headers['x-forwarded-proto'] ?? '',
    });
    if (refusal) return respond({ status: refusal.status, headers: { ...refusal.headers }, ...(refusal.text ? { text: refusal.text } : {}) });

    // As ASP.NET Core's CORS middleware before routing: a preflight on any path is answered here, and
    // every later answer (errors included, so a page can read them) carries the policy's headers.
    if (opts.cors) {
      const origin = request.headers.origin ?? '';
      if (isPreflight(request.method, request.headers)) return respond({ status: 204, headers: opts.cors.preflight(origin) });
      const headers = opts.cors.headers(origin);
      // Most requests (devices, scripts) carry no Origin and get no header: their answers are not copied
      // to add nothing (copying every reply cost 12 % of a status update's CPU).
      if (headers !== NO_CORS_HEADERS) corsHeaders = headers;
    }

    const match = router.match(request.method, request.path);
    if (match.kind === 'not_found') return respond({ status: 404, body: failed(404, `No route matches ${request.method} ${request.path}.`) });
    if (match.kind === 'bad_path') return respond({ status: 400, body: failed(400, 'The request path is not valid percent-encoding.') });
    if (match.kind === 'method_not_allowed') {
      return respond({ status: 405, body: failed(405, `Method ${request.method} is not allowed here.`), headers: { Allow: match.allow.join(', ') } });
    }
    const { route, params } = match;
    // The order every route answers in, as ASP.NET runs authentication and authorization before model
    // binding: who may call (401/403), then what the body is (415), then its size and content (413/400).
    // The API key is checked here, the bearer token only once it is verified; the checks below that
    // need no await wait for it, while the body (which uWS hands over only to a reader attached now)
    // is already being read.
    if (route.auth.apiKey && !apiKeyAccepted(request.headers['x-api-key'], opts.auth.apiKeys)) {
      return respond({ status: 401, text: INVALID_API_KEY });
    }

    let body: Promise<Buffer> | undefined;
    let notJson = false;
    const type = request.headers['content-type'];
    // A body that is no JSON is read only to be dropped: the answer is a refusal.
    const decoder = route.body && type !== undefined ? jsonBodyDecoder(type) : undefined;
    if (route.body && !decoder) notJson = true;
    // A route that takes no body still has Server.MaxBodyBytes: a body it would ignore is read (and
    // dropped) only up to the limit, or 100 MB to a token refresh were read to answer 200.
    else if (route.body || sentBody) body = sentBody ?? Promise.resolve(Buffer.alloc(0));

    void (async () => {
      try {
        const authenticated = authenticate(request.headers, route.auth, opts.auth);
        const principal = authenticated instanceof Promise ? await authenticated : authenticated;
        if (route.auth.device) requireDeviceAccess(principal, params[route.auth.device]!);
        if (notJson) throw new DomainError('unsupported_media', 'The request body must be JSON (Content-Type: application/json).');
        let parsed: unknown;
        const bytes = body && (await body);
        if (bytes && route.body) {
          if (bytes.length === 0) throw new DomainError('invalid_argument', 'A request body is required.', { $: ['A non-empty request body is required.'] });
          try {
            parsed = parseBody(decoder!.decode(bytes));
          } catch (e) {
            throw new DomainError('invalid_argument', 'The request body is not valid JSON.', { $: [errorText(e)] });
          }
          validateBody(route.body, parsed);
        }
        const ready = exchange.readyToRun(route.method);
        if (!(typeof ready === 'boolean' ? ready : await ready)) {
          logger.debug(`${request.method} ${request.path} not run: the connection closed before it could be answered`);
          return;
        }
        requireStillCurrent(principal, opts.auth);
        respond(await route.handler({ request, params, body: parsed, principal }));
      } catch (e) {
        const reply = errorReply(e, logger, request, traceId());
        // A 413 came with the body read to its end, or refused with more of it still on the wire (body.ts):
        // either way the connection closes rather than read on.
        respond(reply, reply.status === 413);
      }
    })();
  };
}
