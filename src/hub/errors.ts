// Hub error types and the exact texts ASP.NET Core SignalR puts on the wire (DefaultHubDispatcher,
// ErrorMessageHelper, HubConnectionHandler with EnableDetailedErrors off), since clients show them.
import { PER_TOKEN_TEXT } from '../message-cost.js';

/**
 * Thrown by a hub method to send its message to the caller. Like ASP.NET's HubException, it is the
 * only exception whose message reaches the client; any other error is reported without details.
 */
export class HubError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'HubError';
  }
}

/** A protocol violation by the client (ASP.NET's InvalidDataException): the connection is closed with an error. */
export class InvalidDataError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'InvalidDataError';
  }
}

/** Completion and Close error texts, worded as ASP.NET Core words them. */
export const ErrorText = {
  /** The binder cannot find the target (HubConnectionBinder throws HubException "Method does not exist."). */
  unknownMethod: (target: string): string =>
    `Failed to invoke '${target}' due to an error on the server. HubException: Method does not exist.`,
  /** Argument binding failed (wrong count): the InvalidDataException details are hidden. */
  bindingFailure: (target: string): string => `Failed to invoke '${target}' due to an error on the server.`,
  /** The hub method threw: HubException messages are shown, anything else is hidden. */
  invocationFailed: (target: string, hubMessage?: string): string =>
    hubMessage === undefined
      ? `An unexpected error occurred invoking '${target}' on the server.`
      : `An unexpected error occurred invoking '${target}' on the server. HubException: ${hubMessage}`,
  streamingInvocationOfNonStreamingMethod: (target: string): string =>
    `The client attempted to invoke the non-streaming '${target}' method with a streaming invocation.`,
  clientStreams: (target: string, count: number): string =>
    ErrorText.invocationFailed(target, `Client sent ${count} stream(s), Hub method expects 0.`),
  /** Close message after a protocol error (HubConnectionHandler.SendCloseAsync). */
  connectionError: 'Connection closed with an error.',
  /** No handshake in time, or a request that does not end within the size a handshake may take. */
  handshakeCanceled: 'Handshake was canceled.',
  handshakeFailed: 'An unexpected error occurred during connection handshake.',
  protocolNotSupported: (protocol: string): string => `The protocol '${protocol}' is not supported.`,
  versionNotSupported: (protocol: string, version: number): string =>
    `The server does not support version ${version} of the '${protocol}' protocol.`,
  clientTooSlow: 'Server closed the connection: client too slow to receive messages.',
  // Budgets of our own (ASP.NET has none of these): worded like the texts above, with the figure.
  frameTooLarge: (limit: number): string => `Server closed the connection: a WebSocket frame over ${limit} bytes.`,
  clientTooFast: 'Server closed the connection: client sent data faster than it could be handled.',
  rateLimited: (burst: number, perSecond: number): string =>
    `Server closed the connection: too many messages (more than ${burst} at once or ${perSecond} per second, ${PER_TOKEN_TEXT}).`,
} as const;

/** A message longer than Hub.MaximumReceiveMessageSize (framing included). */
export class MessageTooLargeError extends InvalidDataError {
  constructor(readonly limit: number) {
    super(`The maximum message size of ${limit}B was exceeded.`);
    this.name = 'MessageTooLargeError';
  }
}

export function tooLarge(max: number): MessageTooLargeError {
  return new MessageTooLargeError(max);
}
