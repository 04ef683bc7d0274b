// The hub's own state as MQTT publishes it: active voice sessions, devices online and the state of the
// upstream voice server, kept from the domain's events (sessions, device registry), never polled.
// Upstream connections are one per session, so the hub's upstream state sums up the links there are:
// - `connected`: some active session's connection is open (the server answers, whatever else failed);
// - `reconnecting`: no connection is open and some session's is being reconnected;
// - `unreachable`: no connection, and the last attempt to reach the server failed (a start, or a
//   session's reconnects ran out), until a session connects again;
// - `idle`: no session, so no connection (the server may be fine or down; /health probes it).
// A failed attempt while a connection is open says nothing about that connection: the start is
// refused and logged (sessions.ts), and the state stays `connected`, which is still true.
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
  /** Active sessions without an open connection: being reconnected, or given up (their `ended` follows). */
  private readonly down = new Map<string, 'reconnecting' | 'gone'>();
  /** An attempt failed while no connection was open; cleared by the next connection that opens. */
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
        if (event.state === 'open') {
          this.down.delete(sessionId);
          this.unreachable = false;
        } else {
          // A start that could not connect was never active: nothing to mark (and no `ended` to forget it by).
          if (this.active.has(sessionId)) this.down.set(sessionId, event.state === 'reconnecting' ? 'reconnecting' : 'gone');
          if (event.state === 'unreachable' && this.openLinks() === 0) this.unreachable = true;
        }
        break;
      case 'ended':
        this.active.delete(sessionId);
        this.down.delete(sessionId);
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
    if (this.openLinks() > 0) return 'connected';
    for (const state of this.down.values()) if (state === 'reconnecting') return 'reconnecting';
    return this.unreachable ? 'unreachable' : 'idle';
  }

  /** Active sessions whose connection is open. */
  private openLinks(): number {
    let open = 0;
    for (const id of this.active) if (!this.down.has(id)) open++;
    return open;
  }

  private key(): string {
    return JSON.stringify(this.state);
  }
}
