// Voice session endpoints (SPEC.md "POST /api/voice/start|stop|message").
import { DomainError } from '../../errors.js';
import type { SessionRecord } from '../../store/types.js';
import { requireDeviceAccess } from '../auth.js';
import type { RequestInfo, Route } from '../router.js';
import { PROBLEM, ref } from '../../openapi/components.js';

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
    config: s.config,
  };
}

/** The hub address as the device reached us: Host header, TLS or X-Forwarded-Proto (DESIGN.md). */
export function hubUrl(request: RequestInfo, fallbackHost: string): string {
  const forwarded = request.headers['x-forwarded-proto']?.split(',')[0]?.trim().toLowerCase();
  const secure = request.secure || forwarded === 'https' || forwarded === 'wss';
  const host = request.headers.host || fallbackHost;
  return `${secure ? 'wss' : 'ws'}://${host}/voice-hub`;
}

const voiceErrors = {
  400: PROBLEM.validation,
  401: PROBLEM.unauthorized,
  403: { description: 'Token of another device', ...PROBLEM.any },
  404: { description: 'Unknown device or session', ...PROBLEM.any },
};

export function voiceRoutes(sessions: VoiceSessionsApi, fallbackHost: string): Route[] {
  const owned = (id: string, principal: Parameters<typeof requireDeviceAccess>[0]): SessionRecord => {
    const s = sessions.get(id);
    if (!s) throw new DomainError('not_found', `session '${id}' does not exist`);
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
      auth: { apiKey: true, bearer: 'voice' },
      body: 'StartSessionRequest',
      responses: {
        200: { description: 'Started', schema: ref('StartSessionResponse') },
        ...voiceErrors,
        502: { description: 'Upstream voice server unreachable', ...PROBLEM.any },
        503: { description: 'Voice features disabled', ...PROBLEM.any },
      },
      handler: async ({ body, principal, request }) => {
        const req = body as { deviceId: string; userId?: string; sessionConfig?: Record<string, unknown> };
        requireDeviceAccess(principal, req.deviceId);
        const s = await sessions.start({ deviceId: req.deviceId, userId: req.userId ?? '', sessionConfig: req.sessionConfig });
        return {
          status: 200,
          body: {
            sessionId: s.id,
            status: 'started',
            websocketUrl: hubUrl(request, fallbackHost),
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
      auth: { apiKey: true, bearer: 'voice' },
      body: 'StopSessionRequest',
      responses: { 200: { description: 'Final session record', schema: ref('VoiceSession') }, ...voiceErrors },
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
      auth: { apiKey: true, bearer: 'voice' },
      body: 'SessionMessageRequest',
      responses: {
        200: { description: 'The session after the message was sent', schema: ref('VoiceSession') },
        ...voiceErrors,
        409: { description: 'Session is not active', ...PROBLEM.any },
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
