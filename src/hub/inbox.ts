// The bytes a connection received and has not read yet: whole frames in arrival order, read one
// message at a time (never all messages of a frame at once), with a message that spans frames
// joined only when it is read. Bounded by the connection (maxInboxBytes).
import type { ReadMessage } from './text-format.js';

export type ReadOne = (buffer: Uint8Array, offset: number, maxMessageSize: number) => ReadMessage | undefined;

export class Inbox {
  private readonly frames: Uint8Array[] = [];
  private offset = 0;
  private unread = 0;

  /** Bytes received and not yet read. */
  get bytes(): number {
    return this.unread;
  }

  /** Takes ownership of `frame`. */
  push(frame: Uint8Array): void {
    if (frame.length === 0) return;
    this.frames.push(frame);
    this.unread += frame.length;
  }

  /**
   * The next complete message body (a view into a received frame), or undefined until more bytes
   * arrive. `onJoin` runs each time a message that spans frames costs a copy, so the caller can
   * charge for it: a client sending a message in 1-byte frames would otherwise make every frame
   * copy the growing tail. Throws what `read` throws.
   */
  next(read: ReadOne, maxMessageSize: number, onJoin: () => boolean): Uint8Array | undefined {
    for (;;) {
      const head = this.frames[0];
      if (!head) return undefined;
      const message = read(head, this.offset, maxMessageSize);
      if (message) {
        this.unread -= message.end - this.offset;
        this.offset = message.end;
        if (this.offset === head.length) this.dropHead();
        return message.body;
      }
      const second = this.frames[1];
      if (!second) {
        // Keep only the short tail, not the whole frame it came in.
        if (this.offset > 0) {
          this.frames[0] = head.slice(this.offset);
          this.offset = 0;
        }
        return undefined;
      }
      if (!onJoin()) return undefined;
      // Only the tail of the head is kept: it is shorter than one message.
      const tail = head.subarray(this.offset);
      const joined = new Uint8Array(tail.length + second.length);
      joined.set(tail, 0);
      joined.set(second, tail.length);
      this.frames.splice(0, 2, joined);
      this.offset = 0;
    }
  }

  clear(): void {
    this.frames.length = 0;
    this.offset = 0;
    this.unread = 0;
  }

  private dropHead(): void {
    this.frames.shift();
    this.offset = 0;
  }
}
