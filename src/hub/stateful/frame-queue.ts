// A FIFO of encoded frames (references, never copies: a group's frame is shared by every member's
// queue) with their sizes, kept in two parallel arrays read from a moving head, so adding and
// trimming allocate nothing per frame once the arrays have grown to the connection's working size.

/** One encoded hub message as the transport sends it: text for JSON, bytes for MessagePack. */
export type Frame = string | Uint8Array;

/** The size a frame counts for: its UTF-8 length for text (what goes on the wire), its length for bytes. */
export const frameBytes = (frame: Frame): number => (typeof frame === 'string' ? Buffer.byteLength(frame) : frame.byteLength);

/** Consumed slots are reclaimed once this many have piled up at the front and they are most of the arrays. */
const COMPACT_AFTER = 256;

export class FrameQueue {
  private frames: Frame[] = [];
  private sizes: number[] = [];
  private head = 0;
  private total = 0;

  get length(): number {
    return this.frames.length - this.head;
  }

  /** Sum of the sizes of the frames queued. */
  get bytes(): number {
    return this.total;
  }

  push(frame: Frame, size: number): void {
    this.frames.push(frame);
    this.sizes.push(size);
    this.total += size;
  }

  /** The frame `index` places from the front (0 is the oldest). */
  at(index: number): Frame {
    return this.frames[this.head + index]!;
  }

  /** Removes the oldest frame and returns it (undefined when empty). */
  shift(): Frame | undefined {
    if (this.head >= this.frames.length) return undefined;
    const frame = this.frames[this.head]!;
    this.total -= this.sizes[this.head]!;
    // Drop the reference now: an acknowledged frame must not stay alive until the next compaction.
    this.frames[this.head] = '';
    this.head++;
    if (this.head === this.frames.length) this.clear();
    else if (this.head >= COMPACT_AFTER && this.head * 2 >= this.frames.length) this.compact();
    return frame;
  }

  clear(): void {
    this.frames.length = 0;
    this.sizes.length = 0;
    this.head = 0;
    this.total = 0;
  }

  private compact(): void {
    this.frames = this.frames.slice(this.head);
    this.sizes = this.sizes.slice(this.head);
    this.head = 0;
  }
}
