// Work gathered during one event-loop turn and done once at its end (setImmediate): the hub's socket
// batches and the upstream links' corks both flush this way, so the frames of one turn leave together.

/** A set of items that `finish` is called on, each once, at the end of the turn they were added in. */
export class EndOfTurn<T> {
  private readonly pending = new Set<T>();
  private scheduled = false;

  constructor(private readonly finish: (item: T) => void) {}

  /** Adds `item` for this turn's end; false when it is already waiting (nothing changes). */
  add(item: T): boolean {
    if (this.pending.has(item)) return false;
    this.pending.add(item);
    if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(() => this.flush());
    }
    return true;
  }

  /** `item` was finished early or let go: the turn's end skips it. */
  delete(item: T): void {
    this.pending.delete(item);
  }

  private flush(): void {
    this.scheduled = false;
    // Items finished here may delete themselves: Set iteration allows that.
    for (const item of this.pending) this.finish(item);
    this.pending.clear();
  }
}
