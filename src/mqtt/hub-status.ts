// The hub's own state as MQTT publishes it: active voice sessions, devices online and the state of the
// upstream voice server, kept from the domain's events (sessions, device registry), never polled.
// Upstream connections are one per session, so the hub's upstream state sums them up:
// - `reconnecting`: some active session's connection dropped and is being reconnected;
// - `unreachable`: the last attempt to reach it failed (a start, or a session's reconnects ran out),
//   until a session connects again;
// - `connected`: sessions are active and every one's connection is open;
// - `idle`: no session, so no connection (the server may be fine or down; /health probes it).
import type { SessionEvent } from '../voice/session-events.js';
import type { MqttDevice } from './discovery.js';

export const UPSTREAM_STATES = ['idle', 'connected', 'reconnecting', 'unreachable'] as const;
export type UpstreamState = (typeof UPSTREAM_STATES)[number];

/** The JSON payload of `<prefix>/hub/state`. */
export interface HubState {
  version: string;
  activeSessions: number;
  devicesOnline: number;
  upstream: UpstreamState;
}

/** A device counts as online unless its last reported status is `offline` (any case). */
const isOnline = (status: string): boolean => status.toLowerCase() !== 'offline';

export class HubStatus {
  private readonly active = new Set<string>();
  private readonly reconnecting = new Set<string>();
  private unreachable = false;
  private readonly online = new Set<string>();

  constructor(private readonly version: string) {}

  /** Applies one session event; true when the hub state changed. */
  sessionEvent(event: SessionEvent): boolean {
    // Audio and text arrive many times a second and change nothing here: out before any work.
    if (event.type !== 'started' && event.type !== 'upstreamLink' && event.type !== 'ended') return false;
    const before = this.key();
    const { sessionId } = event;
    switch (event.type) {
      case 'started':
        this.active.add(sessionId);
        this.unreachable = false; // its connection just opened
        break;
      case 'upstreamLink':
        if (event.state === 'reconnecting') this.reconnecting.add(sessionId);
        else this.reconnecting.delete(sessionId);
        if (event.state === 'open') this.unreachable = false;
        if (event.state === 'unreachable') this.unreachable = true;
        break;
      case 'ended':
        this.active.delete(sessionId);
        this.reconnecting.delete(sessionId);
        break;
    }
    return this.key() !== before;
  }

  /** A registered or updated device; true when the count of devices online changed. */
  deviceChanged(device: Pick<MqttDevice, 'id' | 'status'>): boolean {
    const before = this.online.size;
    if (isOnline(device.status)) this.online.add(device.id);
    else this.online.delete(device.id);
    return this.online.size !== before;
  }

  deviceDeleted(deviceId: string): boolean {
    return this.online.delete(deviceId);
  }

  get state(): HubState {
    return { version: this.version, activeSessions: this.active.size, devicesOnline: this.online.size, upstream: this.upstream() };
  }

  private upstream(): UpstreamState {
    if (this.reconnecting.size > 0) return 'reconnecting';
    if (this.unreachable) return 'unreachable';
    return this.active.size > 0 ? 'connected' : 'idle';
  }

  private key(): string {
    return JSON.stringify(this.state);
  }
}
