// A first-in first-out queue read from a moving head. Array.prototype.shift moves every element that
// is left whenever V8 cannot move the array's start (while a garbage collection is marking, which
// under load is often): on a queue hundreds long that was 4 % of the service's CPU in one caller.

/** Consumed slots are reclaimed once this many have piled up at the front and they are most of the array. */
const COMPACT_AFTER = 256;

export class Fifo<T> {
  private items: (T | undefined)[] = [];
  private head = 0;

  get length(): number {
    return this.items.length - this.head;
  }

  push(item: T): void {
    this.items.push(item);
  }

  /** The item `index` places from the front (0 is the oldest); undefined past the end. */
  at(index: number): T | undefined {
    return index < this.length ? this.items[this.head + index] : undefined;
  }

  /** Removes the oldest item and returns it (undefined when empty). The slot lets go of it at once. */
  shift(): T | undefined {
    if (this.head === this.items.length) return undefined;
    const item = this.items[this.head];
    this.items[this.head++] = undefined;
    if (this.head === this.items.length) this.clear();
    else if (this.head >= COMPACT_AFTER && this.head * 2 >= this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
    return item;
  }

  clear(): void {
    this.items.length = 0;
    this.head = 0;
  }

  /** Empties the queue, returning what it held, oldest first. */
  takeAll(): T[] {
    const all = this.items.slice(this.head) as T[];
    this.clear();
    return all;
  }
}
