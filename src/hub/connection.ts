// One hub connection over a small HubSocket (never a uWS type): handshake, message framing with a
// carry-over buffer (the transport is a byte stream, as in ASP.NET), per-connection sequential
// dispatch (ASP.NET runs one invocation per client at a time, so a JoinSession finishes before the
// next SendAudioData starts), keep-alive pings, client timeout, back-pressure policy and Close.
import type { Logger } from '../log/logger.js';
import type { HubCounters } from './counters.js';
import type { HubDispatcher } from './dispatcher.js';
import { ErrorText, InvalidDataError, MessageTooLargeError } from './errors.js';
import { groupTopic, type GroupRegistry } from './groups.js';
import { chooseProtocol, handshakeResponse, parseHandshakeRequest } from './handshake.js';
import {
  MessageType,
  completionWithError,
  invocation,
  type CompletionMessage,
  type HubMessage,
  type HubProtocol,
  type InvocationMessage,
  type ProtocolName,
  type StreamInvocationMessage,
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
  /** Invocations waiting behind a running one; more is a misbehaving client. */
  readonly maxQueuedInvocations: number;
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

function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  const out = new Uint8Array(a.length + b.length);
  out.set(a, 0);
  out.set(b, a.length);
  return out;
}

export class HubConnection {
  private stateValue: ConnectionState = ConnectionState.Handshaking;
  private protocolValue: HubProtocol | undefined;
  private pending: Uint8Array = EMPTY;
  private readonly queue: (InvocationMessage | StreamInvocationMessage)[] = [];
  private pumping = false;
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

  /** Bytes of one WebSocket frame, owned by the connection (the caller copied them out of uWS). */
  receive(frame: Uint8Array): void {
    if (this.stateValue === ConnectionState.Closed) return;
    this.lastReceivedAt = this.env.now();
    let buffer = this.pending.length > 0 ? concat(this.pending, frame) : frame;
    this.pending = EMPTY;
    if (this.stateValue === ConnectionState.Handshaking) {
      const rest = this.handshake(buffer);
      if (rest === undefined) return;
      buffer = rest;
    }
    const protocol = this.protocolValue;
    if (!protocol || buffer.length === 0) return;
    try {
      const { messages, rest } = protocol.split(buffer, this.env.limits.maximumReceiveMessageSize);
      // Copy the short tail so it does not pin a whole (up to 16 MiB) frame.
      this.pending = rest.length > 0 ? rest.slice() : EMPTY;
      for (const body of messages) {
        const message = protocol.decode(body);
        this.env.counters.messagesReceived++;
        if (message) this.handle(message);
        if (this.isClosed()) return;
      }
    } catch (e) {
      this.protocolError(e);
    }
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
    this.queue.length = 0;
    this.pending = EMPTY;
    this.env.groups.removeMember(this);
  }

  /** Returns the bytes after the handshake request, or undefined when there is nothing more to do now. */
  private handshake(buffer: Uint8Array): Uint8Array | undefined {
    let parsed: ReturnType<typeof parseHandshakeRequest>;
    try {
      parsed = parseHandshakeRequest(buffer, this.env.limits.maximumReceiveMessageSize);
    } catch (e) {
      this.env.logger.debug(`${this.connectionId}: bad handshake: ${e instanceof Error ? e.message : String(e)}`);
      this.failHandshake(ErrorText.handshakeFailed);
      return undefined;
    }
    if (parsed.kind === 'incomplete') {
      this.pending = buffer.slice();
      return undefined;
    }
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

  private handle(message: HubMessage): void {
    switch (message.type) {
      case MessageType.Invocation:
      case MessageType.StreamInvocation:
        if (this.queue.length >= this.env.limits.maxQueuedInvocations) {
          this.protocolError(new InvalidDataError(`more than ${this.env.limits.maxQueuedInvocations} invocations queued`));
          return;
        }
        this.queue.push(message);
        if (!this.pumping) void this.pump();
        return;
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

  /** Runs queued invocations one at a time, in arrival order. */
  private async pump(): Promise<void> {
    this.pumping = true;
    try {
      for (let next = this.queue.shift(); next; next = this.queue.shift()) {
        this.env.counters.invocations++;
        const completion = await this.env.dispatcher.invoke(this.context, next);
        if (completion) this.sendCompletion(completion, next.target);
        if (this.isClosed()) break;
      }
    } finally {
      this.pumping = false;
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
  }

  private leaveGroup(name: string): void {
    const protocol = this.protocolValue;
    if (!this.env.groups.remove(name, this)) return;
    if (this.stateValue === ConnectionState.Connected && protocol) this.socket.unsubscribe(groupTopic(name, protocol.name));
  }
}
