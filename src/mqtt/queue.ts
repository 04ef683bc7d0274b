// The bounded outgoing queue that holds messages while the broker is unreachable (a down
// broker never slows or fails a request, the queue is bounded). Pure, no I/O.

export interface OutgoingMessage {
  topic: string;
  payload: string;
  retain: boolean;
}

/**
 * Messages in publish order, at most `capacity` of them.
 * - A retained message replaces any queued retained message on the same topic (only the latest
 *   retained state matters to a subscriber) and takes its place at the end of the order.
 * - When full, the oldest non-retained message is dropped; if every queued message is retained, the
 *   oldest retained one goes. Each drop is counted.
 */
export class OutgoingQueue {
  /** Keys in publish order: `r:<topic>` for retained, `t:<n>` for transient messages. */
  private readonly order = new Map<string, OutgoingMessage>();
  /** Keys of queued transient messages, oldest first, so dropping one is cheap. */
  private transient: string[] = [];
  private seq = 0;
  private droppedCount = 0;

  constructor(readonly capacity: number) {
    if (!Number.isInteger(capacity) || capacity < 1) throw new RangeError('queue capacity must be a positive integer');
  }

  get size(): number {
    return this.order.size;
  }

  get dropped(): number {
    return this.droppedCount;
  }

  push(message: OutgoingMessage): void {
    if (message.retain) {
      const key = 'r:' + message.topic;
      // Delete first so the replacement moves to the end: the newest state is sent last.
      this.order.delete(key);
      this.order.set(key, message);
    } else {
      const key = 't:' + this.seq++;
      this.order.set(key, message);
      this.transient.push(key);
    }
    while (this.order.size > this.capacity) this.dropOne();
  }

  /** The oldest queued message, removed from the queue. */
  shift(): OutgoingMessage | undefined {
    const first = this.order.entries().next();
    if (first.done) return undefined;
    const [key, message] = first.value;
    this.order.delete(key);
    if (!message.retain) this.transient.shift(); // transient keys are in the same order as in `order`
    return message;
  }

  /** Removes a queued retained message that is about to be superseded (not counted as dropped). */
  discardRetained(topic: string): void {
    this.order.delete('r:' + topic);
  }

  /** Everything queued, in publish order; the queue is empty afterwards. */
  drain(): OutgoingMessage[] {
    const all = [...this.order.values()];
    this.order.clear();
    this.transient = [];
    return all;
  }

  private dropOne(): void {
    const key = this.transient.shift() ?? this.order.keys().next().value;
    if (key === undefined) return;
    this.order.delete(key);
    this.droppedCount++;
  }
}
