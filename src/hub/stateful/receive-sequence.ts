// The receiving half of SignalR's stateful reconnect for one connection, as ASP.NET Core's
// MessageBuffer keeps it: sequenced messages from the client are numbered 1, 2, 3, ... as they are
// read; after a reconnect the client announces with a Sequence message the number of the first one it
// sends again, and those already handled are skipped (a SendAudioData the hub forwarded is not
// forwarded twice). Until that Sequence message arrives, everything else on the new socket is ignored.
// The highest number handled is what the hub acknowledges, about once a second, and again when the
// client resends it after a reconnect.
import { InvalidDataError } from '../errors.js';
import { MessageType } from '../messages.js';

/** Invocation, StreamItem, Completion, StreamInvocation and CancelInvocation carry a sequence id (SignalR's HubInvocationMessage). */
export const isSequenced = (type: number): boolean =>
  type === MessageType.Invocation ||
  type === MessageType.StreamItem ||
  type === MessageType.Completion ||
  type === MessageType.StreamInvocation ||
  type === MessageType.CancelInvocation;

export class ReceiveSequence {
  /** The number the next sequenced message read gets. */
  private nextId = 1;
  /** The highest number handled. */
  private latest = 0;
  private acked = 0;
  private waitingForSequence = false;

  /** False when the message must be dropped: a duplicate, or anything before the Sequence message after a reconnect. */
  accept(type: number): boolean {
    if (this.waitingForSequence) {
      if (type !== MessageType.Sequence) return false;
      this.waitingForSequence = false;
      return true;
    }
    if (!isSequenced(type)) return true;
    const id = this.nextId++;
    if (id <= this.latest) {
      // The client sent again the last message handled: it never got the ack of it (lost with the old
      // socket), so that ack is due again. The official clients do the same (MessageBuffer's
      // _shouldProcessMessage); without it a client whose send waits on its full buffer waits for ever.
      if (id === this.latest) this.acked = Math.min(this.acked, id - 1);
      return false;
    }
    this.latest = id;
    return true;
  }

  /** A Sequence message: the client sends again from `sequenceId`. Past what was read is a protocol error. */
  reset(sequenceId: number): void {
    if (sequenceId > this.nextId) throw new InvalidDataError("Sequence ID greater than amount of messages we've received.");
    if (sequenceId < 1) throw new InvalidDataError('Sequence ID must be 1 or more.');
    this.nextId = sequenceId;
  }

  /** A new socket took over: ignore it until its Sequence message. */
  expectSequence(): void {
    this.waitingForSequence = true;
  }

  /** The id to acknowledge now, or undefined when nothing new was handled since the last ack. */
  takeAck(): number | undefined {
    if (this.latest <= this.acked) return undefined;
    this.acked = this.latest;
    return this.latest;
  }
}
