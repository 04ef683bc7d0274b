// The hub on uWebSockets.js, on one app or several (HTTP and HTTPS), with uws-socket.ts the only files in
// src/hub that touch uWS: the negotiate route (admission, CORS, authentication) and the WebSocket behavior
// (admission, origin check, `id` lookup, authentication, a uWS WebSocket as HubSocket; a stateful
// reconnect: the token's connection, its user, one reconnect at a time). uWS rules kept
// here: copy everything out of `req` synchronously, onAborted before any await, cork writes after an
// await, never touch a socket after its close event.
import { isDeepStrictEqual } from 'node:util';
import type { HttpRequest, HttpResponse, TemplatedApp, WebSocket, WebSocketBehavior, us_socket_context_t } from 'uWebSockets.js';
import { endBounded, type AnswerEnd } from '../http/bounded-end.js';
import { asksToClose, hasOption, headerLines, joinHeaderLines, uwsClosesAfter } from '../http/framing.js';
import { refuseIllFramed } from '../http/framing-guard.js';
import { readBody, startBodyRead, tooLarge, type ResponseState } from '../http/body.js';
import { problem } from '../http/problem.js';
import { bearerChallenge } from '../http/auth.js';
import { addressKey } from './address-slots.js';
import { plainHubAnswer } from './connection-endpoint.js';
import type { HubConnection } from './connection.js';
import { DEFAULT_MAX_BUFFERED_BYTES, HubCore, frameLimit } from './hub.js';
import { corsPolicy, isPreflight } from '../http/cors.js';
import { statusLine } from '../http/status-text.js';
import { DOTTED_PATHS, sameRoutePath, uwsPatterns } from '../http/route-path.js';
import { addDottedPathRoute } from '../http/dotted-paths.js';
import {
  asksForStatefulReconnect,
  bearerToken,
  connectionIdParam,
  negotiateResponse,
  newId,
  parseNegotiateVersion,
  queryParam,
  type PendingNegotiation,
} from './negotiate.js';
import type { HubOptions, VoiceHubServer } from './types.js';
import { hubIdleTimeoutSeconds } from './close-wait.js';
import { adaptUwsSocket, type UwsSocket } from './uws-socket.js';

/**
 * The code uWS reports for a socket that ended without a close frame: the network ended it, or uWS did
 * because of what the client sent (the reason says which; see NETWORK_DROPS).
 */
const ABNORMAL_CLOSURE = 1006;

/**
 * The reasons uWS gives with 1006 for a socket the network ended, not the client: none (a TCP reset;
 * on the Node 20 addon, uWS 20.30, also the end of the stream), the end of the stream as the Node 24
 * addon (uWS 20.56) names it, and inactivity (idleTimeout: Hub.ClientTimeout closes a silent
 * connection first, see close-wait.ts; listed so that a late one cannot make a drop final). Only these
 * leave a stateful connection waiting for its client. Any other reason is uWS refusing what the client
 * sent, and the connection ends for good, as ASP.NET Core ends it on a size or protocol violation:
 * kept, the official client reconnects at once and replays the frame that got it dropped, without end.
 * Provoked on uWS 20.30: "Received too big message" (a frame over maxPayloadLength, refused at its
 * header), "Received invalid UTF-8" (a text frame), "Received too big message, or other inflation
 * error" (compressed frames; compression is off); a malformed frame or close payload comes with no
 * reason there, so it cannot be told from a drop. uWS 20.56 (its addon
 * needs a newer glibc than the development machine has: read from the addon's strings and uWS's
 * source) also names those: "Received invalid WebSocket frame", "Received invalid close payload". An
 * unknown reason ends the connection: the client starts afresh, where the opposite guess could loop.
 */
const NETWORK_DROPS: ReadonlySet<string> = new Set(['', 'Received TCP FIN before WebSocket close frame', 'WebSocket timed out from inactivity']);

/** uWS's reason for a frame over maxPayloadLength, counted apart from the other refusals. */
const FRAME_TOO_LARGE = 'Received too big message';

/** One uWS app the hub is served on; the hub may be on several (HTTP and HTTPS) and groups span them. */
export interface HubListener {
  readonly app: TemplatedApp;
  /** The app is the TLS one (told to `admit`). */
  readonly secure: boolean;
}

/** What `admit` sees of a negotiate or upgrade request. */
export interface HubAdmissionRequest {
  readonly host: string;
  readonly path: string;
  readonly query: string;
  readonly secure: boolean;
  readonly forwardedProto: string;
}

export interface UwsHubOptions extends HubOptions {
  /**
   * Runs first on negotiate and on the WebSocket upgrade (host filtering, HTTPS redirect); a refusal
   * is answered as it is (status, plain text, headers) and nothing else happens.
   */
  readonly admit?: (request: HubAdmissionRequest) => { status: number; text: string; headers: Readonly<Record<string, string>> } | undefined;
  /**
   * The largest body a plain request on the hub's paths may send (Server.MaxBodyBytes): none is needed,
   * and one is read and dropped up to this before the answer, as the API reads a body it ignores.
   */
  readonly maxBodyBytes: number;
}

interface SocketData {
  readonly connectionId: string;
  /** The negotiation this socket took, released when it closes. */
  readonly negotiationKey: string | undefined;
  readonly user: unknown;
  /** A reconnect: the connection this socket resumes. */
  readonly resume?: HubConnection;
  /** The connection token a reconnect claimed, released when its socket opens or closes. */
  readonly reconnectKey?: string;
  /** The client address key the upgrade took a place under (address-slots.ts); none for a reconnect. */
  readonly address?: string;
  connection?: HubConnection;
  socket?: UwsSocket;
}

/** A Sec-WebSocket-Key as RFC 6455 section 4.1 makes it: 16 bytes in Base64. */
const WEBSOCKET_KEY = /^[A-Za-z0-9+/]{22}==$/;

/**
 * Whether the request is a WebSocket opening handshake (RFC 6455 section 4.2.1), as ASP.NET Core's
 * WebSocket middleware tells one: a GET with `Upgrade: websocket`, `upgrade` among the Connection options,
 * `Sec-WebSocket-Version: 13` and a key of 16 bytes. Any other request to the hub's path is a plain one, as
 * ASP.NET's dispatcher answers it. uWS's WebSocket route tests only the key's length: a GET with such a key
 * and nothing else was switched to a WebSocket, and a request whose Upgrade header was no handshake (h2c, a
 * handshake without its key, a POST) went past the hub to the API's `404 No route matches GET /voice-hub`.
 */
function isWebSocketHandshake(req: HttpRequest): boolean {
  return (
    req.getMethod().toLowerCase() === 'get' &&
    req.getHeader('upgrade').toLowerCase() === 'websocket' &&
    hasOption(req.getHeader('connection'), 'upgrade') &&
    req.getHeader('sec-websocket-version') === '13' &&
    WEBSOCKET_KEY.test(req.getHeader('sec-websocket-key'))
  );
}

/** How the negotiate route's answers end, their status aside (see endBounded). */
type Ending = Omit<AnswerEnd, 'status'>;

function reply(res: HttpResponse, status: number, body: string, headers: Record<string, string>, type = 'text/plain; charset=utf-8', end: Ending = {}): void {
  res.writeStatus(statusLine(status, ''));
  for (const [k, v] of Object.entries(headers)) res.writeHeader(k, v);
  if (body) res.writeHeader('Content-Type', type);
  endBounded(res, body, { ...end, status });
}

/** What a client refused for a full hub is told to wait: connections end every few seconds on a busy hub. */
const FULL_RETRY_AFTER_SECONDS = 5;

/**
 * The answer to a client whose address holds as many connections as one may (Hub.MaximumConnectionsPerAddress):
 * at the WebSocket upgrade, and at negotiate for as many waiting negotiations.
 */
const ADDRESS_FULL = { status: 429, text: 'Too many connections from this address', headers: { 'Retry-After': String(FULL_RETRY_AFTER_SECONDS) } } as const;

const describe = (e: unknown): string => (e instanceof Error ? e.message : String(e));
const stack = (e: unknown): string => (e instanceof Error ? (e.stack ?? e.message) : String(e));

export function attachHub(target: TemplatedApp | readonly HubListener[], options: UwsHubOptions): VoiceHubServer {
  const { logger } = options;
  const listeners: readonly HubListener[] = isListenerList(target) ? target : [{ app: target, secure: false }];
  const core = new HubCore(options);
  const counters = core.env.counters;
  const cors = options.cors ?? corsPolicy([]);
  const authenticate = async (token: string | undefined): Promise<unknown> => options.authenticate?.(token);
  const maxBuffered = options.maxBufferedBytes ?? DEFAULT_MAX_BUFFERED_BYTES;
  const maxFrame = frameLimit(options);
  const idleTimeout = hubIdleTimeoutSeconds(options.clientTimeoutMs);
  /** Upgrades past the connection check whose authentication has not finished: they count as connections. */
  let upgrading = 0;
  const sameUser = options.sameUser ?? isDeepStrictEqual;

  /** Nothing may throw out of a uWS callback: a bug answers 500 and is logged. */
  const guarded =
    <A extends unknown[]>(what: string, handler: (res: HttpResponse, ...rest: A) => void) =>
    (res: HttpResponse, ...rest: A): void => {
      try {
        handler(res, ...rest);
      } catch (e) {
        logger.error(`${what} failed: ${stack(e)}`);
        try {
          res.cork(() => reply(res, 500, '', {}));
        } catch {
          // already answered or aborted
        }
      }
    };

  /** Copies what `admit` needs out of `req` (only valid during the callback) and asks it. */
  const admission = (req: HttpRequest, secure: boolean): ReturnType<NonNullable<UwsHubOptions['admit']>> =>
    options.admit?.({
      host: req.getHeader('host'),
      path: req.getUrl(),
      query: req.getQuery() ?? '',
      secure,
      forwardedProto: req.getHeader('x-forwarded-proto'),
    });

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

  /**
   * Authenticates the token of a request whose answer waits on it: a refusal is logged (Debug, after
   * `what`) and answered by `unauthorized` with the bearer challenge; `proceed` gets the user. Nothing is
   * written once the request is aborted.
   */
  function withUser(
    res: HttpResponse,
    token: string | undefined,
    what: string,
    aborted: () => boolean,
    unauthorized: (headers: Record<string, string>) => void,
    proceed: (user: unknown) => void,
  ): void {
    void (async () => {
      let user: unknown;
      try {
        user = await authenticate(token);
      } catch (e) {
        logger.debug(`${what} refused: ${describe(e)}`);
        if (!aborted()) res.cork(() => unauthorized({ 'WWW-Authenticate': bearerChallenge(e) }));
        return;
      }
      if (!aborted()) proceed(user);
    })().catch((e: unknown) => logger.error(`${what} failed: ${stack(e)}`));
  }

  /** The API's 413 (problem.ts), on a connection that closes (`end` says so). */
  const refuseBody = (res: HttpResponse, headers: Record<string, string>, end: Ending): void =>
    reply(res, 413, JSON.stringify(problem(413, tooLarge(options.maxBodyBytes).message)), { ...headers, 'X-Content-Type-Options': 'nosniff' }, 'application/problem+json', end);

  /**
   * What every plain HTTP request on the hub's paths goes through first, as on every API route: ambiguous
   * framing refused (or a request smuggled behind it would run), the host and HTTPS checks, a preflight
   * answered (204, allow headers only for a listed origin); the rest goes to `handle` with how its answer
   * must end (`Connection: close` and HEAD honoured, framing.ts). Every answer waits for the body the
   * request sent, read and dropped up to Server.MaxBodyBytes (startBodyRead): a body over it closes the
   * connection with the answer. `handle` may run after `req` is gone: what it needs of it is copied first.
   */
  function openRequest(res: HttpResponse, req: HttpRequest, secure: boolean, handle: (res: HttpResponse, opened: OpenedRequest) => void): void {
    const lines = headerLines(req);
    if (refuseIllFramed(res, req, lines)) return;
    const headers = joinHeaderLines(lines);
    const method = req.getMethod().toUpperCase();
    const end: Ending = { head: method === 'HEAD', close: asksToClose(headers.connection) ? 'asked' : undefined, uwsCloses: uwsClosesAfter(req) };
    const refusal = admission(req, secure);
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
    const body = startBodyRead(headers['content-length'], headers['transfer-encoding'], options.maxBodyBytes, (max) => readBody(res, state, max));
    if (!body) return answer(res, end);
    const answerLater = guarded('hub request', answer);
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

  const negotiatePath = `${options.path}/negotiate`;
  const negotiate = (secure: boolean) => guarded('negotiate', (res, req: HttpRequest) => {
    // Registered for any path of its length (route-path.ts): any other path goes on to the next route.
    if (!sameRoutePath(negotiatePath, req.getUrl())) {
      req.setYield(true);
      return;
    }
    const authorization = req.getHeader('authorization');
    const query = new URLSearchParams(req.getQuery() ?? '');
    const host = req.getHeader('host');
    openRequest(res, req, secure, (res, { method, end, origin, bodyTooLarge, aborted }) => {
      // Refused rather than answered without CORS headers: a negotiation holds a place until it expires,
      // and the WebSocket it leads to would be refused anyway.
      if (!cors.admits(origin, host)) {
        reply(res, 403, 'Origin not allowed', cors.headers(origin), undefined, end);
        return;
      }
      const corsHeaders = cors.headers(origin);
      if (method !== 'POST') {
        // OPTIONS is answered only as a preflight (above): a plain OPTIONS lands here, so Allow must not list it.
        reply(res, 405, 'Method not allowed', { ...corsHeaders, Allow: 'POST' }, undefined, end);
        return;
      }
      if (bodyTooLarge) return refuseBody(res, corsHeaders, end);
      const version = parseNegotiateVersion(queryParam(query, 'negotiateVersion'));
      if ('error' in version) {
        // ASP.NET Core answers 200 with the error in the body: the clients read it and report it.
        reply(res, 200, JSON.stringify({ error: version.error }), corsHeaders, 'application/json', end);
        return;
      }
      const token = bearerToken(authorization, queryParam(query, 'access_token'));
      const address = addressKey(Buffer.from(res.getRemoteAddressAsText()).toString());
      const unauthorized = (challenge: Record<string, string>): void => reply(res, 401, 'Unauthorized', { ...corsHeaders, ...challenge }, undefined, end);
      withUser(res, token, 'negotiate', aborted, unauthorized, (user) => {
        const negotiation = core.negotiate(version.version, user, address, asksForStatefulReconnect(query));
        if (negotiation === undefined) res.cork(() => reply(res, ADDRESS_FULL.status, ADDRESS_FULL.text, { ...corsHeaders, ...ADDRESS_FULL.headers }, undefined, end));
        else res.cork(() => reply(res, 200, JSON.stringify(negotiateResponse(negotiation)), corsHeaders, 'application/json', end));
      });
    });
  });

  /** The hub's path without an upgrade (connection-endpoint.ts), after the checks every route makes first. */
  const plainRequest = (secure: boolean) => guarded('hub request', (res, req: HttpRequest) => {
    // Handshakes are the WebSocket route's; other paths of this length go on to the next route.
    if (isWebSocketHandshake(req) || !sameRoutePath(options.path, req.getUrl())) {
      req.setYield(true);
      return;
    }
    const id = connectionIdParam(new URLSearchParams(req.getQuery() ?? ''));
    const accept = req.getHeader('accept');
    openRequest(res, req, secure, (res, { method, end, origin, bodyTooLarge }) => {
      const answer = plainHubAnswer(method, id, id !== null && core.knows(id), accept);
      if (bodyTooLarge && answer.status !== 405) return refuseBody(res, cors.headers(origin), end);
      reply(res, answer.status, answer.text, { ...cors.headers(origin), ...answer.headers }, undefined, end);
    });
  });

  function upgrade(res: HttpResponse, req: HttpRequest, context: us_socket_context_t, secure: boolean): void {
    // No handshake is the plain route's (plainRequest), as is any other path of this length the next route's.
    if (!sameRoutePath(options.path, req.getUrl()) || !isWebSocketHandshake(req)) {
      req.setYield(true);
      return;
    }
    if (refuseIllFramed(res, req)) return;
    const refusal = admission(req, secure);
    if (refusal) {
      counters.upgradesRejected++;
      logger.debug(`WebSocket upgrade refused: ${refusal.status}`);
      reply(res, refusal.status, refusal.text, refusal.headers);
      return;
    }
    // The request dies with this callback: copy what is needed now.
    const address = addressKey(Buffer.from(res.getRemoteAddressAsText()).toString());
    const secKey = req.getHeader('sec-websocket-key');
    const extensions = req.getHeader('sec-websocket-extensions');
    const origin = req.getHeader('origin');
    const authorization = req.getHeader('authorization');
    const query = new URLSearchParams(req.getQuery() ?? '');
    const refuse = (status: number, text: string, headers: Record<string, string> = {}): void => {
      counters.upgradesRejected++;
      logger.debug(`WebSocket upgrade refused: ${status} ${text}`);
      reply(res, status, text, headers);
    };
    // Browsers do not apply CORS to WebSockets, so the origin is checked here.
    if (!cors.admits(origin, req.getHeader('host'))) return refuse(403, 'Origin not allowed');
    const id = connectionIdParam(query);
    const token = bearerToken(authorization, queryParam(query, 'access_token'));
    const reconnect = id === null ? undefined : core.reconnectable(id);
    // A stateful reconnect resumes a connection already counted; anything else would add one.
    if (reconnect === undefined && !core.hasRoomFor(upgrading)) {
      return refuse(503, 'Too many connections', { 'Retry-After': String(FULL_RETRY_AFTER_SECONDS) });
    }
    if (id !== null && reconnect !== undefined) {
      const refuseReconnect = (status: number, text: string, headers?: Record<string, string>): void => {
        counters.reconnectsRefused++;
        refuse(status, text, headers);
      };
      return resumeUpgrade(res, context, { id, token, secKey, extensions, connection: reconnect, refuse: refuseReconnect });
    }
    let negotiation: PendingNegotiation | undefined;
    if (id !== null) {
      const claim = core.negotiations.claim(id, core.env.now());
      if (claim.kind === 'not-found') return refuse(404, 'No Connection with that ID');
      if (claim.kind === 'in-use') return refuse(409, 'Connection ID already in use');
      negotiation = claim.negotiation;
    }
    // Taken before the token is checked: upgrades being authenticated hold places too.
    if (!core.takeAddress(address)) {
      if (id !== null) core.negotiations.release(id);
      return refuse(ADDRESS_FULL.status, ADDRESS_FULL.text, ADDRESS_FULL.headers);
    }
    let addressHeld = true;
    const release = (): void => {
      if (id !== null) core.negotiations.release(id);
      if (addressHeld) core.releaseAddress(address);
      addressHeld = false;
    };
    let aborted = false;
    upgrading++;
    let counted = true;
    const uncount = (): void => {
      if (counted) upgrading--;
      counted = false;
    };
    res.onAborted(() => {
      aborted = true;
      uncount();
      release();
    });
    void (async () => {
      let user: unknown;
      try {
        // Without a token on the socket, the user authenticated at negotiate time stands.
        user = token === undefined && negotiation ? negotiation.user : await authenticate(token);
      } catch (e) {
        uncount();
        release();
        logger.debug(`WebSocket authentication failed: ${describe(e)}`);
        if (!aborted) res.cork(() => refuse(401, 'Unauthorized', { 'WWW-Authenticate': bearerChallenge(e) }));
        return;
      }
      if (aborted) return;
      const data: SocketData = {
        connectionId: negotiation?.connectionId ?? newId(),
        negotiationKey: id ?? undefined,
        user,
        address,
        ...(negotiation?.statefulReconnect ? { reconnectKey: negotiation.key } : {}),
      };
      // The place is the connection's from here (HubCore.open), released when it ends for good.
      addressHeld = false;
      // No subprotocol is selected, as in ASP.NET without a SubProtocolSelector. uWS opens the
      // connection (the open handler, which counts it in the core) before upgrade() returns.
      uncount();
      res.cork(() => res.upgrade(data, secKey, '', extensions, context));
    })().catch((e: unknown) => {
      uncount();
      release();
      logger.error(`WebSocket upgrade failed: ${stack(e)}`);
    });
  }

  interface ResumeRequest {
    readonly id: string;
    readonly token: string | undefined;
    readonly secKey: string;
    readonly extensions: string;
    readonly connection: HubConnection;
    readonly refuse: (status: number, text: string, headers?: Record<string, string>) => void;
  }

  /**
   * A reconnect of a stateful connection (HubCore.reconnectable). The connection token is the secret,
   * as for the first socket, and the reconnect must name the user the connection was opened for: the
   * same user's token, or none for a connection opened without one. Another user's token is refused
   * (403), and so is no token for a connection opened with one (401): whoever learnt the connection token
   * cannot take over a device's connection without its device token.
   */
  function resumeUpgrade(res: HttpResponse, context: us_socket_context_t, request: ResumeRequest): void {
    const { id, token, connection } = request;
    let aborted = false;
    res.onAborted(() => {
      aborted = true;
    });
    withUser(res, token, 'reconnect', () => aborted, (challenge) => request.refuse(401, 'Unauthorized', challenge), (user) => {
      if (!sameUser(connection.user, user)) {
        // No token, for a connection opened with one, is no user at all: unauthenticated, not another user.
        const anonymous = user === undefined;
        logger.info(`${connection.connectionId}: reconnect refused: ${anonymous ? 'it carries no token, the connection was opened with one' : 'its token names another user'}`);
        res.cork(() => (anonymous ? request.refuse(401, 'Unauthorized', { 'WWW-Authenticate': bearerChallenge(undefined) }) : request.refuse(403, 'Forbidden')));
        return;
      }
      if (!connection.isResumable()) {
        res.cork(() => request.refuse(404, 'No Connection with that ID'));
        return;
      }
      const data: SocketData = { connectionId: connection.connectionId, negotiationKey: undefined, user: connection.user, resume: connection, reconnectKey: id };
      res.cork(() => res.upgrade(data, request.secKey, '', request.extensions, context));
    });
  }

  /** uWS ended a socket for what its client sent (NETWORK_DROPS): counted, and logged as a misbehaving client is. */
  const refusedByTransport = (connectionId: string, reason: string): void => {
    if (reason === FRAME_TOO_LARGE) counters.framesTooLarge++;
    else counters.protocolErrors++;
    const what = reason === FRAME_TOO_LARGE ? `a frame over ${maxFrame} bytes` : reason;
    core.env.closings.info(`${connectionId}: closed by the WebSocket layer for what the client sent (${what}): the connection ends`);
  };

  const behavior = (secure: boolean): WebSocketBehavior<SocketData> => ({
    // uWS drops the connection at a larger frame's header, before buffering it (no close frame: the
    // client sees 1006), and the connection ends for good (NETWORK_DROPS). Frames may carry many
    // messages (the official client batches); the per-message limit is the parser's.
    maxPayloadLength: maxFrame,
    // Above our own limit so the Close message to a slow client is still queued, not dropped, and
    // above it by a whole replay buffer, which a stateful reconnect writes at once.
    maxBackpressure: 2 * maxBuffered + (options.statefulReconnect?.bufferSize ?? 0),
    closeOnBackpressureLimit: 0,
    // Timeouts and keep-alives are SignalR's (pings the client sees); idleTimeout is set for how long
    // uWS then waits for a closed client's FIN (close-wait.ts).
    idleTimeout,
    sendPingsAutomatically: false,
    upgrade: guarded('WebSocket upgrade', (res, req: HttpRequest, context: us_socket_context_t) => upgrade(res, req, context, secure)),
    open: (ws) => {
      const data = ws.getUserData();
      try {
        data.socket = adaptUwsSocket(ws as WebSocket<unknown>, () => data.connection?.transportDropped());
        if (data.resume) {
          if (core.resume(data.resume, data.socket)) data.connection = data.resume;
          else data.socket.end();
          return;
        }
        data.connection = core.open(data.connectionId, data.user, data.socket, data.reconnectKey, data.address);
      } catch (e) {
        // A connection never opened gives back the place its upgrade took.
        if (data.connection === undefined && data.resume === undefined && data.address !== undefined) core.releaseAddress(data.address);
        logger.error(`hub open failed: ${stack(e)}`);
      }
    },
    message: (ws, message) => {
      try {
        // The ArrayBuffer is only valid during this callback: the connection checks its size and copies it.
        ws.getUserData().connection?.receive(new Uint8Array(message));
      } catch (e) {
        logger.error(`hub message handling failed: ${stack(e)}`);
      }
    },
    close: (ws, code, message) => {
      try {
        const data = ws.getUserData();
        data.socket?.markClosed();
        // The message is only valid during this callback.
        const reason = code === ABNORMAL_CLOSURE ? Buffer.from(message).toString() : '';
        const dropped = code === ABNORMAL_CLOSURE && NETWORK_DROPS.has(reason);
        if (dropped) logger.debug(`${data.connectionId}: closed without a close frame${reason ? `: ${reason}` : ''}`);
        else if (code === ABNORMAL_CLOSURE) refusedByTransport(data.connectionId, reason);
        // A stateful connection waits for its client to reconnect only after a drop that was not the client's doing.
        if (data.connection) core.closed(data.connection, data.socket, dropped);
        if (data.negotiationKey !== undefined) core.negotiations.release(data.negotiationKey);
      } catch (e) {
        logger.error(`hub close handling failed: ${stack(e)}`);
      }
    },
  });

  /** The hub's paths written with dot segments (`/voice-hub/./negotiate`), which Kestrel removes before routing. */
  const dottedRequest = (secure: boolean) => {
    const negotiateRequest = negotiate(secure);
    const hubRequest = plainRequest(secure);
    return (res: HttpResponse, req: HttpRequest): boolean => {
      const url = req.getUrl();
      if (sameRoutePath(negotiatePath, url)) negotiateRequest(res, req);
      else if (sameRoutePath(options.path, url) && !isWebSocketHandshake(req)) hubRequest(res, req);
      else return false;
      return true;
    };
  };

  for (const { app, secure } of listeners) {
    for (const pattern of uwsPatterns(negotiatePath)) app.any(pattern, negotiate(secure));
    for (const pattern of [...uwsPatterns(options.path), DOTTED_PATHS]) app.ws<SocketData>(pattern, behavior(secure));
    for (const pattern of uwsPatterns(options.path)) app.any(pattern, plainRequest(secure));
    addDottedPathRoute(app, dottedRequest(secure));
  }
  return core.server;
}

function isListenerList(target: TemplatedApp | readonly HubListener[]): target is readonly HubListener[] {
  return Array.isArray(target);
}
