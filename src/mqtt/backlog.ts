// Retained state the broker is owed: the hub's and each known device's discovery configs and state.
// It is kept as what is owed, not as payloads, and each payload is built from the latest state when its
// turn comes. Its size is that of what it describes (the hub and the devices in the store), so it never
// drops anything: a hub with more devices than the bounded outgoing queue holds messages (six retained
// topics a device) still gets every config and state to a broker that lost them or to a Home Assistant
// that restarted, where passing them through the queue dropped the oldest. Pure, no I/O.
import type { OutgoingMessage } from './queue.js';

export type Owed =
  /** `online` on the hub's availability topic, owed again when another client said otherwise (publisher.ts). */
  | { kind: 'hubAvailability' }
  | { kind: 'hubDiscovery' }
  | { kind: 'hubState' }
  | { kind: 'deviceDiscovery'; id: string }
  | { kind: 'deviceState'; id: string };

/** The messages of one owed item from the state of now; none when what it describes is gone. */
export type Resolve = (item: Owed) => OutgoingMessage[];
/** How many messages an item stands for while it waits (for the publisher's `queued` count). */
export type Count = (item: Owed) => number;

const keyOf = (item: Owed): string => {
  switch (item.kind) {
    case 'hubAvailability':
      return 'h:a';
    case 'hubDiscovery':
      return 'h:d';
    case 'hubState':
      return 'h:s';
    case 'deviceDiscovery':
      return `d:${item.id}`;
    case 'deviceState':
      return `s:${item.id}`;
  }
};

export class RetainedBacklog {
  /** Owed items by key, oldest first; owing an item again keeps its place, so a busy device cannot starve the others. */
  private readonly owed = new Map<string, Owed>();
  /** Messages of the item being sent, built together (a device's five configs) and sent one by one. */
  private current: { item: Owed; messages: OutgoingMessage[] } | undefined;

  /** Messages the owed items stand for, without the rest of `current`. */
  private waiting = 0;

  constructor(
    private readonly resolve: Resolve,
    private readonly count: Count,
  ) {}

  /** Messages owed. */
  get size(): number {
    return this.waiting + (this.current?.messages.length ?? 0);
  }

  owe(item: Owed): void {
    const key = keyOf(item);
    if (this.owed.has(key)) return;
    this.owed.set(key, item);
    this.waiting += this.count(item);
  }

  /** A deleted device: nothing of it is sent any more, not even the rest of its configs. */
  forget(deviceId: string): void {
    for (const item of [{ kind: 'deviceDiscovery', id: deviceId }, { kind: 'deviceState', id: deviceId }] as const) {
      if (this.owed.delete(keyOf(item))) this.waiting -= this.count(item);
    }
    const item = this.current?.item;
    if (item && (item.kind === 'deviceDiscovery' || item.kind === 'deviceState') && item.id === deviceId) this.current = undefined;
  }

  /** The next message owed, built now; undefined when nothing is owed. */
  next(): OutgoingMessage | undefined {
    for (;;) {
      if (this.current) {
        const message = this.current.messages.shift();
        if (this.current.messages.length === 0) this.current = undefined;
        if (message) return message;
        continue;
      }
      const first = this.owed.entries().next();
      if (first.done) return undefined;
      const [key, item] = first.value;
      this.owed.delete(key);
      this.waiting -= this.count(item);
      this.current = { item, messages: this.resolve(item) };
    }
  }
}
