// The hub's side of voice sessions: each SessionEvent that devices hear about becomes one invocation
// to the session's group, named and typed by HUB_EVENTS (hub-events.ts). Audio goes out as Base64 text
// with both hub protocols: that is what MessagePack devices have always received too (only
// SendAudioData accepts raw bytes there), so changing it would break them.
import { Base64Text } from '../hub/base64-text.js';
import type { VoiceHubServer } from '../hub/index.js';
import type { SessionEvent, SessionListener } from '../voice/session-events.js';
import { sessionGroup, toGroup, type HubEvent } from './hub-events.js';

/** What the session's group is sent for `event`; undefined for the events devices are not sent. */
export function hubEventOf(event: SessionEvent): HubEvent | undefined {
  const { sessionId } = event;
  switch (event.type) {
    case 'started':
      return undefined; // the device learnt of it from the start response, before it could join
    case 'audioProcessed':
      return { target: 'AudioProcessed', payload: { sessionId, sequence: event.sequence, bytes: event.bytes, durationMs: event.durationMs } };
    case 'decodedAudio':
      return { target: 'AudioResponse', payload: Base64Text.of(event.pcm) };
    case 'upstreamAudio': {
      const { sampleRate, channels } = event.format;
      return { target: 'AudioData', payload: { sessionId, format: 'opus', sampleRate, channels, data: event.base64 } };
    }
    case 'text':
      return { target: 'TextResponse', payload: { sessionId, text: event.text, final: event.final } };
    case 'upstreamError':
      return { target: 'Error', payload: event.code === undefined ? event.message : `${event.message} (code ${event.code})` };
    case 'framesDropped':
      return { target: 'Error', payload: event.message };
    case 'upstreamLink':
      return undefined; // the link's state is the hub's health, not news for the session's devices
    case 'deviceAway':
    case 'deviceReturned':
      return undefined; // about the device's own connection: it has none, or knows it came back
    case 'ended':
      return { target: 'SessionEnded', payload: { sessionId, reason: event.reason } };
  }
}

/** The listener that forwards session events to the members of each session's hub group. */
export function hubSessionBridge(hub: Pick<VoiceHubServer, 'sendToGroup'>): SessionListener {
  // Each session's group name, built once: a name built per event is a fresh string that the group
  // lookup hashes and compares in full, several times per audio packet. Forgotten when the session ends.
  const groups = new Map<string, string>();
  return (event) => {
    const { sessionId } = event;
    const out = hubEventOf(event);
    if (out) {
      let group = groups.get(sessionId);
      if (group === undefined) groups.set(sessionId, (group = sessionGroup(sessionId)));
      toGroup(hub, group, out.target, out.payload);
    }
    if (event.type === 'ended') groups.delete(sessionId);
  };
}

/**
 * What the session service paces its upstream reading by: the members of the session's group, whose
 * name is made once per session rather than for each frame handed on (and hashed again to find it).
 */
export const hubReceiversUnsent = (hub: VoiceHubServer) => (sessionId: string) => {
  const group = sessionGroup(sessionId);
  return (visit: (receiver: string, unsent: number) => void): void => hub.groupUnsent(group, visit);
};
