// What the hub gives each connection (its limits and the shared parts it works with) and the states a
// connection goes through: the hub, the reader and the connection all read these, so they stand apart
// from the connection's class.
import type { AddressBudgets } from './address-budgets.js';
import type { HubConnection } from './connection.js';
import type { HubCounters } from './counters.js';
import type { HubDispatcher } from './dispatcher.js';
import type { GroupRegistry } from './groups.js';
import type { Logger } from '../log/logger.js';
import type { ThrottledLog } from '../log/throttled.js';
import type { HubProtocol, ProtocolName } from './messages.js';
import type { MessageBudget } from './rate-limit.js';
import type { UnsentAccount } from './unsent-account.js';

/**
 * Disconnected: stateful reconnect only, the socket is gone and the connection waits for the client to
 * come back. Closing: the hub sent its Close message and leaves the socket for the client to close, so
 * that a client still sending reads the message before the socket goes (closeAll with a grace); nothing
 * more is read or sent.
 */
export const ConnectionState = { Handshaking: 'Handshaking', Connected: 'Connected', Disconnected: 'Disconnected', Closing: 'Closing', Closed: 'Closed' } as const;
export type ConnectionState = (typeof ConnectionState)[keyof typeof ConnectionState];

export interface ConnectionLimits {
  readonly maximumReceiveMessageSize: number;
  readonly keepAliveIntervalMs: number;
  readonly clientTimeoutMs: number;
  readonly handshakeTimeoutMs: number;
  readonly maxBufferedBytes: number;
  /** Largest WebSocket frame after the handshake (the transport refuses larger ones first). */
  readonly maxFrameBytes: number;
  /** Received bytes not read yet (a client sending faster than its messages are handled); more closes. */
  readonly maxInboxBytes: number;
  /** Messages read in one event-loop turn before the loop yields to other connections and timers. */
  readonly messagesPerTurn: number;
  /** Until the connection authenticated (a token on the connection, or a group joined). */
  readonly unauthenticatedBudget: MessageBudget;
  readonly authenticatedBudget: MessageBudget;
  /** Unacknowledged bytes past which a stateful connection stops sending until acks arrive (Hub.StatefulReconnectBufferSize). */
  readonly statefulReconnectBufferSize: number;
}

export interface ConnectionEnv {
  readonly dispatcher: HubDispatcher;
  readonly groups: GroupRegistry<HubConnection>;
  readonly counters: HubCounters;
  readonly logger: Logger;
  /** Where lines about connections closed for misbehaving go (throttled). */
  readonly closings: ThrottledLog;
  readonly limits: ConnectionLimits;
  /** What anonymous connections spend per client address (reader.ts charges it). */
  readonly addressBudgets: AddressBudgets;
  readonly protocols: Readonly<Record<ProtocolName, HubProtocol>>;
  /** What the transport holds unsent for all connections together (Hub.MaximumUnsentBytes). */
  readonly unsent: UnsentAccount;
  readonly now: () => number;
  /** The connection ended for good (not a drop it may come back from): the hub forgets it. */
  readonly ended: (connection: HubConnection) => void;
}
