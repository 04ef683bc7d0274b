// The hub on uWebSockets.js, on one app or several (HTTP and HTTPS): the setup its routes share
// (uws-hub-context.ts), the WebSocket behavior (a uWS WebSocket as HubSocket) and the routes' registration.
// The uws-*.ts files are the only files in src/hub that touch uWS: besides this one, uws-hub-requests.ts
// (negotiate and the plain requests on the hub's path), uws-hub-upgrade.ts (the WebSocket upgrade and a
// stateful reconnect) and uws-socket.ts (the socket). uWS rules kept in all of them: copy everything out
// of `req` synchronously, onAborted before any await, cork writes after an await, never touch a socket
// after its close event.
import type { HttpRequest, HttpResponse, TemplatedApp, WebSocket, WebSocketBehavior, us_socket_context_t } from 'uWebSockets.js';
import { DEFAULT_MAX_BUFFERED_BYTES, HubCore, frameLimit } from './hub.js';
import { corsPolicy } from '../http/cors.js';
import { DOTTED_PATHS, sameRoutePath, uwsPatterns } from '../http/route-path.js';
import { addDottedPathRoute } from '../http/dotted-paths.js';
import type { VoiceHubServer } from './types.js';
import { hubIdleTimeoutSeconds } from './close-wait.js';
import { adaptUwsSocket, type UwsSocket } from './uws-socket.js';
import { isWebSocketHandshake, reply, stack, type HubRoutesContext, type UwsHubOptions } from './uws-hub-context.js';
import { negotiateRoute, plainRequestRoute } from './uws-hub-requests.js';
import { hubUpgrade, type SocketData } from './uws-hub-upgrade.js';

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
  const negotiatePath = `${options.path}/negotiate`;

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

  const ctx: HubRoutesContext = { options, logger, core, counters, cors, authenticate, negotiatePath, guarded, admission };
  const upgrade = hubUpgrade(ctx);

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
    // uWS wrote some of what it held: the hub's account of unsent bytes follows (unsent-account.ts).
    drain: (ws) => {
      try {
        const data = ws.getUserData();
        if (data.socket) data.connection?.transportDrained(data.socket);
      } catch (e) {
        logger.error(`hub drain handling failed: ${stack(e)}`);
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
    const negotiateRequest = negotiateRoute(ctx, secure);
    const hubRequest = plainRequestRoute(ctx, secure);
    return (res: HttpResponse, req: HttpRequest): boolean => {
      const url = req.getUrl();
      if (sameRoutePath(negotiatePath, url)) negotiateRequest(res, req);
      else if (sameRoutePath(options.path, url) && !isWebSocketHandshake(req)) hubRequest(res, req);
      else return false;
      return true;
    };
  };

  for (const { app, secure } of listeners) {
    for (const pattern of uwsPatterns(negotiatePath)) app.any(pattern, negotiateRoute(ctx, secure));
    for (const pattern of [...uwsPatterns(options.path), DOTTED_PATHS]) app.ws<SocketData>(pattern, behavior(secure));
    for (const pattern of uwsPatterns(options.path)) app.any(pattern, plainRequestRoute(ctx, secure));
    addDottedPathRoute(app, dottedRequest(secure));
  }
  return core.server;
}

function isListenerList(target: TemplatedApp | readonly HubListener[]): target is readonly HubListener[] {
  return Array.isArray(target);
}