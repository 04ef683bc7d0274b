// Frames from upstream held while the session has asked to stop reading. Pausing a `ws` socket stops
// new reads, but the read it is parsing (up to 64 KiB, a hundred and more audio frames) is still handed
// on, frame by frame, within the same turn. A session that paused at its BACKLOG_PAUSE frames thus got
// a hundred more; with hundreds of sessions on one decoder thread those tails alone filled its queue,
// and packets were refused and lost under a load that only needed to wait (300 devices on 2 cores).
// Held here, they go on in order once reading resumes, and a paused session takes nothing more.
import { Fifo } from '../fifo.js';

/** One frame as the socket gave it. */
interface HeldFrame<D> {
  data: D;
  isBinary: boolean;
}

/**
 * Frames held at most. A read of 20 ms audio frames holds about 150-220; many more come only from
 * frames of a few bytes, which no voice server sends for long: past the cap the oldest held frame goes
 * on, so that order is kept and a paused session's memory stays bounded.
 */
export const HELD_FRAMES_MAX = 1024;

export class ReadGate<D> {
  private readonly held = new Fifo<HeldFrame<D>>();
  private paused = false;
  /** resume() is handing held frames on: a resume() within that only clears `paused`. */
  private draining = false;
  private closed = false;

  constructor(
    private readonly deliver: (data: D, isBinary: boolean) => void,
    private readonly max = HELD_FRAMES_MAX,
  ) {}

  /** pause() is in force (the last call of the two was pause()). */
  get isPaused(): boolean {
    return this.paused;
  }

  /** Frames waiting for resume(). */
  get heldFrames(): number {
    return this.held.length;
  }

  /** A frame from the socket: handed on now, or held while paused or while older frames wait. */
  offer(data: D, isBinary: boolean): void {
    if (this.closed) return;
    if (!this.paused && this.held.length === 0) return this.deliver(data, isBinary);
    this.held.push({ data, isBinary });
    if (this.held.length > this.max) this.handOn();
  }

  pause(): void {
    this.paused = true;
  }

  /**
   * Hands the held frames on, in order, until one of them pauses the gate again. True when none is left
   * and the gate is open: the socket may read again.
   */
  resume(): boolean {
    this.paused = false;
    if (this.draining || this.closed) return false;
    this.draining = true;
    try {
      while (!this.paused && this.held.length > 0) this.handOn();
    } finally {
      this.draining = false;
    }
    return !this.paused && this.held.length === 0;
  }

  /** The link closed: what is held and every frame after it are let go. */
  close(): void {
    this.closed = true;
    this.held.clear();
  }

  private handOn(): void {
    const frame = this.held.shift()!;
    this.deliver(frame.data, frame.isBinary);
  }
}
