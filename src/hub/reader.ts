// Reading a connection's messages after the handshake, with bounded work and memory: frames are
// copied only as far as needed (an idle connection handles pings straight from the lent frame),
// messages are read one at a time (never all of a frame at once), at most `messagesPerTurn` and
// BYTES_PER_TURN per event-loop turn, each paid from the connection's token bucket by its size before
// it is decoded (an anonymous connection's also from its address's bucket, address-budgets.ts), and
// unread bytes are bounded.
import type { AddressBudgets } from './address-budgets.js';
import type { ConnectionLimits } from './connection-env.js';
import type { HubCounters } from './counters.js';
import { ErrorText } from './errors.js';
import { Inbox } from './inbox.js';
import type { ThrottledLog } from '../log/throttled.js';
import { MessageType, type HubMessage, type HubProtocol, type InvocationMessage, type StreamInvocationMessage } from './messages.js';
import { TokenBucket, type MessageBudget } from './rate-limit.js';
import { PER_TOKEN_TEXT, messageCost } from '../message-cost.js';

/** What the reader needs from its connection. */
export interface ReaderHost {
  readonly connectionId: string;
  isClosed(): boolean;
  /** Handles one message; returns a promise only when it must finish before the next (invocations). */
  handle(message: HubMessage): Promise<void> | undefined;
  protocolError(e: unknown): void;
  close(error: string, allowReconnect: boolean): void;
}

export interface ReaderEnv {
  readonly counters: HubCounters;
  readonly closings: ThrottledLog;
  readonly limits: ConnectionLimits;
  /** What anonymous connections spend per client address, shared by all of them. */
  readonly addressBudgets: AddressBudgets;
  readonly now: () => number;
}

const EMPTY = new Uint8Array(0);

/**
 * Message bytes read from one connection before the event loop serves others (the first message of a
 * turn is read whatever its size). Decoding costs up to ~150 ns a byte for shapes such as an object of
 * thousands of names, against ~2 ns for audio: 32 such messages of 64 KiB held the loop ~300 ms here,
 * where a turn of 32 audio packets is under 60 KiB.
 */
export const BYTES_PER_TURN = 64 * 1024;

/** Messages and their bytes read from a connection in the current turn. */
interface Turn {
  readonly messages: number;
  readonly bytes: number;
}
const FRESH_TURN: Turn = { messages: 0, bytes: 0 };

/** Lets timers, other connections and I/O run between batches of messages. */
const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

const isInvocation = (m: HubMessage | null): boolean => m?.type === MessageType.Invocation || m?.type === MessageType.StreamInvocation;

/** A copy in one allocation; small copies land in Node's buffer pool, cheaper than an ArrayBuffer each. */
export function copy(data: Uint8Array, prefix: Uint8Array = EMPTY): Uint8Array {
  const out = Buffer.allocUnsafe(prefix.length + data.length);
  out.set(prefix, 0);
  out.set(data, prefix.length);
  return out;
}

export class MessageReader {
  private readonly inbox = new Inbox();
  /**
   * An invocation already read from a lent frame (and paid for), to run before anything in the inbox:
   * a device's frame usually holds one invocation, which is then decoded once and its frame not copied.
   */
  private held: HubMessage | undefined;
  /** The first message of the inbox was paid for when it was read from a lent frame (readLent). */
  private paidAhead = false;
  private reading = false;
  private readonly budget: TokenBucket;

  constructor(
    private readonly host: ReaderHost,
    private readonly protocol: HubProtocol,
    private readonly env: ReaderEnv,
    private authenticated: boolean,
    /** The client's address key (address-slots.ts) its anonymous messages are also charged to; none for a reconnect. */
    private readonly address: string | undefined,
  ) {
    const { limits } = env;
    this.budget = new TokenBucket(authenticated ? limits.authenticatedBudget : limits.unauthenticatedBudget, env.now());
  }

  /** The connection proved who it is: from now on it gets the authenticated budget. */
  authenticate(): void {
    if (this.authenticated) return;
    this.authenticated = true;
    this.budget.change(this.env.limits.authenticatedBudget, this.env.now());
  }

  /** A frame lent for this call only (uWS reuses its bytes). */
  receive(data: Uint8Array): void {
    const { limits, counters, closings } = this.env;
    if (data.length > limits.maxFrameBytes) {
      counters.framesTooLarge++;
      closings.info(`${this.host.connectionId}: closing: a frame of ${data.length} bytes, more than ${limits.maxFrameBytes}`);
      this.host.close(ErrorText.frameTooLarge(limits.maxFrameBytes), false);
      return;
    }
    // An idle connection reads what it can straight from the lent bytes; only the rest is copied.
    if (this.reading || this.inbox.bytes > 0) {
      this.receiveOwned(copy(data));
      return;
    }
    const lent = this.readLent(data);
    if (this.host.isClosed()) return;
    const { rest } = lent;
    if (rest.length > 0 && !this.keep(copy(rest))) return;
    if (this.held !== undefined || rest.length > 0) void this.read(lent);
  }

  /** Bytes the reader may keep (a copy of a lent frame). */
  private receiveOwned(data: Uint8Array): void {
    if (this.keep(data) && !this.reading) void this.read(FRESH_TURN);
  }

  /** Takes `data` into the inbox; false when that is more than a connection may leave unread (it is closed). */
  private keep(data: Uint8Array): boolean {
    const { limits, counters, closings } = this.env;
    this.inbox.push(data);
    if (this.inbox.bytes <= limits.maxInboxBytes) return true;
    counters.inboxOverflows++;
    closings.warn(`${this.host.connectionId}: closing: ${this.inbox.bytes} bytes received and not yet handled, more than ${limits.maxInboxBytes}`);
    this.host.close(ErrorText.clientTooFast, true);
    return false;
  }

  clear(): void {
    this.inbox.clear();
    this.held = undefined;
    this.paidAhead = false;
  }

  /**
   * Handles the messages at the start of a lent frame as long as they need nothing from it afterwards:
   * pings and other non-invocations, at most `messagesPerTurn`, and the first invocation, held for
   * read() when it keeps nothing of the frame. Returns the bytes still to read (from an invocation
   * that keeps views into its body on, e.g. nested MessagePack bytes) and what this turn has read
   * (the held invocation included). A frame of pings costs no copy, however it ends.
   */
  private readLent(data: Uint8Array): Turn & { rest: Uint8Array } {
    const { limits, counters } = this.env;
    const done = { rest: EMPTY, ...FRESH_TURN };
    let offset = 0;
    let taken = 0;
    try {
      for (; taken < limits.messagesPerTurn && offset < BYTES_PER_TURN; taken++) {
        const next = this.protocol.read(data, offset, limits.maximumReceiveMessageSize);
        if (!next) break;
        if (!this.spend(next.body.length)) return done;
        const message = this.protocol.decode(next.body);
        const invoked = isInvocation(message);
        const owned = invoked ? this.owned(message as InvocationMessage | StreamInvocationMessage) : undefined;
        if (invoked && owned === undefined) {
          // Read again from a copy of the rest, which starts with it.
          this.paidAhead = true;
          break;
        }
        counters.messagesReceived++;
        offset = next.end;
        if (owned !== undefined) {
          this.held = owned;
          return { rest: data.subarray(offset), messages: taken + 1, bytes: offset };
        }
        if (message) void this.host.handle(message);
        if (this.host.isClosed()) return done;
      }
    } catch (e) {
      this.host.protocolError(e);
      return done;
    }
    return { rest: data.subarray(offset), messages: taken, bytes: offset };
  }

  /**
   * The invocation with nothing of the lent frame in it, or undefined when that would take a walk of
   * its arguments: bytes arguments of their own (the audio of SendAudioData) are copied, anything
   * nested is read again from a copy of the frame.
   */
  private owned<M extends InvocationMessage | StreamInvocationMessage>(message: M): M | undefined {
    if (!this.protocol.decodesViews) return message;
    const args = message.arguments;
    let copied: unknown[] | undefined;
    for (let i = 0; i < args.length; i++) {
      const value = args[i];
      if (typeof value !== 'object' || value === null) continue;
      if (!(value instanceof Uint8Array)) return undefined;
      copied ??= args.slice();
      copied[i] = Buffer.from(value);
    }
    return copied === undefined ? message : { ...message, arguments: copied };
  }

  /**
   * Reads and handles messages one at a time until the inbox has no complete message left: pings and
   * the like at once, invocations awaited (one at a time, in order, as ASP.NET runs them). After
   * `messagesPerTurn` messages or BYTES_PER_TURN bytes of them it yields the event loop, so one
   * connection's frame cannot hold up the others or /health. `turn`: what this turn read already.
   */
  private async read(turn: Turn): Promise<void> {
    this.reading = true;
    const { limits, counters } = this.env;
    let messages = turn.messages;
    let bytes = turn.bytes;
    try {
      // The held invocation was read this turn: it runs in it, whatever the turn has read.
      const held = this.held;
      this.held = undefined;
      if (held !== undefined && !this.host.isClosed()) {
        const running = this.host.handle(held);
        if (running) await running;
      }
      while (!this.host.isClosed()) {
        if (messages >= limits.messagesPerTurn || bytes >= BYTES_PER_TURN) {
          messages = 0;
          bytes = 0;
          await nextTurn();
          if (this.host.isClosed()) return;
        }
        const body = this.inbox.next(this.protocol.read, limits.maximumReceiveMessageSize, () => this.spend(0));
        if (body === undefined) return;
        if (this.paidAhead) this.paidAhead = false;
        else if (!this.spend(body.length)) return;
        counters.messagesReceived++;
        messages++;
        bytes += body.length;
        const message = this.protocol.decode(body);
        // Awaited only when the method returned a promise: `await undefined` would still cost a turn of the microtask queue.
        const running = message ? this.host.handle(message) : undefined;
        if (running) await running;
      }
    } catch (e) {
      this.host.protocolError(e);
    } finally {
      this.reading = false;
    }
  }

  /**
   * Pays for a message of `bytes` (or, with 0, a costly join of frames) from the budget, before it is
   * decoded; closes the connection when the budget is spent.
   */
  private spend(bytes: number): boolean {
    if (this.host.isClosed()) return false;
    const now = this.env.now();
    const cost = messageCost(bytes);
    if (!this.budget.take(now, cost)) return this.overBudget(`its ${this.authenticated ? '' : 'unauthenticated '}message budget`, this.budget.limits);
    const { addressBudgets } = this.env;
    if (this.authenticated || this.address === undefined || addressBudgets.take(this.address, now, cost)) return true;
    return this.overBudget(`the unauthenticated message budget of its address ${this.address}`, addressBudgets.budget!);
  }

  private overBudget(which: string, { perSecond, burst }: MessageBudget): false {
    this.env.counters.rateLimited++;
    this.env.closings.warn(`${this.host.connectionId}: closing: over ${which} (${burst} at once, ${perSecond} per second, ${PER_TOKEN_TEXT})`);
    this.host.close(ErrorText.rateLimited(burst, perSecond), true);
    return false;
  }
}
