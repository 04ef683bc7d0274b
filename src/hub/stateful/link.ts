// The stateful reconnect state of one connection that negotiated it (hub protocol version 2): what it
// sent and must be able to send again (replay-buffer.ts), what it received and must not handle twice
// (receive-sequence.ts), and when it last acknowledged. The connection owns the socket and decides
// what to do with each verdict; this only keeps the books.
import type { Frame } from './frame-queue.js';
import { ReceiveSequence } from './receive-sequence.js';
import { ReplayBuffer, type Admission } from './replay-buffer.js';

/** How often a connection acknowledges what it handled (ASP.NET's ack timer ticks every second). */
export const ACK_INTERVAL_MS = 1000;
/**
 * A heartbeat tick measured a little short of the interval still sends the ack: the heartbeat's timer
 * and the clock it is measured by disagree by fractions of a millisecond, and a tick at 999.8 ms left the
 * ack for the next one, a 2 s gap one time in five, which halved how fast a client's buffer drained.
 */
export const ACK_SLACK_MS = 10;

export class StatefulLink {
  private readonly sent: ReplayBuffer;
  private readonly received = new ReceiveSequence();
  private lastAckAt: number;

  constructor(bufferSize: number, holdLimit: number, now: number) {
    this.sent = new ReplayBuffer(bufferSize, holdLimit);
    this.lastAckAt = now;
  }

  /** Whether a received message is handled (see ReceiveSequence.accept). */
  accept(type: number): boolean {
    return this.received.accept(type);
  }

  /** A sequenced message to send (see ReplayBuffer.offer). */
  offer(frame: Frame): Admission {
    return this.sent.offer(frame);
  }

  /** The client's Ack: `send` gets the held-back messages that now fit. */
  onAck(sequenceId: number, send: (frame: Frame) => void): void {
    this.sent.ack(sequenceId, send);
  }

  /** The client's Sequence message; throws InvalidDataError for an id past what was received. */
  onSequence(sequenceId: number): void {
    this.received.reset(sequenceId);
  }

  /**
   * A new socket took over: the client's messages are ignored until its Sequence message. Returns the
   * id our Sequence message announces; `replay` then sends every unacknowledged message.
   */
  resume(): number {
    this.received.expectSequence();
    return this.sent.firstUnackedId;
  }

  replay(send: (frame: Frame) => void): void {
    this.sent.replay(send);
  }

  /** The id to acknowledge now: at most once per ACK_INTERVAL_MS, and only when something new was handled. */
  ackDue(now: number): number | undefined {
    if (now - this.lastAckAt < ACK_INTERVAL_MS - ACK_SLACK_MS) return undefined;
    this.lastAckAt = now;
    return this.received.takeAck();
  }

  /** Bytes held back until acks make room: what the client has yet to be sent. */
  get heldBytes(): number {
    return this.sent.heldBytes;
  }

  /** For the log line when the held-back messages overflow. */
  describe(): string {
    return `${this.sent.bytes} bytes unacknowledged and ${this.sent.heldBytes} held back (at most ${this.sent.holdLimit})`;
  }

  clear(): void {
    this.sent.clear();
  }
}
