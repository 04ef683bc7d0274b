// The plain HTTP requests on the hub's paths: negotiate (admission, CORS, authentication) and the hub's
// path without an upgrade, after the checks every route makes first (openRequest).
import type { HttpRequest, HttpResponse } from 'uWebSockets.js';
import { asksToClose, headerLines, joinHeaderLines, uwsClosesAfter } from '../http/framing.js';
import { refuseIllFramed } from '../http/framing-guard.js';
import { readBody, startBodyRead, tooLarge, type ResponseState } from '../http/body.js';
import { problem } from '../http/problem.js';
import { isPreflight } from '../http/cors.js';
import { overTls } from '../http/forwarded-proto.js';
import { sameRoutePath } from '../http/route-path.js';
import { addressKey } from './address-slots.js';
import { plainHubAnswer } from './connection-endpoint.js';
import { asksForStatefulReconnect, bearerToken, connectionIdParam, negotiateResponse, parseNegotiateVersion, queryParam } from './negotiate.js';
import { ADDRESS_FULL, isWebSocketHandshake, reply, withUser, type Ending, type HubRoutesContext } from './uws-hub-context.js';

/** A plain request past the checks of openRequest: how its answer must end, and its Origin. */
interface OpenedRequest {
  readonly method: string;
  readonly end: Ending;
  readonly origin: string;
  /** It sent a body over Server.MaxBodyBytes: a route answers 413 once its method is right, as the API's do. */
  readonly bodyTooLarge: boolean;
  /** The client went away: nothing may be written to `res` any more. */
  readonly aborted: () => boolean;
}

/** The API's 413 (problem.ts), on a connection that closes (`end` says so). */
const refuseBody = (ctx: HubRoutesContext, res: HttpResponse, headers: Record<string, string>, end: Ending): void =>
  reply(res, 413, JSON.stringify(problem(413, tooLarge(ctx.options.maxBodyBytes).message)), headers, 'application/problem+json', end);

/**
 * What every plain HTTP request on the hub's paths goes through first, as on every API route: ambiguous
 * framing refused (or a request smuggled behind it would run), the host and HTTPS checks, a preflight
 * answered (204, allow headers only for a listed origin); the rest goes to `handle` with how its answer
 * must end (`Connection: close` and HEAD honoured, framing.ts). Every answer waits for the body the
 * request sent, read and dropped up to Server.MaxBodyBytes (startBodyRead): a body over it closes the
 * connection with the answer. `handle` may run after `req` is gone: what it needs of it is copied first.
 */
function openRequest(ctx: HubRoutesContext, res: HttpResponse, req: HttpRequest, secure: boolean, handle: (res: HttpResponse, opened: OpenedRequest) => void): void {
  const { cors } = ctx;
  const lines = headerLines(req);
  if (refuseIllFramed(res, req, lines)) return;
  const headers = joinHeaderLines(lines);
  const method = req.getMethod().toUpperCase();
  const end: Ending = { head: method === 'HEAD', close: asksToClose(headers.connection) ? 'asked' : undefined, uwsCloses: uwsClosesAfter(req) };
  const refusal = ctx.admission(req, secure);
  const origin = req.getHeader('origin');
  const preflight = isPreflight(method, { origin, 'access-control-request-method': req.getHeader('access-control-request-method') || undefined });
  const state: ResponseState = { aborted: false, done: false, paused: false };
  res.onAborted(() => {
    state.aborted = true;
  });
  const aborted = (): boolean => state.aborted;
  const answer = (res: HttpResponse, end: Ending, bodyTooLarge = false): void => {
    if (refusal) reply(res, refusal.status, refusal.text, refusal.headers, undefined, end);
    else if (preflight) reply(res, 204, '', cors.preflight(origin), undefined, end);
    else handle(res, { method, end, origin, bodyTooLarge, aborted });
  };
  const body = startBodyRead(headers['content-length'], headers['transfer-encoding'], ctx.options.maxBodyBytes, (max) => readBody(res, state, max));
  if (!body) return answer(res, end);
  const answerLater = ctx.guarded('hub request', answer);
  body.then(
    () => {
      if (!state.aborted) res.cork(() => answerLater(res, end));
    },
    // Closing: written once uWS has parsed the rest of the read, so that nothing behind it runs (framing-guard.ts).
    () =>
      setImmediate(() => {
        if (!state.aborted) res.cork(() => answerLater(res, { ...end, close: 'forced' }, true));
      }),
  );
}

/** The negotiate route of one app (`secure`: the TLS one). */
export const negotiateRoute = (ctx: HubRoutesContext, secure: boolean) => ctx.guarded('negotiate', (res, req: HttpRequest) => {
  const { core, cors, negotiatePath } = ctx;
  // Registered for any path of its length (route-path.ts): any other path goes on to the next route.
  if (!sameRoutePath(negotiatePath, req.getUrl())) {
    req.setYield(true);
    return;
  }
  const authorization = req.getHeader('authorization');
  const query = new URLSearchParams(req.getQuery() ?? '');
  const host = req.getHeader('host');
  const tls = overTls(secure, req.getHeader('x-forwarded-proto'));
  openRequest(ctx, res, req, secure, (res, { method, end, origin, bodyTooLarge, aborted }) => {
    // Refused rather than answered without CORS headers: a negotiation holds a place until it expires,
    // and the WebSocket it leads to would be refused anyway.
    if (!cors.admits(origin, host, tls)) {
      reply(res, 403, 'Origin not allowed', cors.headers(origin), undefined, end);
      return;
    }
    const corsHeaders = cors.headers(origin);
    if (method !== 'POST') {
      // OPTIONS is answered only as a preflight (above): a plain OPTIONS lands here, so Allow must not list it.
      reply(res, 405, 'Method not allowed', { ...corsHeaders, Allow: 'POST' }, undefined, end);
      return;
    }
    if (bodyTooLarge) return refuseBody(ctx, res, corsHeaders, end);
    const version = parseNegotiateVersion(queryParam(query, 'negotiateVersion'));
    if ('error' in version) {
      // ASP.NET Core answers 200 with the error in the body: the clients read it and report it.
      reply(res, 200, JSON.stringify({ error: version.error }), corsHeaders, 'application/json', end);
      return;
    }
    const token = bearerToken(authorization, queryParam(query, 'access_token'));
    const address = addressKey(Buffer.from(res.getRemoteAddressAsText()).toString());
    const unauthorized = (challenge: Record<string, string>): void => reply(res, 401, 'Unauthorized', { ...corsHeaders, ...challenge }, undefined, end);
    withUser(ctx, { res, token, what: 'negotiate', aborted, unauthorized }, (user) => {
      const negotiation = core.negotiate(version.version, user, address, asksForStatefulReconnect(query));
      if (negotiation === undefined) res.cork(() => reply(res, ADDRESS_FULL.status, ADDRESS_FULL.text, { ...corsHeaders, ...ADDRESS_FULL.headers }, undefined, end));
      else res.cork(() => reply(res, 200, JSON.stringify(negotiateResponse(negotiation)), corsHeaders, 'application/json', end));
    });
  });
});

/** The hub's path without an upgrade (connection-endpoint.ts), after the checks every route makes first. */
export const plainRequestRoute = (ctx: HubRoutesContext, secure: boolean) => ctx.guarded('hub request', (res, req: HttpRequest) => {
  const { core, cors } = ctx;
  // Handshakes are the WebSocket route's; other paths of this length go on to the next route.
  if (isWebSocketHandshake(req) || !sameRoutePath(ctx.options.path, req.getUrl())) {
    req.setYield(true);
    return;
  }
  const id = connectionIdParam(new URLSearchParams(req.getQuery() ?? ''));
  const accept = req.getHeader('accept');
  openRequest(ctx, res, req, secure, (res, { method, end, origin, bodyTooLarge }) => {
    const answer = plainHubAnswer(method, id, id !== null && core.knows(id), accept);
    if (bodyTooLarge && answer.status !== 405) return refuseBody(ctx, res, cors.headers(origin), end);
    reply(res, answer.status, answer.text, { ...cors.headers(origin), ...answer.headers }, undefined, end);
  });
});
