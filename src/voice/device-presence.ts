// Who is listening to each voice session, and how long a session waits for its device to come back.
// A device on Wi-Fi loses its connection now and then; its session (and the upstream link, which is
// costly to rebuild and holds the conversation) must survive that. So a session is only ended for a lost
// device after the grace period: when the last holder of a session is released and none attaches again
// in time. Holders are opaque ids (the hub uses connection ids); nothing here knows a transport.
import { monotonicMs } from '../monotonic-clock.js';

export interface PresenceCallbacks {
  /** The last holder of `sessionId` is gone; the grace timer of `graceMs` runs from now. */
  away(sessionId: string, graceMs: number): void;
  /** A holder attached to a session that was away for `awayMs`. */
  returned(sessionId: string, awayMs: number): void;
  /** Nobody came back within the grace period. */
  expired(sessionId: string, graceMs: number): void;
}

interface Presence {
  readonly holders: Set<string>;
  /** Set while the session has no holder. */
  away?: { since: number; timer: NodeJS.Timeout };
}

export class DevicePresence {
  private readonly sessions = new Map<string, Presence>();
  private readonly byHolder = new Map<string, Set<string>>();

  constructor(
    private readonly graceMs: number,
    private readonly callbacks: PresenceCallbacks,
    private readonly clock: () => number = () => monotonicMs(),
  ) {}

  /** `holder` listens to `sessionId` from now on; ends the session's away time if it had one. Repeats are harmless. */
  attach(sessionId: string, holder: string): void {
    let presence = this.sessions.get(sessionId);
    if (!presence) {
      presence = { holders: new Set() };
      this.sessions.set(sessionId, presence);
    }
    presence.holders.add(holder);
    let held = this.byHolder.get(holder);
    if (!held) this.byHolder.set(holder, (held = new Set()));
    held.add(sessionId);
    const away = presence.away;
    if (away) {
      clearTimeout(away.timer);
      delete presence.away;
      this.callbacks.returned(sessionId, this.clock() - away.since);
    }
  }

  /** `holder` is gone (its connection closed): every session it held that has no other holder is now away. */
  release(holder: string): void {
    const held = this.byHolder.get(holder);
    if (!held) return;
    this.byHolder.delete(holder);
    for (const sessionId of held) {
      const presence = this.sessions.get(sessionId);
      if (!presence) continue;
      presence.holders.delete(holder);
      if (presence.holders.size > 0 || presence.away) continue;
      const timer = setTimeout(() => {
        delete presence.away;
        this.callbacks.expired(sessionId, this.graceMs);
      }, this.graceMs);
      timer.unref(); // a pending grace period never keeps the process alive
      presence.away = { since: this.clock(), timer };
      this.callbacks.away(sessionId, this.graceMs);
    }
  }

  /** The session ended: its holders and timer are dropped. */
  forget(sessionId: string): void {
    const presence = this.sessions.get(sessionId);
    if (!presence) return;
    this.sessions.delete(sessionId);
    if (presence.away) clearTimeout(presence.away.timer);
    for (const holder of presence.holders) {
      const held = this.byHolder.get(holder);
      held?.delete(sessionId);
      if (held?.size === 0) this.byHolder.delete(holder);
    }
  }

  /** Whether the session has been joined and has nobody listening right now. */
  isAway(sessionId: string): boolean {
    return this.sessions.get(sessionId)?.away !== undefined;
  }

  /** Sessions tracked (joined at least once, not ended): a gauge for tests and health. */
  get size(): number {
    return this.sessions.size;
  }
}
