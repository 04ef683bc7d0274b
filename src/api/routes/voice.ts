// Voice session endpoints: POST /api/voice/start, stop and message.
import { DomainError } from '../../errors.js';
import type { SessionRecord } from '../../store/types.js';
import { requireDeviceAccess } from '../../http/auth.js';
import { parseHost } from '../../host-names.js';
import type { RequestInfo, Route } from '../../http/router.js';
import { PROBLEM, ref } from '../openapi/components.js';
import { publicServerUrl } from '../../upstream/public-url.js';
import { sessionNotFound } from '../../voice/sessions.js';

/** What the routes need of the session service (src/voice/sessions.ts). */
export interface VoiceSessionsApi {
  start(req: { deviceId: string; userId: string; sessionConfig?: Record<string, unknown> }): Promise<SessionRecord>;
  stop(sessionId: string, reason?: string): Promise<SessionRecord>;
  sendText(sessionId: string, text: string, messageType: string): void;
  get(sessionId: string): SessionRecord | undefined;
}

export function sessionView(s: SessionRecord): Record<string, unknown> {
  return {
    id: s.id,
    sessionId: s.id,
    deviceId: s.deviceId,
    userId: s.userId,
    state: s.state,
    startTime: s.startTime,
    endTime: s.endTime,
    endReason: s.endReason,
    audioPacketsSent: s.audioPacketsSent,
    // Records written before the public form existed may still hold the full address.
    config: { ...s.config, serverUrl: publicServerUrl(s.config.serverUrl) },
  };
}

/**
 * The hub address as the device reached us: the scheme from TLS or X-Forwarded-Proto, the
 * authority from the Host header. Neither is copied as sent: the Host must be a well-formed
 * host[:port] (host filtering has already refused malformed and, with `AllowedHosts`, unlisted ones;
 * this is checked again here, since the value goes into a URL) and X-Forwarded-Proto `http` or `https`
 * (the first entry, which the proxy nearest the client set). An empty Host names the listening address.
 * Anything else is a 400 naming the header, before a session is started.
 */
export function hubUrl(request: RequestInfo, listeningAddress: (secure: boolean) => string): string {
  const refuse = (header: string, message: string): never => {
    throw new DomainError('invalid_argument', `The ${header} header cannot be used to address the hub.`, { [header]: [message] });
  };
  const forwarded = request.headers['x-forwarded-proto'];
  let secure = request.secure;
  if (forwarded !== undefined) {
    const first = forwarded.split(',')[0]!.trim().toLowerCase();
    if (first !== 'http' && first !== 'https') refuse('X-Forwarded-Proto', 'must be http or https');
    secure ||= first === 'https';
  }
  const host = request.headers.host ?? '';
  const authority = host === '' ? listeningAddress(request.secure) : (parseHost(host)?.authority ?? refuse('Host', 'must be a host name, an IPv4 address or a bracketed IPv6 address, with an optional port'));
  return `${secure ? 'wss' : 'ws'}://${authority}/voice-hub`;
}

// 401 and 403 follow from each route's `auth` and the server's configuration (the OpenAPI document).
const unknownSession = { description: 'Unknown session', ...PROBLEM.any };

export function voiceRoutes(sessions: VoiceSessionsApi, listeningAddress: (secure: boolean) => string): Route[] {
  const owned = (id: string, principal: Parameters<typeof requireDeviceAccess>[0]): SessionRecord => {
    const s = sessions.get(id);
    if (!s) throw sessionNotFound(id);
    requireDeviceAccess(principal, s.deviceId);
    return s;
  };
  return [
    {
      method: 'POST',
      path: '/api/voice/start',
      operationId: 'startVoiceSession',
      summary: 'Start a voice session: connects upstream and opens the hub group session-{sessionId}',
      tag: 'Voice',
      auth: { apiKey: true, bearer: 'voice', deviceInBody: true },
      body: 'StartSessionRequest',
      responses: {
        200: { description: 'Started', schema: ref('StartSessionResponse') },
        404: { description: 'Unknown device, or the device was deleted while the session started', ...PROBLEM.any },
        409: { description: "A concurrent start for the same device replaced this one before it was answered (`session '<id>' ended before it started (replaced)`), or a shutdown, the device's deletion or a stop ended it then (the reason in brackets)", ...PROBLEM.any },
        502: { description: 'Upstream voice server unreachable', ...PROBLEM.any },
        503: { description: 'Voice features disabled, the service shutting down, or the database could not be written (the session is not started)', ...PROBLEM.any },
      },
      handler: async ({ body, principal, request }) => {
        const req = body as { deviceId: string; userId?: string; sessionConfig?: Record<string, unknown> };
        requireDeviceAccess(principal, req.deviceId);
        // Before the session starts: a request that cannot be told where the hub is starts nothing.
        const websocketUrl = hubUrl(request, listeningAddress);
        const s = await sessions.start({ deviceId: req.deviceId, userId: req.userId ?? '', sessionConfig: req.sessionConfig });
        return {
          status: 200,
          body: {
            sessionId: s.id,
            status: 'started',
            websocketUrl,
            message: `Voice session started; join it on the hub with JoinSession("${s.id}", deviceToken).`,
          },
        };
      },
    },
    {
      method: 'POST',
      path: '/api/voice/stop',
      operationId: 'stopVoiceSession',
      summary: 'Stop a voice session; answers the final session record',
      tag: 'Voice',
      auth: { apiKey: true, bearer: 'voice', deviceInBody: true },
      body: 'StopSessionRequest',
      responses: {
        200: { description: 'Final session record', schema: ref('VoiceSession') },
        404: unknownSession,
        503: { description: 'The session is stopped, but its final record could not be written (data directory full or read-only); the service shows the session as stopped and writes the record when storage recovers, and a stop repeated then answers 200', ...PROBLEM.any },
      },
      handler: async ({ body, principal }) => {
        const { sessionId } = body as { sessionId: string };
        owned(sessionId, principal);
        return { status: 200, body: sessionView(await sessions.stop(sessionId, 'stopped by request')) };
      },
    },
    {
      method: 'POST',
      path: '/api/voice/message',
      operationId: 'sendVoiceMessage',
      summary: 'Send a text message into a session (forwarded upstream as {type:"text"})',
      tag: 'Voice',
      auth: { apiKey: true, bearer: 'voice', deviceInBody: true },
      body: 'SessionMessageRequest',
      responses: {
        200: { description: 'The session after the message was sent', schema: ref('VoiceSession') },
        404: unknownSession,
        409: { description: 'Session is not active', ...PROBLEM.any },
        503: { description: "Voice features disabled, or the session's upstream link is reconnecting (`upstream connection is reconnecting: text dropped`) or not keeping up, more than 256 KiB waiting for a server that does not read (`upstream is not keeping up: text dropped`): the text was not sent; send it again once the link is back", ...PROBLEM.any },
      },
      handler: ({ body, principal }) => {
        const m = body as { sessionId: string; text: string; messageType?: string };
        owned(m.sessionId, principal);
        sessions.sendText(m.sessionId, m.text, m.messageType ?? 'text');
        return { status: 200, body: sessionView(sessions.get(m.sessionId)!) };
      },
    },
  ];
}
