// The sending half of SignalR's stateful reconnect for one connection: every sequenced message sent
// (invocations, completions, stream items and cancels; not pings, acks, sequences or closes) is kept
// until the client acknowledges it, so it can be sent again after a reconnect. Bounded in bytes, as
// ASP.NET Core's MessageBuffer: while more than `limit` bytes wait for an ack, further messages are held
// back (not sent) until an ack leaves less, which is ASP.NET's back-pressure; what is held back is bounded
// too (`holdLimit`), and a message past it is refused: the caller ends the connection, so the loss is
// seen by the client (its reconnect fails and it starts afresh) and never silent.
import { FrameQueue, frameBytes, type Frame } from './frame-queue.js';

/** What became of a message offered to the buffer. */
export type Admission = 'send' | 'held' | 'overflow';

export class ReplayBuffer {
  /** Sent (or to be sent on resume) and not acknowledged; the oldest has sequence id `firstId`. */
  private readonly unacked = new FrameQueue();
  /** Waiting for acks to make room; no sequence id yet. */
  private readonly held = new FrameQueue();
  private firstId = 1;

  constructor(
    /** Unacknowledged bytes past which sending pauses (Hub.StatefulReconnectBufferSize). */
    readonly limit: number,
    /** Held-back bytes past which a message is refused. */
    readonly holdLimit: number,
  ) {}

  /** Bytes sent and not yet acknowledged. */
  get bytes(): number {
    return this.unacked.bytes;
  }

  get heldBytes(): number {
    return this.held.bytes;
  }

  /** Sequence id the next message sent gets (ids start at 1 and count every sequenced message). */
  get nextId(): number {
    return this.firstId + this.unacked.length;
  }

  /**
   * Takes a sequenced message. 'send': it got the next sequence id and the caller sends it now (or the
   * replay does, when there is no socket). 'held': it goes out when acks make room. 'overflow': neither.
   */
  offer(frame: Frame): Admission {
    const size = frameBytes(frame);
    // Order is kept: nothing overtakes a held message. ASP.NET writes a message unless more than the
    // limit is unacknowledged (`_bufferedByteCount > _bufferLimit` waits): the limit itself still sends.
    if (this.held.length === 0 && this.unacked.bytes <= this.limit) {
      this.unacked.push(frame, size);
      return 'send';
    }
    if (this.held.bytes + size > this.holdLimit) return 'overflow';
    this.held.push(frame, size);
    return 'held';
  }

  /**
   * The client received everything up to `sequenceId`: forget those messages, then hand `send` the held
   * messages that now fit, in order. An id past the last message sent acknowledges them all. As in
   * ASP.NET, the message that waited goes once the ack left less than the limit unacknowledged, and each
   * after it, a write of its own there, while no more than the limit is.
   */
  ack(sequenceId: number, send: (frame: Frame) => void): void {
    while (this.unacked.length > 0 && this.firstId <= sequenceId) {
      this.unacked.shift();
      this.firstId++;
    }
    if (this.held.length === 0 || this.unacked.bytes >= this.limit) return;
    do {
      const frame = this.held.shift()!;
      this.unacked.push(frame, frameBytes(frame));
      send(frame);
    } while (this.held.length > 0 && this.unacked.bytes <= this.limit);
  }

  /** The sequence id of the first message a replay sends (the next id when there is none): what the Sequence message announces. */
  get firstUnackedId(): number {
    return this.firstId;
  }

  /** After a reconnect: hands `send` every unacknowledged message, oldest first. */
  replay(send: (frame: Frame) => void): void {
    for (let i = 0; i < this.unacked.length; i++) send(this.unacked.at(i));
  }

  clear(): void {
    this.unacked.clear();
    this.held.clear();
  }
}
