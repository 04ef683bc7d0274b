// The hub message union shared by both protocols (SignalR's hub protocol), and the interface a
// hub protocol implements: framing, decoding one message, encoding one message.
import type { ReadMessage } from './text-format.js';

export const MessageType = {
  Invocation: 1,
  StreamItem: 2,
  Completion: 3,
  StreamInvocation: 4,
  CancelInvocation: 5,
  Ping: 6,
  Close: 7,
  Ack: 8,
  Sequence: 9,
} as const;

/** String keys and string values; never interpreted, but must be accepted (SignalR's message headers). */
export type MessageHeaders = Record<string, string>;

export interface InvocationMessage {
  readonly type: typeof MessageType.Invocation;
  readonly headers?: MessageHeaders;
  /** Absent for non-blocking invocations (`send`), which never get a completion. */
  readonly invocationId?: string;
  readonly target: string;
  readonly arguments: unknown[];
  readonly streamIds?: string[];
  /** Why the arguments could not be read (see BindingFailure); the arguments are then empty. */
  readonly bindingFailure?: BindingFailure;
  /**
   * MessagePack: why the stream ids after the arguments could not be read. ASP.NET's reader reads them
   * only once the arguments bound (an invocation that does not bind is answered as one, its stream ids
   * never read), so the dispatcher closes the connection for them only past the binding.
   */
  readonly streamIdsFailure?: string;
}

export interface StreamInvocationMessage {
  readonly type: typeof MessageType.StreamInvocation;
  readonly headers?: MessageHeaders;
  readonly invocationId: string;
  readonly target: string;
  readonly arguments: unknown[];
  readonly streamIds?: string[];
  /** Why the arguments could not be read (see BindingFailure); the arguments are then empty. */
  readonly bindingFailure?: BindingFailure;
  /**
   * MessagePack: why the stream ids after the arguments could not be read. ASP.NET's reader reads them
   * only once the arguments bound (an invocation that does not bind is answered as one, its stream ids
   * never read), so the dispatcher closes the connection for them only past the binding.
   */
  readonly streamIdsFailure?: string;
}

/**
 * An invocation whose envelope is valid but whose arguments cannot be read is not a protocol error:
 * as ASP.NET's InvocationBindingFailureMessage, it fails that invocation with a completion error and
 * the connection lives on. The text is for the log only.
 */
export type BindingFailure = string;

export interface StreamItemMessage {
  readonly type: typeof MessageType.StreamItem;
  readonly headers?: MessageHeaders;
  readonly invocationId: string;
  readonly item: unknown;
}

/** Exactly one of: an error, a result (hasResult), or neither (void). */
export interface CompletionMessage {
  readonly type: typeof MessageType.Completion;
  readonly headers?: MessageHeaders;
  readonly invocationId: string;
  readonly error?: string;
  readonly result?: unknown;
  readonly hasResult: boolean;
}

export interface CancelInvocationMessage {
  readonly type: typeof MessageType.CancelInvocation;
  readonly headers?: MessageHeaders;
  readonly invocationId: string;
}

export interface PingMessage {
  readonly type: typeof MessageType.Ping;
}

export interface CloseMessage {
  readonly type: typeof MessageType.Close;
  readonly error?: string;
  /** Only `true` lets a client with automatic reconnect enabled reconnect after this message. */
  readonly allowReconnect?: boolean;
}

export interface AckMessage {
  readonly type: typeof MessageType.Ack;
  readonly sequenceId: number;
}

export interface SequenceMessage {
  readonly type: typeof MessageType.Sequence;
  readonly sequenceId: number;
}

export type HubMessage =
  | InvocationMessage
  | StreamInvocationMessage
  | StreamItemMessage
  | CompletionMessage
  | CancelInvocationMessage
  | PingMessage
  | CloseMessage
  | AckMessage
  | SequenceMessage;

export type ProtocolName = 'json' | 'messagepack';

export interface HubProtocol {
  readonly name: ProtocolName;
  /** The transfer format: MessagePack travels in binary WebSocket frames, JSON in text frames. */
  readonly binary: boolean;
  /**
   * Reads the one message that starts at `offset` (undefined while it is incomplete); throws
   * InvalidDataError. One at a time, so a frame's messages are never all held at once.
   */
  read(buffer: Uint8Array, offset: number, maxMessageSize: number): ReadMessage | undefined;
  /** Decodes one message body; `null` for unknown message types, which SignalR's hub protocol says to ignore. Throws InvalidDataError. */
  decode(body: Uint8Array): HubMessage | null;
  /**
   * decode() may return views into `body` (MessagePack's bin values) rather than copies: such a
   * message must not outlive bytes that are only lent (a uWS frame).
   */
  readonly decodesViews: boolean;
  /** Encodes one message with its framing: a string for text frames, bytes for binary frames. */
  encode(message: HubMessage): string | Uint8Array;
}

export const completionWithResult = (invocationId: string, result: unknown): CompletionMessage => ({
  type: MessageType.Completion,
  invocationId,
  result,
  hasResult: true,
});

export const completionWithError = (invocationId: string, error: string): CompletionMessage => ({
  type: MessageType.Completion,
  invocationId,
  error,
  hasResult: false,
});

export const invocation = (target: string, args: unknown[]): InvocationMessage => ({
  type: MessageType.Invocation,
  target,
  arguments: args,
});
