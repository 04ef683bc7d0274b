// The transport-free core of the hub: live connections, negotiations, groups, the heartbeat that
// drives timeouts and keep-alives, and the VoiceHubServer facade the application uses. The uWS glue
// (uws-hub.ts) feeds it sockets. Connections with stateful reconnect stay here while Disconnected,
// findable by their connection token, until resumed or past the disconnect timeout.
import { AddressBudgets } from './address-budgets.js';
import { AddressSlots } from './address-slots.js';
import { HubConnection } from './connection.js';
import { ConnectionState, type ConnectionEnv } from './connection-env.js';
import { newCounters } from './counters.js';
import { HubDispatcher } from './dispatcher.js';
import { GroupRegistry } from './groups.js';
import type { HubSocket } from './hub-socket.js';
import { jsonProtocol } from './json-protocol.js';
import { ThrottledLog } from '../log/throttled.js';
import { invocation, type HubProtocol, type ProtocolName } from './messages.js';
import { createMessagePackProtocol } from './msgpack-protocol.js';
import { NegotiationStore, type PendingNegotiation } from './negotiate.js';
import type { CloseReason, HubOptions, VoiceHubServer } from './types.js';
import { monotonicMs } from '../monotonic-clock.js';
import { DEFAULT_MAX_UNSENT_BYTES, UnsentAccount } from './unsent-account.js';

export const DEFAULT_HANDSHAKE_TIMEOUT_MS = 15_000;
export const DEFAULT_NEGOTIATION_TTL_MS = 30_000;
export const DEFAULT_MAX_PENDING_NEGOTIATIONS = 10_000;
export const DEFAULT_MAX_BUFFERED_BYTES = 1024 * 1024;

/** The frame limit in force: a frame must be able to carry one message of the largest size. */
export const frameLimit = (options: Pick<HubOptions, 'maximumFrameSize' | 'maximumReceiveMessageSize'>): number =>
  Math.max(options.maximumFrameSize, options.maximumReceiveMessageSize);

/**
 * The line that sums up the closings a window did not log one by one: how many, and the last of them, as
 * every such summary says it (docs/operations.md, "Logging"). The hub's counters are read by no one
 * outside the process, so the line names nothing else to look at.
 */
export const closingsSummary = (count: number, seconds: number, last: string): string =>
  `${count} more connections closed for misbehaving in the last ${seconds} s; the last: ${last}`;

export class HubCore {
  readonly negotiations: NegotiationStore;
  readonly env: ConnectionEnv;
  private readonly connections = new Map<string, HubConnection>();
  /** Connections that negotiated stateful reconnect, by connection token. */
  private readonly resumable = new Map<string, HubConnection>();
  private readonly groups = new GroupRegistry<HubConnection>();
  private readonly protocols: Readonly<Record<ProtocolName, HubProtocol>>;
  private readonly tickMs: number;
  private timer: NodeJS.Timeout | undefined;
  /** While closeAll waits out its grace: called when the last connection has closed. */
  private allClosed: (() => void) | undefined;
  /** Upgrades refused for a full hub: one line a minute, then a sum. */
  private readonly fullLog: ThrottledLog;
  /** Connections (and upgrades on their way) per client address (Hub.MaximumConnectionsPerAddress). */
  private readonly addresses: AddressSlots;
  /** The address key each connection was counted under, released when it ends for good. */
  private readonly addressOf = new Map<HubConnection, string>();
  /** Upgrades refused for an address holding its limit: one line a minute, then a sum. */
  private readonly addressLog: ThrottledLog;
  /** Negotiations refused for an address holding its limit: one line a minute, then a sum. */
  private readonly negotiationLog: ThrottledLog;
  /**
   * Stateful reconnects refused for naming another user (or none): a client that dropped its own stateful
   * connection can retry the upgrade thousands of times a second for as long as the connection is kept,
   * so a line each would let it write the journal full. 20 lines a minute, then a sum.
   */
  readonly reconnectRefusals: ThrottledLog;

  constructor(private readonly options: HubOptions) {
    const handshakeTimeoutMs = options.handshakeTimeoutMs ?? DEFAULT_HANDSHAKE_TIMEOUT_MS;
    const now = (): number => monotonicMs();
    this.protocols = { json: jsonProtocol, messagepack: createMessagePackProtocol(options.maximumReceiveMessageSize) };
    this.addresses = new AddressSlots(options.maximumConnectionsPerAddress ?? 0);
    this.addressLog = new ThrottledLog(options.logger, 1, 60_000, now,
      (count) => `${count} more WebSocket upgrades refused in the last minute: their address held as many connections as one address may (${this.addresses.max})`);
    this.negotiationLog = new ThrottledLog(options.logger, 1, 60_000, now,
      (count) => `${count} more negotiations refused in the last minute: their address held as many pending negotiations as one address may hold connections (${this.addresses.max})`);
    this.reconnectRefusals = new ThrottledLog(options.logger, 20, 60_000, now,
      (count, seconds, last) => `${count} more stateful reconnects refused in the last ${seconds} s; the last: ${last}`);
    this.fullLog = new ThrottledLog(options.logger, 1, 60_000, now,
      (count) => `${count} more WebSocket upgrades refused in the last minute: the hub holds its ${options.maximumConnections} connections`);
    const maxPendingNegotiations = options.maxPendingNegotiations ?? DEFAULT_MAX_PENDING_NEGOTIATIONS;
    this.env = {
      dispatcher: new HubDispatcher(options.methods, options.logger),
      groups: this.groups,
      counters: newCounters(),
      logger: options.logger,
      // 20 lines per minute at most about connections closed for misbehaving, then a sum.
      closings: new ThrottledLog(options.logger, 20, 60_000, now, closingsSummary),
      protocols: this.protocols,
      unsent: new UnsentAccount(options.maxUnsentBytes ?? DEFAULT_MAX_UNSENT_BYTES),
      // As many addresses as the hub keeps state for clients anyway: each connection and pending
      // negotiation may come from another; past that, an address unused the longest starts afresh.
      addressBudgets: new AddressBudgets(options.budgets.unauthenticatedPerAddress, options.maximumConnections + maxPendingNegotiations),
      now,
      ended: (connection) => this.ended(connection),
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
        statefulReconnectBufferSize: options.statefulReconnect?.bufferSize ?? 0,
      },
    };
    this.negotiations = new NegotiationStore(
      options.negotiationTtlMs ?? DEFAULT_NEGOTIATION_TTL_MS,
      maxPendingNegotiations,
      // An address may wait for as many connections as it may hold.
      options.maximumConnectionsPerAddress ?? 0,
    );
    // A quarter of the shortest interval keeps pings and timeouts within 25 % of their setting.
    const shortest = Math.min(options.keepAliveIntervalMs, options.clientTimeoutMs, handshakeTimeoutMs);
    this.tickMs = Math.min(1000, Math.max(20, Math.floor(shortest / 4)));
  }

  /**
   * `address`: the client's address key. `statefulReconnect`: the client asked for it; granted in
   * version 1 when the hub allows it. Undefined when the address holds as many pending negotiations as
   * it may hold connections (counted and logged, once a minute at most).
   */
  negotiate(version: 0 | 1, user: unknown, address: string, statefulReconnect = false): PendingNegotiation | undefined {
    this.ensureTimer();
    const stateful = statefulReconnect && version === 1 && this.options.statefulReconnect !== undefined;
    const negotiation = this.negotiations.create(version, user, this.env.now(), address, stateful);
    if (negotiation === undefined) {
      this.env.counters.negotiationsRefusedPerAddress++;
      this.negotiationLog.warn(`negotiate refused: ${address} holds as many pending negotiations as one address may hold connections (Hub.MaximumConnectionsPerAddress: ${this.addresses.max}; 429 to the client)`);
      return undefined;
    }
    this.env.counters.negotiations++;
    return negotiation;
  }

  /**
   * `resumeKey`: the connection token, when negotiate agreed to stateful reconnect. `address`: the key
   * its upgrade took a place under (takeAddress), now the connection's until it ends for good.
   */
  open(connectionId: string, user: unknown, socket: HubSocket, resumeKey?: string, address?: string): HubConnection {
    const connection = new HubConnection(connectionId, user, socket, this.env, resumeKey, address);
    this.connections.set(connectionId, connection);
    if (resumeKey !== undefined) this.resumable.set(resumeKey, connection);
    this.env.counters.connectionsOpened++;
    this.options.logger.debug(`connection ${connectionId} opened`);
    this.ensureTimer();
    // Last: should anything above throw, the caller gives the place back (uws-hub.ts, open).
    if (address !== undefined) this.addressOf.set(connection, address);
    return connection;
  }

  /** A socket closed; `dropped`: by the network (HubConnection.onSocketClosed). The connection ends, or waits for a reconnect. */
  closed(connection: HubConnection, socket?: HubSocket, dropped = false): void {
    if (connection.onSocketClosed(socket, dropped)) {
      this.env.counters.disconnects++;
      this.options.logger.debug(`connection ${connection.connectionId} dropped; kept ${this.disconnectTimeoutMs} ms for a reconnect`);
    }
  }

  /**
   * The connection a WebSocket request with `id=<key>` reconnects, when it uses stateful reconnect and
   * has not ended. Nothing is held for the reconnect while its token is checked: as in ASP.NET Core,
   * whose authentication runs before its dispatcher and whose dispatcher cancels the transport before,
   * the reconnect whose socket opens last takes the place of any socket before it (resume), be it the
   * one the hub still sees open after a radio reset or another reconnect's (the official clients try a
   * stateful reconnect once: refused, they lose what they had buffered). Undefined: no such connection
   * (any more); the key may still be a negotiation's.
   */
  reconnectable(key: string): HubConnection | undefined {
    const connection = this.resumable.get(key);
    return connection?.isResumable() ? connection : undefined;
  }

  /** A connection id (or token) the hub knows: negotiated, connected, or waiting for a reconnect. */
  knows(key: string): boolean {
    return this.negotiations.has(key, this.env.now()) || this.resumable.has(key);
  }

  /** The reconnect's socket opened; false when the connection ended meanwhile (the socket must go). */
  resume(connection: HubConnection, socket: HubSocket): boolean {
    if (!connection.isResumable()) return false;
    connection.resume(socket);
    this.options.logger.debug(`connection ${connection.connectionId} resumed`);
    return true;
  }

  /**
   * Whether one more connection may open, with `opening` others already on their way (upgrades being
   * authenticated); a refusal is counted and logged, once a minute at most.
   */
  hasRoomFor(opening: number): boolean {
    const limit = this.options.maximumConnections;
    if (this.connections.size + opening < limit) return true;
    this.env.counters.upgradesRefusedFull++;
    this.fullLog.warn(`WebSocket upgrade refused: the hub holds ${limit} connections, its limit (503 to the client)`);
    return false;
  }

  /**
   * Takes a place for one more connection from `address` (an addressKey), for an upgrade about to be
   * authenticated; false when that address holds its limit (counted and logged, once a minute at most).
   * The place goes to the connection when it opens, or back with releaseAddress when the upgrade fails.
   */
  takeAddress(address: string): boolean {
    if (this.addresses.take(address)) return true;
    this.env.counters.upgradesRefusedPerAddress++;
    this.addressLog.warn(`WebSocket upgrade refused: ${address} holds as many connections as one address may (Hub.MaximumConnectionsPerAddress: ${this.addresses.max}; 429 to the client)`);
    return false;
  }

  releaseAddress(address: string): void {
    this.addresses.release(address);
  }

  private get disconnectTimeoutMs(): number {
    return this.options.statefulReconnect?.disconnectTimeoutMs ?? 0;
  }

  /** The connection ended for good: forget it and tell the application. */
  private ended(connection: HubConnection): void {
    if (this.connections.get(connection.connectionId) !== connection) return;
    this.connections.delete(connection.connectionId);
    const address = this.addressOf.get(connection);
    if (address !== undefined) {
      this.addressOf.delete(connection);
      this.addresses.release(address);
    }
    if (this.connections.size === 0) this.allClosed?.();
    if (connection.resumeKey !== undefined && this.resumable.get(connection.resumeKey) === connection) this.resumable.delete(connection.resumeKey);
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
      // A stateful connection waiting for its client keeps the message for after the reconnect.
      if (!connection || (connection.state !== ConnectionState.Connected && connection.state !== ConnectionState.Disconnected)) return false;
      connection.send(invocation(target, args));
      return true;
    },
    groupsOf: (connectionId) => {
      const connection = this.connections.get(connectionId);
      return connection ? this.groups.groupsOf(connection) : [];
    },
    groupUnsent: (group, visit) => {
      // A member whose socket is gone (waiting for its stateful reconnect) cannot drain: not listed.
      for (const member of this.groups.membersOf(group) ?? []) {
        if (member.state === ConnectionState.Connected) visit(member.connectionId, member.unsentBytes());
      }
    },
    connectionCount: () => this.connections.size,
    stats: () => ({
      ...this.env.counters,
      connections: this.connections.size,
      connectionsAwaitingReconnect: this.awaitingReconnect(),
      pendingNegotiations: this.negotiations.waitingCount(),
      groups: this.groups.groupCount(),
      clientAddresses: this.addresses.size,
      unsentBytes: this.env.unsent.total,
    }),
    closeAll: (reason: CloseReason, graceMs = 0) => this.closeAll(reason, graceMs),
  };

  /**
   * Encodes once per protocol present in the group (on first need), then hands the same frame to each
   * member: a stateful member keeps a reference to it for replay (HubConnection.sendGroupFrame).
   */
  private sendToGroup(group: string, target: string, args: unknown[]): void {
    const members = this.groups.membersOf(group);
    if (!members) return;
    const message = invocation(target, args);
    let json: string | Uint8Array | undefined;
    let messagepack: string | Uint8Array | undefined;
    let failed: Set<ProtocolName> | undefined;
    // A member that is closed while this runs (too slow) leaves the set: Set iteration allows that.
    for (const member of members) {
      const protocol = member.protocol;
      if (!protocol || failed?.has(protocol.name)) continue;
      let data = protocol.name === 'json' ? json : messagepack;
      if (data === undefined) {
        try {
          data = protocol.encode(message);
        } catch (e) {
          (failed ??= new Set()).add(protocol.name);
          this.options.logger.error(`cannot encode '${target}' for group ${group}: ${e instanceof Error ? e.message : String(e)}`);
          continue;
        }
        if (protocol.name === 'json') json = data;
        else messagepack = data;
      }
      member.sendGroupFrame(data);
    }
  }

  private closeAll(reason: CloseReason, graceMs: number): Promise<void> {
    this.negotiations.clearWaiting();
    const flushLogs = (): void => {
      this.env.closings.flush();
      this.fullLog.flush();
      this.addressLog.flush();
      this.negotiationLog.flush();
      this.reconnectRefusals.flush();
    };
    // With a grace, a connection past its handshake gets its Close message and its client closes the
    // socket; any other connection closes now.
    for (const connection of [...this.connections.values()]) {
      if (!(graceMs > 0 && connection.sayGoodbye(reason.error, reason.allowReconnect))) connection.close(reason.error, reason.allowReconnect);
    }
    if (this.connections.size === 0) {
      flushLogs();
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(deadline);
        this.allClosed = undefined;
        for (const connection of [...this.connections.values()]) connection.close(reason.error, reason.allowReconnect);
        flushLogs();
        // The last close is reported from inside uWS, which writes its close frame after the callback
        // returns; resolving now would let a caller exit the process before that write.
        setImmediate(resolve);
      };
      const deadline = setTimeout(done, graceMs);
      this.allClosed = done;
    });
  }

  private awaitingReconnect(): number {
    let count = 0;
    for (const connection of this.connections.values()) if (connection.state === ConnectionState.Disconnected) count++;
    return count;
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
      const spending = this.env.addressBudgets.sweep(now);
      for (const connection of [...this.connections.values()]) {
        const since = connection.disconnectedSince;
        if (since === undefined) connection.tick(now);
        else if (now - since >= this.disconnectTimeoutMs) connection.expire();
      }
      if (this.connections.size === 0 && this.negotiations.waitingCount() === 0 && spending === 0) {
        clearInterval(this.timer);
        this.timer = undefined;
      }
    } catch (e) {
      this.options.logger.error(`hub heartbeat failed: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`);
    }
  }
}
