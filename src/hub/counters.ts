// Hub counters reported by VoiceHubServer.stats(): what happened since start, for /health and logs.

export interface HubCounters {
  connectionsOpened: number;
  negotiations: number;
  negotiationsExpired: number;
  upgradesRejected: number;
  /** Upgrades refused because the hub held its maximum of connections (counted in upgradesRejected too). */
  upgradesRefusedFull: number;
  /** Upgrades refused because their address held its maximum of connections (counted in upgradesRejected too). */
  upgradesRefusedPerAddress: number;
  /** Negotiations refused because their address held its maximum of pending ones (Hub.MaximumConnectionsPerAddress). */
  negotiationsRefusedPerAddress: number;
  handshakeFailures: number;
  handshakeTimeouts: number;
  messagesReceived: number;
  messagesSent: number;
  invocations: number;
  protocolErrors: number;
  oversizedMessages: number;
  clientTimeouts: number;
  slowClientsClosed: number;
  /** Frames refused here: before the handshake, more than a handshake; after it, over the frame limit. */
  framesTooLarge: number;
  /** Connections closed for receiving more than they could handle. */
  inboxOverflows: number;
  /** Connections closed for spending their message budget. */
  rateLimited: number;
  /** Stateful connections whose socket dropped (they wait for a reconnect). */
  disconnects: number;
  /** Stateful connections resumed on a new socket. */
  reconnects: number;
  /** Reconnect attempts refused (unknown or expired token, one in progress, another user). */
  reconnectsRefused: number;
  /** Stateful connections ended because no reconnect came within the disconnect timeout. */
  reconnectWindowsExpired: number;
  /** Stateful connections ended because the client acknowledged too little (held-back messages over the bound). */
  replayOverflows: number;
}

export function newCounters(): HubCounters {
  return {
    connectionsOpened: 0,
    negotiations: 0,
    negotiationsExpired: 0,
    upgradesRejected: 0,
    upgradesRefusedFull: 0,
    upgradesRefusedPerAddress: 0,
    negotiationsRefusedPerAddress: 0,
    handshakeFailures: 0,
    handshakeTimeouts: 0,
    messagesReceived: 0,
    messagesSent: 0,
    invocations: 0,
    protocolErrors: 0,
    oversizedMessages: 0,
    clientTimeouts: 0,
    slowClientsClosed: 0,
    framesTooLarge: 0,
    inboxOverflows: 0,
    rateLimited: 0,
    disconnects: 0,
    reconnects: 0,
    reconnectsRefused: 0,
    reconnectWindowsExpired: 0,
    replayOverflows: 0,
  };
}
