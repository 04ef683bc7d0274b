// What the hub's uWS routes share (uws-hub.ts builds it once per attachHub): the options they read, the
// answer they write, the test that tells a WebSocket handshake from a plain request, and the
// authentication of a request whose answer waits on it (negotiate, a stateful reconnect).
import type { HttpRequest, HttpResponse } from 'uWebSockets.js';
import { endBounded, type AnswerEnd } from '../http/bounded-end.js';
import { hasOption } from '../http/framing.js';
import { bearerChallenge } from '../http/auth.js';
import type { CorsPolicy } from '../http/cors.js';
import { statusLine } from '../http/status-text.js';
import type { Logger } from '../log/logger.js';
import type { HubCounters } from './counters.js';
import type { HubCore } from './hub.js';
import type { HubOptions } from './types.js';

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

/** The setup of one attachHub that its routes (uws-hub-requests.ts, uws-hub-upgrade.ts) work with. */
export interface HubRoutesContext {
  readonly options: UwsHubOptions;
  readonly logger: Logger;
  readonly core: HubCore;
  readonly counters: HubCounters;
  readonly cors: CorsPolicy;
  readonly authenticate: (token: string | undefined) => Promise<unknown>;
  readonly negotiatePath: string;
  /** Wraps a uWS callback so that nothing throws out of it (attachHub says how). */
  readonly guarded: <A extends unknown[]>(what: string, handler: (res: HttpResponse, ...rest: A) => void) => (res: HttpResponse, ...rest: A) => void;
  /** Asks `admit` about a request, while `req` is still valid. */
  readonly admission: (req: HttpRequest, secure: boolean) => ReturnType<NonNullable<UwsHubOptions['admit']>>;
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
export function isWebSocketHandshake(req: HttpRequest): boolean {
  return (
    req.getMethod().toLowerCase() === 'get' &&
    req.getHeader('upgrade').toLowerCase() === 'websocket' &&
    hasOption(req.getHeader('connection'), 'upgrade') &&
    req.getHeader('sec-websocket-version') === '13' &&
    WEBSOCKET_KEY.test(req.getHeader('sec-websocket-key'))
  );
}

/** How the negotiate route's answers end, their status aside (see endBounded). */
export type Ending = Omit<AnswerEnd, 'status'>;

/**
 * Writes an answer of the hub's HTTP routes. Every one says `nosniff`, as the API's answers do
 * (pipeline.ts): a browser takes each body as the type it is sent as, never sniffs one for HTML.
 */
export function reply(res: HttpResponse, status: number, body: string, headers: Record<string, string>, type = 'text/plain; charset=utf-8', end: Ending = {}): void {
  res.writeStatus(statusLine(status, ''));
  for (const [k, v] of Object.entries(headers)) res.writeHeader(k, v);
  if (body) res.writeHeader('Content-Type', type);
  res.writeHeader('X-Content-Type-Options', 'nosniff');
  endBounded(res, body, { ...end, status });
}

/** What a client refused for a full hub is told to wait: connections end every few seconds on a busy hub. */
export const FULL_RETRY_AFTER_SECONDS = 5;

/**
 * The answer to a client whose address holds as many connections as one may (Hub.MaximumConnectionsPerAddress):
 * at the WebSocket upgrade, and at negotiate for as many waiting negotiations.
 */
export const ADDRESS_FULL = { status: 429, text: 'Too many connections from this address', headers: { 'Retry-After': String(FULL_RETRY_AFTER_SECONDS) } } as const;

export const describe = (e: unknown): string => (e instanceof Error ? e.message : String(e));
export const stack = (e: unknown): string => (e instanceof Error ? (e.stack ?? e.message) : String(e));

/** A request whose answer waits on its token (negotiate, a stateful reconnect's upgrade). */
export interface AwaitingUser {
  res: HttpResponse;
  token: string | undefined;
  /** What the request is, in the log lines about it. */
  what: string;
  aborted: () => boolean;
  /** Answers a refused token, given the bearer challenge's headers. */
  unauthorized: (headers: Record<string, string>) => void;
}

/**
 * Authenticates the token of a request whose answer waits on it: a refusal is logged (Debug, after
 * `what`) and answered by `unauthorized` with the bearer challenge; `proceed` gets the user. Nothing is
 * written once the request is aborted.
 */
export function withUser(ctx: HubRoutesContext, request: AwaitingUser, proceed: (user: unknown) => void): void {
  const { res, token, what, aborted, unauthorized } = request;
  const { logger } = ctx;
  void (async () => {
    let user: unknown;
    try {
      user = await ctx.authenticate(token);
    } catch (e) {
      logger.debug(`${what} refused: ${describe(e)}`);
      if (!aborted()) res.cork(() => unauthorized({ 'WWW-Authenticate': bearerChallenge(e) }));
      return;
    }
    if (!aborted()) proceed(user);
  })().catch((e: unknown) => logger.error(`${what} failed: ${stack(e)}`));
}
