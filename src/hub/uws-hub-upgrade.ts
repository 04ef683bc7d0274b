// The WebSocket upgrade on the hub's path: admission, origin check, `id` lookup, authentication, the
// client address's place and the count of upgrades being authenticated; and a stateful reconnect: the
// token's connection, its user, one reconnect at a time. What it learnt goes to the socket as SocketData.
import { isDeepStrictEqual } from 'node:util';
import type { HttpRequest, HttpResponse, us_socket_context_t } from 'uWebSockets.js';
import { overTls } from '../http/forwarded-proto.js';
import { refuseIllFramed } from '../http/framing-guard.js';
import { bearerChallenge } from '../http/auth.js';
import { sameRoutePath } from '../http/route-path.js';
import { addressKey } from './address-slots.js';
import type { HubConnection } from './connection.js';
import { bearerToken, connectionIdParam, newId, queryParam, type PendingNegotiation } from './negotiate.js';
import { ADDRESS_FULL, FULL_RETRY_AFTER_SECONDS, describe, isWebSocketHandshake, reply, stack, withUser, type HubRoutesContext } from './uws-hub-context.js';
import type { UwsSocket } from './uws-socket.js';

export interface SocketData {
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

interface ResumeRequest {
  readonly id: string;
  readonly token: string | undefined;
  readonly secKey: string;
  readonly extensions: string;
  readonly connection: HubConnection;
  readonly refuse: (status: number, text: string, headers?: Record<string, string>) => void;
}

/** The upgrade of every app of one attachHub (`secure`: the request came to the TLS one). */
export type HubUpgrade = (res: HttpResponse, req: HttpRequest, context: us_socket_context_t, secure: boolean) => void;

/** The upgrade handler for one attachHub, made once: the upgrades in progress are counted across its apps. */
export function hubUpgrade(ctx: HubRoutesContext): HubUpgrade {
  const { options, logger, core, counters, cors, authenticate } = ctx;
  /** Upgrades past the connection check whose authentication has not finished: they count as connections. */
  let upgrading = 0;
  const sameUser = options.sameUser ?? isDeepStrictEqual;

  function upgrade(res: HttpResponse, req: HttpRequest, context: us_socket_context_t, secure: boolean): void {
    // No handshake is the plain route's (plainRequestRoute), as is any other path of this length the next route's.
    if (!sameRoutePath(options.path, req.getUrl()) || !isWebSocketHandshake(req)) {
      req.setYield(true);
      return;
    }
    if (refuseIllFramed(res, req)) return;
    const refusal = ctx.admission(req, secure);
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
    if (!cors.admits(origin, req.getHeader('host'), overTls(secure, req.getHeader('x-forwarded-proto')))) return refuse(403, 'Origin not allowed');
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
    const unauthorized = (challenge: Record<string, string>): void => request.refuse(401, 'Unauthorized', challenge);
    withUser(ctx, { res, token, what: 'reconnect', aborted: () => aborted, unauthorized }, (user) => {
      if (!sameUser(connection.user, user)) {
        // No token, for a connection opened with one, is no user at all: unauthenticated, not another user.
        const anonymous = user === undefined;
        // Throttled: the client can repeat this as fast as it likes while the connection is kept.
        core.reconnectRefusals.info(`${connection.connectionId}: reconnect refused: ${anonymous ? 'it carries no token, the connection was opened with one' : 'its token names another user'}`);
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

  return upgrade;
}
