// The transport-free core of the hub: live connections, negotiations, groups, the heartbeat that
// drives timeouts and keep-alives, and the VoiceHubServer facade the application uses. The uWS glue
// (uws-hub.ts) feeds it sockets.
import { HubConnection, type ConnectionEnv, type HubSocket } from './connection.js';
import { newCounters } from './counters.js';
import { HubDispatcher } from './dispatcher.js';
import { GroupRegistry } from './groups.js';
import { jsonProtocol } from './json-protocol.js';
import { ThrottledLog } from './log-throttle.js';
import { invocation, type HubProtocol, type ProtocolName } from './messages.js';
import { createMessagePackProtocol } from './msgpack-protocol.js';
import { NegotiationStore, type PendingNegotiation } from './negotiate.js';
import type { CloseReason, HubOptions, VoiceHubServer } from './types.js';

export const DEFAULT_HANDSHAKE_TIMEOUT_MS = 15_000;
export const DEFAULT_NEGOTIATION_TTL_MS = 30_000;
export const DEFAULT_MAX_PENDING_NEGOTIATIONS = 10_000;
export const DEFAULT_MAX_BUFFERED_BYTES = 1024 * 1024;

/** The frame limit in force: a frame must be able to carry one message of the largest size. */
export const frameLimit = (options: Pick<HubOptions, 'maximumFrameSize' | 'maximumReceiveMessageSize'>): number =>
  Math.max(options.maximumFrameSize, options.maximumReceiveMessageSize);

export class HubCore {
  readonly negotiations: NegotiationStore;
  readonly env: ConnectionEnv;
  private readonly connections = new Map<string, HubConnection>();
  private readonly groups = new GroupRegistry<HubConnection>();
  private readonly protocols: Readonly<Record<ProtocolName, HubProtocol>>;
  private readonly tickMs: number;
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly options: HubOptions) {
    const handshakeTimeoutMs = options.handshakeTimeoutMs ?? DEFAULT_HANDSHAKE_TIMEOUT_MS;
    const now = (): number => performance.now();
    this.protocols = { json: jsonProtocol, messagepack: createMessagePackProtocol(options.maximumReceiveMessageSize) };
    this.env = {
      dispatcher: new HubDispatcher(options.methods, options.logger),
      groups: this.groups,
      counters: newCounters(),
      logger: options.logger,
      // 20 lines per minute at most about connections closed for misbehaving, then a sum.
      closings: new ThrottledLog(options.logger, 20, 60_000, now),
      protocols: this.protocols,
      now,
      limits: {
        maximumReceiveMessageSize: options.maximumReceiveMessageSize,
        keepAliveIntervalMs: options.keepAliveIntervalMs,
        clientTimeoutMs: options.clientTimeoutMs,
        handshakeTimeoutMs,
        maxBufferedBytes: options.maxBufferedBytes ?? DEFAULT_MAX_BUFFERED_BYTES,
        maxFrameBytes: frameLimit(options),
        // Room for a full frame being read and the next one arriving meanwhile; a client that keeps
        // more waiting sends faster than its messages are handled. uWS 20.30 cannot pause reading a
        // WebSocket, so closing such a client is the only back-pressure there is.
        maxInboxBytes: 2 * frameLimit(options),
        messagesPerTurn: options.messagesPerTurn,
        unauthenticatedBudget: options.budgets.unauthenticated,
        authenticatedBudget: options.budgets.authenticated,
      },
    };
    this.negotiations = new NegotiationStore(
      options.negotiationTtlMs ?? DEFAULT_NEGOTIATION_TTL_MS,
      options.maxPendingNegotiations ?? DEFAULT_MAX_PENDING_NEGOTIATIONS,
    );
    // A quarter of the shortest interval keeps pings and timeouts within 25 % of their setting.
    const shortest = Math.min(options.keepAliveIntervalMs, options.clientTimeoutMs, handshakeTimeoutMs);
    this.tickMs = Math.min(1000, Math.max(20, Math.floor(shortest / 4)));
  }

  negotiate(version: 0 | 1, user: unknown): PendingNegotiation {
    this.env.counters.negotiations++;
    this.ensureTimer();
    return this.negotiations.create(version, user, this.env.now());
  }

  open(connectionId: string, user: unknown, socket: HubSocket): HubConnection {
    const connection = new HubConnection(connectionId, user, socket, this.env);
    this.connections.set(connectionId, connection);
    this.env.counters.connectionsOpened++;
    this.options.logger.debug(`connection ${connectionId} opened`);
    this.ensureTimer();
    return connection;
  }

  /** The socket closed: forget the connection and tell the application. */
  closed(connection: HubConnection): void {
    connection.onSocketClosed();
    if (this.connections.get(connection.connectionId) !== connection) return;
    this.connections.delete(connection.connectionId);
    this.options.logger.debug(`connection ${connection.connectionId} closed`);
    try {
      this.options.onConnectionClosed?.(connection.connectionId);
    } catch (e) {
      this.options.logger.error(`onConnectionClosed(${connection.connectionId}) threw: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`);
    }
  }

  readonly server: VoiceHubServer = {
    sendToGroup: (group, target, ...args) => this.sendToGroup(group, target, args),
    sendToConnection: (connectionId, target, ...args) => {
      const connection = this.connections.get(connectionId);
      if (!connection || connection.state !== 'Connected') return false;
      connection.send(invocation(target, args));
      return true;
    },
    groupsOf: (connectionId) => {
      const connection = this.connections.get(connectionId);
      return connection ? this.groups.groupsOf(connection) : [];
    },
    connectionCount: () => this.connections.size,
    stats: () => ({
      ...this.env.counters,
      connections: this.connections.size,
      pendingNegotiations: this.negotiations.waitingCount(),
      groups: this.groups.groupCount(),
    }),
    closeAll: (reason: CloseReason) => {
      this.negotiations.clearWaiting();
      for (const connection of [...this.connections.values()]) connection.close(reason.error, reason.allowReconnect);
    },
  };

  /**
   * Encodes once per protocol present in the group (on first need), then hands the same frame to each
   * member: each connection's sendFrame() is where an encoded frame becomes its own.
   */
  private sendToGroup(group: string, target: string, args: unknown[]): void {
    const members = this.groups.membersOf(group);
    if (!members) return;
    const message = invocation(target, args);
    let json: string | Uint8Array | undefined;
    let messagepack: string | Uint8Array | undefined;
    const failed = new Set<ProtocolName>();
    // A member that is closed while this runs (too slow) leaves the set: Set iteration allows that.
    for (const member of members) {
      const protocol = member.protocol;
      if (!protocol || failed.has(protocol.name)) continue;
      let data = protocol.name === 'json' ? json : messagepack;
      if (data === undefined) {
        try {
          data = protocol.encode(message);
        } catch (e) {
          failed.add(protocol.name);
          this.options.logger.error(`cannot encode '${target}' for group ${group}: ${e instanceof Error ? e.message : String(e)}`);
          continue;
        }
        if (protocol.name === 'json') json = data;
        else messagepack = data;
      }
      member.sendFrame(data);
    }
  }

  private ensureTimer(): void {
    if (this.timer) return;
    this.timer = setInterval(() => this.tick(), this.tickMs);
    // The heartbeat alone must not keep the process alive.
    this.timer.unref();
  }

  private tick(): void {
    try {
      const now = this.env.now();
      this.env.counters.negotiationsExpired += this.negotiations.expire(now);
      for (const connection of [...this.connections.values()]) connection.tick(now);
      if (this.connections.size === 0 && this.negotiations.waitingCount() === 0) {
        clearInterval(this.timer);
        this.timer = undefined;
      }
    } catch (e) {
      this.options.logger.error(`hub heartbeat failed: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`);
    }
  }
}
