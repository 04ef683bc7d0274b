// The bounded outgoing queue that holds messages while the broker is unreachable (a down broker never
// slows or fails a request, the queue is bounded). Pure, no I/O.
import { Fifo } from '../fifo.js';

export interface OutgoingMessage {
  topic: string;
  payload: string;
  retain: boolean;
}

interface Entry {
  message: OutgoingMessage;
  /** Publish order across both kinds. */
  seq: number;
}

/**
 * Messages in publish order, in two parts with bounds of their own:
 * - Events (not retained) are news: at most `capacity` of them; when full, the oldest is dropped.
 * - Retained messages are state (the clearing of a deleted device's topics): only the latest per topic
 *   matters, so one replaces any queued on the same topic and takes its place at the end of the order.
 *   No number of events ever pushes one out: they are bounded apart, at `retainedCapacity` distinct
 *   topics, past which the oldest goes (and `push` returns it, for the caller to report).
 * Each drop is counted.
 */
export class OutgoingQueue {
  /** Queued retained messages by topic, oldest first. */
  private readonly retained = new Map<string, Entry>();
  /** Queued events, oldest first. */
  private readonly events = new Fifo<Entry>();
  private seq = 0;
  private droppedCount = 0;

  constructor(
    readonly capacity: number,
    /** Distinct retained topics held at most; read at each push, so it may grow with what the caller knows. */
    private readonly retainedCapacity: () => number = () => Infinity,
  ) {
    if (!Number.isInteger(capacity) || capacity < 1) throw new RangeError('queue capacity must be a positive integer');
  }

  get size(): number {
    return this.retained.size + this.events.length;
  }

  /** Distinct retained topics queued. */
  get retainedSize(): number {
    return this.retained.size;
  }

  get dropped(): number {
    return this.droppedCount;
  }

  /** Queues `message`; returns the message (an event or a retained one) dropped to make room for it, if one was. */
  push(message: OutgoingMessage): OutgoingMessage | undefined {
    const entry = { message, seq: this.seq++ };
    if (!message.retain) {
      this.events.push(entry);
      if (this.events.length <= this.capacity) return undefined;
      this.droppedCount++;
      return this.events.shift()!.message;
    }
    // Delete first so the replacement moves to the end: the newest state is sent last.
    const replaced = this.retained.delete(message.topic);
    this.retained.set(message.topic, entry);
    if (replaced || this.retained.size <= Math.max(1, this.retainedCapacity())) return undefined;
    const oldest = this.retained.entries().next().value!;
    this.retained.delete(oldest[0]);
    this.droppedCount++;
    return oldest[1].message;
  }

  /** The oldest queued message, removed from the queue. */
  shift(): OutgoingMessage | undefined {
    const event = this.events.at(0);
    const retained = this.retained.values().next().value;
    if (retained === undefined || (event !== undefined && event.seq < retained.seq)) return this.events.shift()?.message;
    this.retained.delete(retained.message.topic);
    return retained.message;
  }

  /** Removes a queued retained message that is about to be superseded (not counted as dropped). */
  discardRetained(topic: string): void {
    this.retained.delete(topic);
  }

  /** Whether one of `messages` (the very objects) is still queued. */
  holdsAny(messages: ReadonlySet<OutgoingMessage>): boolean {
    for (const entry of this.retained.values()) if (messages.has(entry.message)) return true;
    for (let i = 0; i < this.events.length; i++) if (messages.has(this.events.at(i)!.message)) return true;
    return false;
  }

  /** Everything queued, in publish order; the queue is empty afterwards. */
  drain(): OutgoingMessage[] {
    const all: OutgoingMessage[] = [];
    for (let m = this.shift(); m !== undefined; m = this.shift()) all.push(m);
    return all;
  }
}
