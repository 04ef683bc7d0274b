// One hub connection over a small HubSocket (never a uWS type): handshake, a read loop over the
// received bytes (the transport is a byte stream, as in ASP.NET), per-connection sequential
// dispatch (ASP.NET runs one invocation per client at a time, so a JoinSession finishes before the
// next SendAudioData starts), keep-alive pings, client timeout, back-pressure policy and Close.
// Bounded work per frame: a frame before the handshake holds at most a handshake; messages are read
// one at a time, a few per event-loop turn, each paid from the connection's message budget.
import type { Logger } from '../log/logger.js';
import type { HubCounters } from './counters.js';
import type { HubDispatcher } from './dispatcher.js';
import { ErrorText, InvalidDataError, MessageTooLargeError } from './errors.js';
import { groupTopic, type GroupRegistry } from './groups.js';
import { HANDSHAKE_MAX_BYTES, chooseProtocol, handshakeResponse, parseHandshakeRequest } from './handshake.js';
import { Inbox } from './inbox.js';
import { TokenBucket, type MessageBudget } from './rate-limit.js';
import {
  MessageType,
  completionWithError,
  invocation,
  type CompletionMessage,
  type HubMessage,
  type HubProtocol,
  type ProtocolName,
} from './messages.js';
import type { HubCallContext } from './types.js';

/** What the connection needs from the transport; uws-hub.ts adapts a uWS WebSocket to it. */
export interface HubSocket {
  /** Sends one frame; false when the transport dropped it (its back-pressure limit). */
  send(data: string | Uint8Array, binary: boolean): boolean;
  subscribe(topic: string): void;
  unsubscribe(topic: string): void;
  bufferedAmount(): number;
  /** Closes the WebSocket with a normal closure. */
  end(): void;
}

export const ConnectionState = { Handshaking: 'Handshaking', Connected: 'Connected', Closed: 'Closed' } as const;
export type ConnectionState = (typeof ConnectionState)[keyof typeof ConnectionState];

export interface ConnectionLimits {
  readonly maximumReceiveMessageSize: number;
  readonly keepAliveIntervalMs: number;
  readonly clientTimeoutMs: number;
  readonly handshakeTimeoutMs: number;
  readonly maxBufferedBytes: number;
  /** Largest WebSocket frame after the handshake (the transport refuses larger ones first). */
  readonly maxFrameBytes: number;
  /** Received bytes not read yet (a client sending faster than its messages are handled); more closes. */
  readonly maxInboxBytes: number;
  /** Messages read in one event-loop turn before the loop yields to other connections and timers. */
  readonly messagesPerTurn: number;
  /** Until the connection authenticated (a token on the connection, or a group joined). */
  readonly unauthenticatedBudget: MessageBudget;
  readonly authenticatedBudget: MessageBudget;
}

export interface ConnectionEnv {
  readonly dispatcher: HubDispatcher;
  readonly groups: GroupRegistry<HubConnection>;
  readonly counters: HubCounters;
  readonly logger: Logger;
  readonly limits: ConnectionLimits;
  readonly protocols: Readonly<Record<ProtocolName, HubProtocol>>;
  readonly now: () => number;
}

const EMPTY = new Uint8Array(0);
const PING: HubMessage = { type: MessageType.Ping };

/** Lets timers, other connections and I/O run between batches of messages. */
const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** A copy in one allocation; small copies land in Node's buffer pool, cheaper than an ArrayBuffer each. */
function copy(data: Uint8Array, prefix: Uint8Array = EMPTY): Uint8Array {
  const out = Buffer.allocUnsafe(prefix.length + data.length);
  out.set(prefix, 0);
  out.set(data, prefix.length);
  return out;
}

export class HubConnection {
  private stateValue: ConnectionState = ConnectionState.Handshaking;
  private protocolValue: HubProtocol | undefined;
  /** Bytes of an incomplete handshake request. */
  private pending: Uint8Array = EMPTY;
  private readonly inbox = new Inbox();
  private reading = false;
  private readonly budget: TokenBucket;
  private authenticated: boolean;
  private readonly openedAt: number;
  private lastReceivedAt: number;
  private lastSentAt: number;
  readonly context: HubCallContext;

  constructor(
    readonly connectionId: string,
    readonly user: unknown,
    private readonly socket: HubSocket,
    private readonly env: ConnectionEnv,
  ) {
    this.openedAt = this.lastReceivedAt = this.lastSentAt = env.now();
    // A token on the connection was verified at negotiate or upgrade time (undefined: none given).
    this.authenticated = user !== undefined;
    this.budget = new TokenBucket(this.authenticated ? env.limits.authenticatedBudget : env.limits.unauthenticatedBudget, this.openedAt);
    const self = this;
    this.context = {
      connectionId,
      user,
      get protocol(): ProtocolName {
        return self.protocolValue?.name ?? 'json';
      },
      joinGroup: (name) => this.joinGroup(name),
      leaveGroup: (name) => this.leaveGroup(name),
      isInGroup: (name) => env.groups.has(name, this),
      sendToCaller: (target, ...args) => this.send(invocation(target, args)),
    };
  }

  get state(): ConnectionState {
    return this.stateValue;
  }

  get protocol(): HubProtocol | undefined {
    return this.protocolValue;
  }

  /** A method, not a property check, so TypeScript does not keep a narrowing across calls that close. */
  isClosed(): boolean {
    return this.stateValue === ConnectionState.Closed;
  }

  /** The largest frame the connection takes now: a handshake's worth until the handshake is done. */
  frameLimit(): number {
    return this.stateValue === ConnectionState.Handshaking ? HANDSHAKE_MAX_BYTES : this.env.limits.maxFrameBytes;
  }

  /**
   * Bytes of one WebSocket frame, valid only during the call (uWS reuses them): checked against the
   * frame limit before anything is copied, then read by the read loop.
   */
  receive(data: Uint8Array): void {
    if (this.stateValue === ConnectionState.Closed) return;
    this.lastReceivedAt = this.env.now();
    const { limits, counters, logger } = this.env;
    let yieldFirst = false;
    if (this.stateValue === ConnectionState.Handshaking) {
      if (this.pending.length + data.length > HANDSHAKE_MAX_BYTES) {
        counters.framesTooLarge++;
        logger.info(`${this.connectionId}: closing: ${this.pending.length + data.length} bytes before the handshake was done, more than a handshake (${HANDSHAKE_MAX_BYTES})`);
        this.failHandshake(ErrorText.handshakeFailed);
        return;
      }
      const rest = this.handshake(copy(data, this.pending));
      if (rest === undefined) return;
      this.inbox.push(rest);
    } else {
      if (data.length > limits.maxFrameBytes) {
        counters.framesTooLarge++;
        logger.info(`${this.connectionId}: closing: a frame of ${data.length} bytes, more than ${limits.maxFrameBytes}`);
        this.close(ErrorText.frameTooLarge(limits.maxFrameBytes));
        return;
      }
      // An idle connection reads what it can straight from the borrowed bytes; only the rest is copied.
      const idle = !this.reading && this.inbox.bytes === 0;
      const { rest, turnUsed } = idle ? this.readBorrowed(data) : { rest: data, turnUsed: false };
      if (this.isClosed() || rest.length === 0) return;
      this.inbox.push(copy(rest));
      yieldFirst = turnUsed;
    }
    if (this.inbox.bytes > limits.maxInboxBytes) {
      counters.inboxOverflows++;
      logger.warn(`${this.connectionId}: closing: ${this.inbox.bytes} bytes received and not yet handled, more than ${limits.maxInboxBytes}`);
      this.close(ErrorText.clientTooFast, true);
      return;
    }
    if (!this.reading) void this.read(yieldFirst);
  }

  /**
   * Handles the messages at the start of a frame that is only lent for this call, as long as they
   * need nothing from it afterwards: pings and other non-invocations, at most `messagesPerTurn`.
   * Returns the bytes still to read (from the first invocation on), which the caller copies, and
   * whether this turn's messages are used up. A frame of pings thus costs no copy, however it ends
   * (budget spent, protocol error).
   */
  private readBorrowed(data: Uint8Array): { rest: Uint8Array; turnUsed: boolean } {
    const { limits, counters } = this.env;
    const protocol = this.protocolValue!;
    const done = { rest: EMPTY, turnUsed: true };
    let offset = 0;
    let taken = 0;
    try {
      for (; taken < limits.messagesPerTurn; taken++) {
        const next = protocol.read(data, offset, limits.maximumReceiveMessageSize);
        if (!next) break;
        const message = protocol.decode(next.body);
        // An invocation runs later and may keep views into its body (MessagePack bytes): read it from the copy.
        if (message && (message.type === MessageType.Invocation || message.type === MessageType.StreamInvocation)) break;
        if (!this.spend()) return done;
        counters.messagesReceived++;
        offset = next.end;
        if (message) this.handleOther(message);
        if (this.isClosed()) return done;
      }
    } catch (e) {
      this.protocolError(e);
      return done;
    }
    return { rest: data.subarray(offset), turnUsed: taken >= limits.messagesPerTurn };
  }

  /**
   * Reads and handles messages one at a time until the inbox has no complete message left: pings and
   * the like at once, invocations awaited (one at a time, in order). Every `messagesPerTurn` messages
   * it yields the event loop, so one connection's frame cannot hold up the others or /health.
   */
  private async read(yieldFirst: boolean): Promise<void> {
    this.reading = true;
    const { limits, counters } = this.env;
    const protocol = this.protocolValue!;
    let inTurn = 0;
    try {
      if (yieldFirst) await nextTurn();
      while (!this.isClosed()) {
        const body = this.inbox.next(protocol.read, limits.maximumReceiveMessageSize, () => this.spend());
        if (body === undefined || !this.spend()) return;
        counters.messagesReceived++;
        const message = protocol.decode(body);
        if (message) await this.handle(message);
        if (++inTurn >= limits.messagesPerTurn) {
          inTurn = 0;
          await nextTurn();
        }
      }
    } catch (e) {
      this.protocolError(e);
    } finally {
      this.reading = false;
    }
  }

  /** Pays for one message (or one costly join of frames) from the budget; closes the connection when it is spent. */
  private spend(): boolean {
    if (this.isClosed()) return false;
    if (this.budget.take(this.env.now())) return true;
    const { perSecond, burst } = this.budget.limits;
    this.env.counters.rateLimited++;
    this.env.logger.warn(`${this.connectionId}: closing: over its ${this.authenticated ? '' : 'unauthenticated '}message budget (${burst} at once, ${perSecond} per second)`);
    this.close(ErrorText.rateLimited(burst, perSecond), true);
    return false;
  }

  /** Sends one message in the connection's protocol; nothing happens before the handshake or after close. */
  send(message: HubMessage): void {
    const protocol = this.protocolValue;
    if (this.stateValue !== ConnectionState.Connected || !protocol) return;
    let data: string | Uint8Array;
    try {
      data = protocol.encode(message);
    } catch (e) {
      this.env.logger.error(`cannot encode message type ${message.type} for ${this.connectionId}: ${e instanceof Error ? e.message : String(e)}`);
      return;
    }
    this.afterSend(this.socket.send(data, protocol.binary));
  }

  /** Bookkeeping for a frame that reached this connection through a group publish. */
  afterPublish(): void {
    if (this.stateValue === ConnectionState.Connected) this.afterSend(true);
  }

  /** Timers, driven by the hub's heartbeat: handshake timeout, client timeout, back-pressure, keep-alive. */
  tick(now: number): void {
    const { limits, counters, logger } = this.env;
    if (this.stateValue === ConnectionState.Handshaking) {
      if (now - this.openedAt >= limits.handshakeTimeoutMs) {
        counters.handshakeTimeouts++;
        logger.debug(`${this.connectionId}: no handshake within ${limits.handshakeTimeoutMs} ms`);
        this.failHandshake(ErrorText.handshakeCanceled);
      }
      return;
    }
    if (this.stateValue !== ConnectionState.Connected) return;
    if (now - this.lastReceivedAt >= limits.clientTimeoutMs) {
      counters.clientTimeouts++;
      logger.debug(`${this.connectionId}: nothing received for ${limits.clientTimeoutMs} ms, closing`);
      this.close(ErrorText.clientTimeout(limits.clientTimeoutMs), true);
      return;
    }
    if (this.socket.bufferedAmount() > limits.maxBufferedBytes) {
      this.closeTooSlow();
      return;
    }
    // A ping only when nothing else went out: any message resets the client's server timeout.
    if (now - this.lastSentAt >= limits.keepAliveIntervalMs) this.send(PING);
  }

  /** Sends a Close message (after the handshake) and closes the socket. Idempotent. */
  close(error?: string, allowReconnect = false): void {
    if (this.stateValue === ConnectionState.Closed) return;
    const protocol = this.protocolValue;
    if (this.stateValue === ConnectionState.Connected && protocol) {
      const close: HubMessage = { type: MessageType.Close, ...(error !== undefined ? { error } : {}), allowReconnect };
      this.socket.send(protocol.encode(close), protocol.binary);
    }
    this.abort();
  }

  /** The transport reported the socket closed (either side); nothing may touch it any more. */
  onSocketClosed(): void {
    this.markClosed();
  }

  private abort(): void {
    if (this.stateValue === ConnectionState.Closed) return;
    this.markClosed();
    this.socket.end();
  }

  private markClosed(): void {
    this.stateValue = ConnectionState.Closed;
    this.inbox.clear();
    this.pending = EMPTY;
    this.env.groups.removeMember(this);
  }

  /** Returns the bytes after the handshake request, or undefined when there is nothing more to do now. */
  private handshake(buffer: Uint8Array): Uint8Array | undefined {
    let parsed: ReturnType<typeof parseHandshakeRequest>;
    try {
      parsed = parseHandshakeRequest(buffer, HANDSHAKE_MAX_BYTES);
    } catch (e) {
      this.env.logger.debug(`${this.connectionId}: bad handshake: ${e instanceof Error ? e.message : String(e)}`);
      this.failHandshake(ErrorText.handshakeFailed);
      return undefined;
    }
    if (parsed.kind === 'incomplete') {
      this.pending = buffer;
      return undefined;
    }
    this.pending = EMPTY;
    const choice = chooseProtocol(parsed.request);
    if ('error' in choice) {
      this.env.logger.debug(`${this.connectionId}: ${choice.error}`);
      this.failHandshake(choice.error);
      return undefined;
    }
    const protocol = this.env.protocols[choice.protocol];
    this.protocolValue = protocol;
    this.stateValue = ConnectionState.Connected;
    // The response goes in the protocol's transfer format, as ASP.NET writes it; the TS client parses either.
    this.afterSend(this.socket.send(handshakeResponse(), protocol.binary));
    this.env.logger.debug(`${this.connectionId}: handshake done, protocol ${protocol.name}`);
    return parsed.rest;
  }

  private failHandshake(error: string): void {
    this.env.counters.handshakeFailures++;
    this.socket.send(handshakeResponse(error), false);
    this.abort();
  }

  private async handle(message: HubMessage): Promise<void> {
    if (message.type !== MessageType.Invocation && message.type !== MessageType.StreamInvocation) {
      this.handleOther(message);
      return;
    }
    this.env.counters.invocations++;
    const completion = await this.env.dispatcher.invoke(this.context, message);
    if (completion) this.sendCompletion(completion, message.target);
  }

  /** Every message but invocations: handled at once, nothing kept from it. */
  private handleOther(message: HubMessage): void {
    switch (message.type) {
      case MessageType.Close:
        // The client is leaving: no Close message back, just end the socket.
        this.env.logger.debug(`${this.connectionId}: client sent Close${message.error ? `: ${message.error}` : ''}`);
        this.abort();
        return;
      default:
        // Ping: receiving it already reset the client timeout. CancelInvocation, StreamItem,
        // Completion, Ack, Sequence: no streams, client results or stateful reconnect here.
        return;
    }
  }

  /** A result that cannot be encoded still owes the caller a completion: an error one. */
  private sendCompletion(completion: CompletionMessage, target: string): void {
    const protocol = this.protocolValue;
    if (this.stateValue !== ConnectionState.Connected || !protocol) return;
    let data: string | Uint8Array;
    try {
      data = protocol.encode(completion);
    } catch (e) {
      this.env.logger.error(`'${target}' result cannot be encoded: ${e instanceof Error ? e.message : String(e)}`);
      data = protocol.encode(completionWithError(completion.invocationId, ErrorText.invocationFailed(target)));
    }
    this.afterSend(this.socket.send(data, protocol.binary));
  }

  private afterSend(accepted: boolean): void {
    this.lastSentAt = this.env.now();
    this.env.counters.messagesSent++;
    if (!accepted || this.socket.bufferedAmount() > this.env.limits.maxBufferedBytes) this.closeTooSlow();
  }

  /** Back-pressure policy: uWS would silently drop what does not fit, so a client that cannot keep up is closed. */
  private closeTooSlow(): void {
    if (this.stateValue === ConnectionState.Closed) return;
    this.env.counters.slowClientsClosed++;
    this.env.logger.warn(`${this.connectionId}: ${this.socket.bufferedAmount()} bytes unsent, closing the slow connection`);
    this.close(ErrorText.clientTooSlow, true);
  }

  private protocolError(e: unknown): void {
    const { counters, logger } = this.env;
    counters.protocolErrors++;
    if (e instanceof MessageTooLargeError) counters.oversizedMessages++;
    if (e instanceof InvalidDataError) logger.info(`${this.connectionId}: closing after a protocol error: ${e.message}`);
    else logger.error(`${this.connectionId}: unexpected error while reading: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`);
    this.close(ErrorText.connectionError);
  }

  private joinGroup(name: string): void {
    const protocol = this.protocolValue;
    if (this.stateValue !== ConnectionState.Connected || !protocol) return;
    if (this.env.groups.add(name, this)) this.socket.subscribe(groupTopic(name, protocol.name));
    // Hub methods admit a connection to a group only after checking who it is (JoinSession checks
    // the device token): from now on it gets the budget of an authenticated client.
    if (!this.authenticated) {
      this.authenticated = true;
      this.budget.change(this.env.limits.authenticatedBudget, this.env.now());
    }
  }

  private leaveGroup(name: string): void {
    const protocol = this.protocolValue;
    if (!this.env.groups.remove(name, this)) return;
    if (this.stateValue === ConnectionState.Connected && protocol) this.socket.unsubscribe(groupTopic(name, protocol.name));
  }
}
