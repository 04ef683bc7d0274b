// The hub's public contract: what hub methods see (HubCallContext), how they are registered
// (HubOptions.methods) and what the application can do with a running hub (VoiceHubServer).
import type { CorsPolicy } from '../http/cors.js';
import type { Logger } from '../log/logger.js';
import type { ProtocolName } from './messages.js';
import type { HubParameter } from './binder.js';
import type { MessageBudget } from './rate-limit.js';

/** What a hub method knows about its caller. Valid after the call returns; calls on a closed connection do nothing. */
export interface HubCallContext {
  readonly connectionId: string;
  /** What `authenticate` returned for this connection's token (undefined without a token). */
  readonly user?: unknown;
  /** 'json' sends byte arrays as Base64 text; 'messagepack' as binary (Uint8Array on receipt). */
  readonly protocol: ProtocolName;
  /** Joining twice is harmless. Membership ends with the connection (it does not survive a reconnect). */
  joinGroup(name: string): void;
  leaveGroup(name: string): void;
  isInGroup(name: string): boolean;
  /** The groups the caller is in (a snapshot). */
  groups(): string[];
  /** Invokes a client handler on the caller only (no completion expected). */
  sendToCaller(target: string, ...args: unknown[]): void;
}

/**
 * A hub method. Its return value (or resolved value) becomes the completion result; a thrown
 * HubError reaches the caller as `... HubException: <message>`, any other error without details.
 */
export type HubMethod = (ctx: HubCallContext, args: unknown[]) => unknown;

export interface HubMethodEntry {
  readonly handler: HubMethod;
  /**
   * The parameters: a count (any types) or the type of each. Arguments that do not bind fail the
   * invocation with a completion error, as ASP.NET's binder does, in either protocol.
   */
  readonly args: number | readonly HubParameter[];
}

export interface HubOptions {
  /** The hub path, e.g. '/voice-hub'; negotiate is served at `${path}/negotiate`. */
  readonly path: string;
  /** Method name -> entry. Names match case-insensitively, as in ASP.NET. */
  readonly methods: Readonly<Record<string, HubMethodEntry>>;
  /** Per message, framing included (Hub.MaximumReceiveMessageSize). */
  readonly maximumReceiveMessageSize: number;
  /**
   * Per WebSocket frame after the handshake (Hub.MaximumFrameSize), never less than one message of
   * the largest size; the transport refuses larger frames before reading them.
   */
  readonly maximumFrameSize: number;
  /** Messages read from a connection in one event-loop turn (Hub.MessagesPerTurn). */
  readonly messagesPerTurn: number;
  /**
   * Message budgets per connection: before it authenticated (token or group joined) and after; and per
   * client address (IPv6: one /64 prefix), shared by all its connections before they authenticated
   * and kept across them (absent: none).
   */
  readonly budgets: { readonly unauthenticated: MessageBudget; readonly authenticated: MessageBudget; readonly unauthenticatedPerAddress?: MessageBudget };
  /** A ping is sent when nothing else was sent for this long (Hub.KeepAliveInterval). */
  readonly keepAliveIntervalMs: number;
  /** A connection that sent nothing for this long is closed (Hub.ClientTimeout). */
  readonly clientTimeoutMs: number;
  /** Default 15 000. */
  readonly handshakeTimeoutMs?: number;
  /** Unused negotiations expire after this long (default 30 000). */
  readonly negotiationTtlMs?: number;
  /** At most this many unused negotiations are kept; the oldest is dropped first (default 10 000). */
  readonly maxPendingNegotiations?: number;
  /**
   * At most this many hub connections at once, counting those awaiting a stateful reconnect and
   * upgrades being authenticated; a WebSocket upgrade beyond it is refused with 503 (Hub.MaximumConnections).
   */
  readonly maximumConnections: number;
  /**
   * Connections one client address may hold at once (IPv6: one /64 prefix), upgrades being authenticated
   * included; a WebSocket upgrade beyond it is refused with 429 (Hub.MaximumConnectionsPerAddress).
   * 0 or absent: no limit.
   */
  readonly maximumConnectionsPerAddress?: number;
  /** A connection with more unsent bytes than this is closed as too slow (default 1 MiB). */
  readonly maxBufferedBytes?: number;
  /**
   * Unsent bytes of all connections together past which one holding more than 64 KiB is closed as too
   * slow at its next send (Hub.MaximumUnsentBytes; default 32 MiB; unsent-account.ts).
   */
  readonly maxUnsentBytes?: number;
  /**
   * The CORS policy negotiate answers with and the `Origin` check of negotiate and the WebSocket upgrade
   * (the one the HTTP API uses). Without it no origin is listed: only requests without an Origin or
   * from the service's own pages are admitted.
   */
  readonly cors?: CorsPolicy;
  /**
   * Called with the bearer token (`access_token` query or `Authorization: Bearer`), or undefined.
   * Its result is `ctx.user`; if it throws (or rejects) the request is answered 401.
   */
  readonly authenticate?: (token: string | undefined) => unknown;
  /**
   * SignalR's stateful reconnect (absent: never offered). Offered at negotiate to clients that ask;
   * a connection whose socket drops then waits `disconnectTimeoutMs` for the client to reconnect with
   * its connection token, keeping at most `bufferSize` unacknowledged bytes to send again.
   */
  readonly statefulReconnect?: { readonly bufferSize: number; readonly disconnectTimeoutMs: number };
  /**
   * Whether a reconnect's token names the same user as the connection's: a token for someone else is
   * refused (403). Default: deep equality of what `authenticate` returned.
   */
  readonly sameUser?: (original: unknown, presented: unknown) => boolean;
  readonly logger: Logger;
  /** The connection ended for good (with stateful reconnect: not while it waits for the client to come back). */
  readonly onConnectionClosed?: (connectionId: string) => void;
}

export interface CloseReason {
  readonly error?: string;
  /** Shutdown: true, so clients reconnect; auth-type failures: false, so they stop. */
  readonly allowReconnect: boolean;
}

export interface VoiceHubServer {
  /** Invokes `target` on every member of `group`, in either protocol. */
  sendToGroup(group: string, target: string, ...args: unknown[]): void;
  /**
   * Invokes `target` on one connection; false when it is not (or no longer) connected. A connection
   * waiting for a stateful reconnect keeps the message for its client (true).
   */
  sendToConnection(connectionId: string, target: string, ...args: unknown[]): boolean;
  /** The groups a connection is in; empty for an unknown connection. */
  groupsOf(connectionId: string): string[];
  /**
   * Each connected member of `group` with the bytes it has been given and not yet sent
   * (HubConnection.unsentBytes): what a sender to the group can wait on before a member is ended as too
   * slow. A member waiting for its stateful reconnect is not listed: it cannot drain meanwhile.
   */
  groupUnsent(group: string, visit: (connectionId: string, unsent: number) => void): void;
  /** Connections, handshake done or not, including those waiting for a stateful reconnect. */
  connectionCount(): number;
  /** Counters and gauges for /health and logs. */
  stats(): Record<string, number>;
  /**
   * Sends a Close message to every connection and closes it; drops unused negotiations. With `graceMs`,
   * the sockets of connections that got the message stay open until their clients close them or the
   * grace ends: a client still sending when its socket is closed draws a TCP reset, which would make it
   * lose the message unread. Resolves when every connection is closed.
   */
  closeAll(reason: CloseReason, graceMs?: number): Promise<void>;
}
