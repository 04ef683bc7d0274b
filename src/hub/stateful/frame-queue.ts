// A FIFO of encoded frames (references: a group's frame is shared by every member's queue, a MessagePack
// one as the copy made for the first queue that kept it) with their sizes, kept in two parallel queues
// read from a moving head (src/fifo.ts), so the queues allocate nothing per frame once they have grown to
// the connection's working size.
import { Fifo } from '../../fifo.js';

/** One encoded hub message as the transport sends it: text for JSON, bytes for MessagePack. */
export type Frame = string | Uint8Array;

/** The size a frame counts for: its UTF-8 length for text (what goes on the wire), its length for bytes. */
export const frameBytes = (frame: Frame): number => (typeof frame === 'string' ? Buffer.byteLength(frame) : frame.byteLength);

/** The copy each slab view was kept as, while the view lives: a group's frame is copied once, not per member. */
const copies = new WeakMap<Uint8Array, Uint8Array>();

/**
 * A frame cut from a larger buffer (MessagePack frames are views of the writer's slab, msgpack-writer.ts)
 * is copied before it is kept: kept as it is, one small frame would hold its whole 64 KiB slab for as
 * long as the client leaves it unacknowledged, and the bytes counted would not be the bytes held.
 */
function ownBytes(frame: Uint8Array): Uint8Array {
  if (frame.byteOffset === 0 && frame.byteLength === frame.buffer.byteLength) return frame;
  let copy = copies.get(frame);
  if (!copy) {
    copy = new Uint8Array(frame);
    copies.set(frame, copy);
  }
  return copy;
}

export class FrameQueue {
  private readonly frames = new Fifo<Frame>();
  private readonly sizes = new Fifo<number>();
  private total = 0;

  get length(): number {
    return this.frames.length;
  }

  /** Sum of the sizes of the frames queued. */
  get bytes(): number {
    return this.total;
  }

  push(frame: Frame, size: number): void {
    this.frames.push(typeof frame === 'string' ? frame : ownBytes(frame));
    this.sizes.push(size);
    this.total += size;
  }

  /** The frame `index` places from the front (0 is the oldest). */
  at(index: number): Frame {
    return this.frames.at(index)!;
  }

  /** Removes the oldest frame and returns it (undefined when empty); an acknowledged frame is let go at once. */
  shift(): Frame | undefined {
    const frame = this.frames.shift();
    if (frame !== undefined) this.total -= this.sizes.shift()!;
    return frame;
  }

  clear(): void {
    this.frames.clear();
    this.sizes.clear();
    this.total = 0;
  }
}
