// Voice sessions on MQTT: `<prefix>/sessions/<id>/event` (not retained) when a session starts and when
// it ends, each naming the session, its device and the time, so a home automation can react to a
// device's conversation without polling the API. A session listener like the hub bridge.
import type { SessionEvent, SessionListener } from '../voice/session-events.js';

/** The JSON payload of `<prefix>/sessions/<id>/event`. */
export type SessionEventMessage =
  | { event: 'started'; sessionId: string; deviceId: string; timestamp: string }
  | { event: 'ended'; sessionId: string; deviceId: string; timestamp: string; reason: string };

export interface SessionEventSink {
  publishSessionEvent(sessionId: string, message: SessionEventMessage): void;
  /** Every session event, for the hub's own state (active sessions, upstream). */
  sessionChanged(event: SessionEvent): void;
}

/** The listener that publishes `started` and `ended` (with the reason) of every session, and keeps the hub's state. */
export function mqttSessionEvents(mqtt: SessionEventSink): SessionListener {
  return (event) => {
    mqtt.sessionChanged(event);
    const { sessionId } = event;
    switch (event.type) {
      case 'started':
        return mqtt.publishSessionEvent(sessionId, { event: 'started', sessionId, deviceId: event.deviceId, timestamp: event.at.toISOString() });
      case 'ended':
        return mqtt.publishSessionEvent(sessionId, {
          event: 'ended', sessionId, deviceId: event.deviceId, timestamp: event.at.toISOString(), reason: event.reason,
        });
      default:
        return; // audio and text are for the session's devices, not for the broker
    }
  };
}
