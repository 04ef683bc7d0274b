// One hub connection over a small HubSocket (hub-socket.ts, never a uWS type): handshake (a frame
// before it holds at most a handshake, read by handshake-read.ts), then its MessageReader (reader.ts:
// the transport is a byte stream, as in ASP.NET; bounded work per frame), per-connection sequential
// dispatch (ASP.NET runs one invocation per client at a time, so a JoinSession finishes before the next
// SendAudioData starts), sending with its back-pressure policy (send-backlog.ts), keep-alive pings,
// client timeout and Close. With SignalR's stateful reconnect negotiated (stateful/), a socket that
// drops leaves the connection Disconnected, groups and state intact, until a new socket resumes it or
// the hub's disconnect timeout ends it. What stays here is what reads or changes the connection's state; its
// limits and collaborators are in connection-env.ts, a hub method's view of it in call-context.ts.
import { callContext } from './call-context.js';
import { ConnectionState, type ConnectionEnv } from './connection-env.js';
import { ErrorText, InvalidDataError, MessageTooLargeError } from './errors.js';
import { HANDSHAKE_MAX_BYTES, handshakeResponse } from './handshake.js';
import { readHandshake, type HandshakeRead } from './handshake-read.js';
import { FrameTaken, type HubSocket } from './hub-socket.js';
import { MessageReader, type ReaderHost } from './reader.js';
import { SendBacklog, type Slowness } from './send-backlog.js';
import { frameBytes, type Frame } from './stateful/frame-queue.js';
import { StatefulLink } from './stateful/link.js';
import { isSequenced } from './stateful/receive-sequence.js';
import {
  MessageType,
  completionWithError,
  type CompletionMessage,
  type HubMessage,
  type HubProtocol,
  type InvocationMessage,
  type StreamInvocationMessage,
} from './messages.js';
import type { HubCallContext } from './types.js';

const EMPTY = new Uint8Array(0);
const PING: HubMessage = { type: MessageType.Ping };

export class HubConnection {
  private stateValue: ConnectionState = ConnectionState.Handshaking;
  private protocolValue: HubProtocol | undefined;
  /** Bytes of an incomplete handshake request. */
  private pending: Uint8Array = EMPTY;
  /** Reads the messages once the handshake is done. */
  private reader: MessageReader | undefined;
  private authenticated: boolean;
  /** The reader's view of this connection. */
  private readonly readerHost: ReaderHost;
  private readonly openedAt: number;
  private lastReceivedAt: number;
  /**
   * The client timeout runs once the client has sent a Ping, as in ASP.NET Core (its dispatcher starts
   * it there): clients that never ping (the ASP.NET Core 2.1 JavaScript client, hand-written firmware)
   * would otherwise be closed whenever they listen for longer than it.
   */
  private clientPings = false;
  private lastSentAt: number;
  /** Set by the handshake when stateful reconnect was negotiated and the client speaks protocol version 2. */
  private stateful: StatefulLink | undefined;
  private disconnectedAt = 0;
  private readonly backlog: SendBacklog;
  readonly context: HubCallContext;

  constructor(
    readonly connectionId: string,
    readonly user: unknown,
    private socket: HubSocket,
    private readonly env: ConnectionEnv,
    /** The connection token a reconnect presents; only when negotiate agreed to stateful reconnect. */
    readonly resumeKey?: string,
    /** The client's address key (address-slots.ts), which its anonymous messages are charged to as well. */
    private readonly address?: string,
  ) {
    this.openedAt = this.lastReceivedAt = this.lastSentAt = env.now();
    this.backlog = new SendBacklog(env.unsent, env.limits.maxBufferedBytes);
    // A token on the connection was verified at negotiate or upgrade time (undefined: none given).
    this.authenticated = user !== undefined;
    this.readerHost = {
      connectionId,
      isClosed: () => this.isClosed(),
      handle: (message) => this.handle(message),
      protocolError: (e) => this.protocolError(e),
      close: (error, allowReconnect) => this.close(error, allowReconnect),
    };
    this.context = callContext(this, env.groups);
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

  /** Stateful reconnect is in use: a dropped socket leaves the connection waiting for the client. */
  isResumable(): boolean {
    return this.stateful !== undefined && this.stateValue !== ConnectionState.Closed && this.stateValue !== ConnectionState.Closing;
  }

  /** When the socket dropped (Disconnected only). */
  get disconnectedSince(): number | undefined {
    return this.stateValue === ConnectionState.Disconnected ? this.disconnectedAt : undefined;
  }

  /**
   * Bytes of one WebSocket frame, valid only during the call (uWS reuses them). Before the handshake is
   * done they may hold a handshake and no more; after it the reader takes them.
   */
  receive(data: Uint8Array): void {
    if (this.stateValue === ConnectionState.Closed || this.stateValue === ConnectionState.Closing) return;
    if (this.reader) {
      this.reader.receive(data);
      return;
    }
    const rest = this.handshake(readHandshake(this.pending, data));
    if (rest !== undefined) this.readAfterHandshake(rest);
  }

  /** Bytes that came in the handshake's frame after the request are the first messages, lent as the frame was. */
  private readAfterHandshake(rest: Uint8Array): void {
    if (rest.length > 0) this.reader?.receive(rest);
  }

  /**
   * Sends one message in the connection's protocol; nothing happens before the handshake or after close.
   * While Disconnected only what the client must get after its reconnect is kept (sequenced messages).
   */
  send(message: HubMessage): void {
    const protocol = this.protocolValue;
    if (!protocol || !this.canDeliver(message.type)) return;
    let data: string | Uint8Array;
    try {
      data = protocol.encode(message);
    } catch (e) {
      this.env.logger.error(`cannot encode message type ${message.type} for ${this.connectionId}: ${e instanceof Error ? e.message : String(e)}`);
      return;
    }
    this.sendEncoded(data, message.type);
  }

  /**
   * Bytes of messages this connection has been given and its client not yet sent: held back for its acks
   * (stateful reconnect) or queued in the transport. Each is bounded (past the bound the connection ends as
   * too slow); a sender that checks this first can wait instead.
   */
  unsentBytes(): number {
    const held = this.stateful?.heldBytes ?? 0;
    return this.stateValue === ConnectionState.Connected ? held + this.socket.bufferedAmount() : held;
  }

  /**
   * A group message, encoded once for every member of its protocol: a stateful member keeps it for
   * replay (and may hold it back), any other is sent it.
   */
  sendGroupFrame(frame: Frame): void {
    if (this.stateful) {
      if (this.canDeliver(MessageType.Invocation)) this.deliver(frame);
    } else this.sendFrame(frame);
  }

  private canDeliver(type: number): boolean {
    if (this.stateValue === ConnectionState.Connected) return true;
    return this.stateValue === ConnectionState.Disconnected && isSequenced(type);
  }

  private sendEncoded(data: Frame, type: number): void {
    if (this.stateful && isSequenced(type)) this.deliver(data);
    else this.sendFrame(data);
  }

  /**
   * A sequenced message of a stateful connection: kept until acknowledged, held back while too much is
   * unacknowledged. What is held back is bounded; past it the connection ends (counted and logged), so
   * its reconnect is refused and the client knows to start afresh, instead of a message vanishing.
   */
  private deliver(frame: Frame): void {
    const link = this.stateful!;
    const admission = link.offer(frame);
    if (admission === 'send' && this.stateValue === ConnectionState.Connected) this.sendFrame(frame);
    if (admission !== 'overflow') return;
    this.env.counters.replayOverflows++;
    this.env.closings.warn(`${this.connectionId}: ${link.describe()}: ending the connection`);
    this.close(ErrorText.clientTooSlow, true);
  }

  /**
   * Every message frame, encoded in this connection's protocol, reaches the transport here, whether made
   * for this connection alone or once for a whole group.
   */
  sendFrame(data: Frame): void {
    const protocol = this.protocolValue;
    if (this.stateValue !== ConnectionState.Connected || !protocol) return;
    this.afterSend(this.socket.send(data, protocol.binary));
  }

  /** The transport wrote some of what it held for `socket`: the hub's account follows. */
  transportDrained(socket: HubSocket): void {
    if (socket === this.socket && !this.isClosed()) this.backlog.observe(socket.bufferedAmount());
  }

  /** The transport dropped a frame it had accepted (its back-pressure limit): the client is too slow. */
  transportDropped(): void {
    this.closeTooSlow();
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
    const ack = this.stateful?.ackDue(now);
    if (ack !== undefined) this.send({ type: MessageType.Ack, sequenceId: ack });
    if (this.clientPings && now - this.lastReceivedAt >= limits.clientTimeoutMs) {
      counters.clientTimeouts++;
      logger.debug(`${this.connectionId}: nothing received for ${limits.clientTimeoutMs} ms, closing`);
      // As ASP.NET Core 8 closes it: the timeout is the connection's CloseException (its Close says
      // "Connection closed with an error."), and AbortAllowReconnect lets the client reconnect.
      this.close(ErrorText.connectionError, true);
      return;
    }
    const slow = this.backlog.slowness(this.socket.bufferedAmount());
    if (slow) {
      this.closeTooSlow(slow);
      return;
    }
    // A ping only when nothing else went out: any message resets the client's server timeout.
    if (now - this.lastSentAt >= limits.keepAliveIntervalMs) this.send(PING);
  }

  /** Sends a Close message (after the handshake) and closes the socket. Idempotent. */
  close(error?: string, allowReconnect = false): void {
    if (this.stateValue === ConnectionState.Closed) return;
    this.sendClose(error, allowReconnect);
    this.abort();
  }

  /**
   * Sends a Close message and leaves the socket for the client to close (Closing); false, having done
   * nothing, when there is no one to say it to (no handshake yet, or the socket is gone): close instead.
   */
  sayGoodbye(error?: string, allowReconnect = false): boolean {
    if (!this.sendClose(error, allowReconnect)) return false;
    this.stateValue = ConnectionState.Closing;
    this.reader?.clear();
    return true;
  }

  private sendClose(error: string | undefined, allowReconnect: boolean): boolean {
    const protocol = this.protocolValue;
    if (this.stateValue !== ConnectionState.Connected || !protocol) return false;
    const close: HubMessage = { type: MessageType.Close, ...(error !== undefined ? { error } : {}), allowReconnect };
    this.socket.send(protocol.encode(close), protocol.binary);
    return true;
  }

  /**
   * The transport reported `socket` closed (either side); nothing may touch it any more. A stateful
   * connection whose socket the network `dropped` (no close frame, and not the transport refusing what
   * the client sent: the transport tells) waits Disconnected for the client to come back. Returns true
   * when it does; any other close ends it for good.
   */
  onSocketClosed(socket: HubSocket = this.socket, dropped = false): boolean {
    // A socket replaced by a reconnect closing late changes nothing.
    if (socket !== this.socket || this.stateValue === ConnectionState.Closed) return false;
    if (this.stateful && dropped && this.stateValue === ConnectionState.Connected) {
      this.stateValue = ConnectionState.Disconnected;
      this.disconnectedAt = this.env.now();
      // What the socket held went with it.
      this.backlog.observe(0);
      // Bytes read and not handled yet are dropped: the client sends every unacknowledged message again.
      this.reader?.clear();
      return true;
    }
    this.markClosed();
    return false;
  }

  /**
   * A reconnect with this connection's token: `socket` replaces the old one (dropped at once if the hub
   * had not noticed it drop), the client's messages are ignored until its Sequence message, and every
   * unacknowledged message goes out again after a Sequence message of ours. No new handshake: the
   * client continues the connection it had.
   */
  resume(socket: HubSocket): void {
    const link = this.stateful;
    const protocol = this.protocolValue;
    if (!link || !protocol || !this.isResumable()) throw new Error(`${this.connectionId} cannot be resumed`);
    const old = this.socket;
    this.socket = socket;
    // Not ended with a close handshake, which waits 12 to 16 s for a client that does not answer
    // (close-wait.ts): the client has left that socket, what it had not read is replayed here, and a
    // client reconnecting over and over held that many sockets, counted in no connection limit.
    if (this.stateValue === ConnectionState.Connected) old.drop();
    this.stateValue = ConnectionState.Connected;
    this.lastReceivedAt = this.env.now();
    this.reader?.clear();
    socket.send(protocol.encode({ type: MessageType.Sequence, sequenceId: link.resume() }), protocol.binary);
    this.backlog.startReplay();
    link.replay((frame) => {
      this.backlog.replayed(frameBytes(frame));
      socket.send(frame, protocol.binary);
    });
    this.afterSend(FrameTaken.First);
    this.env.counters.reconnects++;
  }

  /** The disconnect timeout passed without the client coming back. */
  expire(): void {
    if (this.stateValue !== ConnectionState.Disconnected) return;
    this.env.counters.reconnectWindowsExpired++;
    this.markClosed();
  }

  private abort(): void {
    if (this.stateValue === ConnectionState.Closed) return;
    this.markClosed();
    this.socket.end();
  }

  private markClosed(): void {
    this.stateValue = ConnectionState.Closed;
    this.backlog.observe(0);
    this.reader?.clear();
    this.pending = EMPTY;
    this.stateful?.clear();
    this.env.groups.removeMember(this);
    this.env.ended(this);
  }

  /** Returns the bytes after the handshake request, or undefined when there is nothing more to do now. */
  private handshake(read: HandshakeRead): Uint8Array | undefined {
    if (read.kind === 'incomplete') {
      this.pending = read.pending;
      return undefined;
    }
    if (read.kind === 'oversized') {
      this.env.counters.framesTooLarge++;
      this.env.closings.info(`${this.connectionId}: closing: ${read.bytes} bytes before the handshake was done, more than a handshake (${HANDSHAKE_MAX_BYTES})`);
      this.failHandshake(ErrorText.handshakeCanceled);
      return undefined;
    }
    if (read.kind === 'refused') {
      this.env.logger.debug(`${this.connectionId}: ${read.reason}`);
      this.failHandshake(read.error);
      return undefined;
    }
    this.pending = EMPTY;
    const protocol = this.env.protocols[read.protocol];
    this.protocolValue = protocol;
    // Stateful reconnect starts with hub protocol version 2; an older client just does without it.
    if (this.resumeKey !== undefined && read.version >= 2) {
      const { limits } = this.env;
      this.stateful = new StatefulLink(limits.statefulReconnectBufferSize, limits.maxBufferedBytes, this.env.now());
    }
    this.stateValue = ConnectionState.Connected;
    this.reader = new MessageReader(this.readerHost, protocol, this.env, this.authenticated, this.address);
    // The response goes in the protocol's transfer format, as ASP.NET writes it; the TS client parses either.
    this.afterSend(this.socket.send(handshakeResponse(), protocol.binary));
    this.env.logger.debug(`${this.connectionId}: handshake done, protocol ${protocol.name}`);
    return read.rest;
  }

  private failHandshake(error: string): void {
    this.env.counters.handshakeFailures++;
    this.socket.send(handshakeResponse(error), false);
    this.abort();
  }

  /** Invocations run one at a time: the reader awaits the promise before the next message. */
  private handle(message: HubMessage): Promise<void> | undefined {
    // A whole message resets the client timeout, not any bytes: as in ASP.NET Core (8 and later), a client
    // trickling the bytes of a message it never finishes is still timed out.
    this.lastReceivedAt = this.env.now();
    if (this.stateful && !this.stateful.accept(message.type)) return undefined;
    if (message.type !== MessageType.Invocation && message.type !== MessageType.StreamInvocation) {
      this.handleOther(message);
      return undefined;
    }
    return this.invoke(message);
  }

  /** A promise only for a method that returned one: the reader then waits for it before the next message. */
  private invoke(message: InvocationMessage | StreamInvocationMessage): Promise<void> | undefined {
    this.env.counters.invocations++;
    const completion = this.env.dispatcher.invoke(this.context, message);
    if (completion instanceof Promise) {
      return completion.then((done) => {
        if (done) this.sendCompletion(done, message.target);
      });
    }
    if (completion) this.sendCompletion(completion, message.target);
    return undefined;
  }

  /** Every message but invocations: handled at once, nothing kept from it. */
  private handleOther(message: HubMessage): void {
    switch (message.type) {
      case MessageType.Close:
        // The client is leaving. ASP.NET Core answers with a Close of its own, without an error and
        // without allowReconnect (Abort, then the handler's Close, whatever error the client gave).
        this.env.logger.debug(`${this.connectionId}: client sent Close${message.error ? `: ${message.error}` : ''}`);
        this.close();
        return;
      case MessageType.Ack:
        this.stateful?.onAck(message.sequenceId, (frame) => this.sendFrame(frame));
        return;
      case MessageType.Sequence:
        // Throws a protocol error for an id past what was received (the reader closes the connection).
        this.stateful?.onSequence(message.sequenceId);
        return;
      case MessageType.Ping:
        // Receiving it already reset the client timeout; the first one starts it.
        this.clientPings = true;
        return;
      default:
        // CancelInvocation, StreamItem, Completion: no streams or client results here. Ack and
        // Sequence without stateful reconnect: ignored.
        return;
    }
  }

  /** A result that cannot be encoded still owes the caller a completion: an error one. */
  private sendCompletion(completion: CompletionMessage, target: string): void {
    const protocol = this.protocolValue;
    if (!protocol || !this.canDeliver(completion.type)) return;
    let data: string | Uint8Array;
    try {
      data = protocol.encode(completion);
    } catch (e) {
      this.env.logger.error(`'${target}' result cannot be encoded: ${e instanceof Error ? e.message : String(e)}`);
      data = protocol.encode(completionWithError(completion.invocationId, ErrorText.invocationFailed(target)));
    }
    this.sendEncoded(data, completion.type);
  }

  /**
   * The clock and the transport's back-pressure are read for the first frame of each write only (3a's
   * 7 frames a round trip leave in about 3 writes): a frame that joins others waiting for the same write
   * would find what the first found or less, and could not fail the check the first passed, except
   * while a replay's allowance is open (which an emptier transport ends). The keep-alive's lastSentAt
   * is the first frame's time: the frames of a write leave together.
   */
  private afterSend(taken: FrameTaken): void {
    this.env.counters.messagesSent++;
    if (taken === FrameTaken.Joined && !this.backlog.replaying) return;
    this.lastSentAt = this.env.now();
    const slow = taken === FrameTaken.Refused ? 'own' : this.backlog.slowness(this.socket.bufferedAmount());
    if (slow) this.closeTooSlow(slow);
  }

  /** Back-pressure policy: uWS would silently drop what does not fit, so a client that cannot keep up is closed. */
  private closeTooSlow(why: Slowness = 'own'): void {
    if (this.stateValue === ConnectionState.Closed) return;
    this.env.counters.slowClientsClosed++;
    const held = this.backlog.reason(why);
    // Throttled with the other closings: clients that stop reading can be opened one after another.
    this.env.closings.warn(`${this.connectionId}: ${this.socket.bufferedAmount()} bytes unsent${held}, closing the slow connection`);
    this.close(ErrorText.clientTooSlow, true);
  }

  private protocolError(e: unknown): void {
    const { counters, logger } = this.env;
    counters.protocolErrors++;
    if (e instanceof MessageTooLargeError) counters.oversizedMessages++;
    if (e instanceof InvalidDataError) this.env.closings.info(`${this.connectionId}: closing after a protocol error: ${e.message}`);
    else logger.error(`${this.connectionId}: unexpected error while reading: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`);
    // ASP.NET Core's Close after an error while reading allows a reconnect: only an abort (the app's, or
    // the client's Close) clears the connection's AllowReconnect, which starts true.
    this.close(ErrorText.connectionError, true);
  }

  /** The hub method's joinGroup (call-context.ts). */
  joinGroup(name: string): void {
    const protocol = this.protocolValue;
    // A method that was running when a stateful connection's socket dropped still changes its state.
    if (!protocol || !this.canDeliver(MessageType.Invocation)) return;
    this.env.groups.add(name, this);
    // Hub methods admit a connection to a group only after checking who it is (JoinSession checks
    // the device token): from now on it gets the budget of an authenticated client.
    this.authenticated = true;
    this.reader?.authenticate();
  }
}
