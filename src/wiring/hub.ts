// The SignalR hub on every endpoint, with the device-facing methods over the voice sessions.
import { voiceHubMethods } from '../api/hub-methods.js';
import type { Principal } from '../auth/tokens.js';
import type { VerifyToken } from '../auth/verify.js';
import type { AppConfig } from '../config/types.js';
import { attachHub, type VoiceHubServer } from '../hub/index.js';
import type { Logger } from '../log/logger.js';
import type { VoiceSessionService } from '../voice/sessions.js';
import type { Endpoints } from './endpoints.js';

export interface HubDeps {
  endpoints: Endpoints;
  verifyToken: VerifyToken;
  sessions: VoiceSessionService;
  logger: Logger;
}

const samePrincipal = (a: Principal | undefined, b: Principal | undefined): boolean =>
  a === undefined || b === undefined ? a === b : a.role === b.role && a.sub === b.sub;

export function createHub(config: AppConfig, deps: HubDeps): VoiceHubServer {
  const { endpoints, verifyToken, sessions } = deps;
  return attachHub(endpoints.apps, {
    path: '/voice-hub',
    methods: voiceHubMethods({
      verifyToken,
      getSession: (id) => sessions.get(id),
      joined: (id, connectionId) => sessions.attach(id, connectionId),
      sendAudio: (id, opus) => sessions.sendAudio(id, opus),
      logger: deps.logger.child('Hub'),
    }),
    maximumReceiveMessageSize: config.Hub.MaximumReceiveMessageSize,
    maximumConnections: config.Hub.MaximumConnections,
    maximumConnectionsPerAddress: config.Hub.MaximumConnectionsPerAddress,
    maxUnsentBytes: config.Hub.MaximumUnsentBytes,
    maximumFrameSize: config.Hub.MaximumFrameSize,
    messagesPerTurn: config.Hub.MessagesPerTurn,
    budgets: {
      unauthenticated: { perSecond: config.Hub.UnauthenticatedMessageRate, burst: config.Hub.UnauthenticatedMessageBurst },
      authenticated: { perSecond: config.Hub.MessageRate, burst: config.Hub.MessageBurst },
      // Either at 0 switches it off: a bucket that never refills, or never holds a message, is no budget.
      ...(config.Hub.UnauthenticatedAddressMessageRate > 0 && config.Hub.UnauthenticatedAddressMessageBurst > 0
        ? { unauthenticatedPerAddress: { perSecond: config.Hub.UnauthenticatedAddressMessageRate, burst: config.Hub.UnauthenticatedAddressMessageBurst } }
        : {}),
    },
    keepAliveIntervalMs: config.Hub.KeepAliveInterval,
    clientTimeoutMs: config.Hub.ClientTimeout,
    cors: endpoints.cors,
    ...(config.Hub.AllowStatefulReconnects
      ? { statefulReconnect: { bufferSize: config.Hub.StatefulReconnectBufferSize, disconnectTimeoutMs: config.Hub.DisconnectTimeout } }
      : {}),
    // A reconnect's token must be of the same device (or admin) as the connection's, whatever its expiry.
    sameUser: (a, b) => samePrincipal(a as Principal | undefined, b as Principal | undefined),
    // A connection-level token is optional (JoinSession carries the device token), but a bad one is refused.
    authenticate: (token) => (token === undefined ? undefined : verifyToken(token)),
    admit: endpoints.gate,
    maxBodyBytes: config.Server.MaxBodyBytes,
    logger: deps.logger.child('Hub'),
    // The sessions this connection joined wait for their device to reconnect (VoiceService.DeviceReconnectGracePeriod).
    onConnectionClosed: (connectionId) => sessions.release(connectionId),
  });
}
