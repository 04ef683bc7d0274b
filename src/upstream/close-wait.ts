// How long a link waits for the voice server to end its TCP connection once the WebSocket is closing
// on the server's account: it sent its close frame, or broke the protocol (ws then sends its own close
// and a FIN). `ws` waits for the server's FIN up to its fixed close timeout of 30 s, and the link
// notices the drop only then: a server that closed but kept its socket open left the session refusing
// every packet ("upstream connection is closing") for 30 s before a reconnect was even tried.
// RFC 6455 7.1.1 lets a client end the TCP connection itself after a timeout.
import type WebSocket from 'ws';

interface Receiver { on(event: 'conclude', listener: () => void): unknown }

/**
 * `ws` is cut off `graceMs` after the server's close frame or a protocol error, unless it closed by
 * then. Throws for a `ws` without the receiver it listens to (a version other than the pinned one),
 * at connect time.
 */
export function limitCloseWait(ws: WebSocket, graceMs: number): void {
  const receiver = (ws as unknown as { _receiver?: Receiver })._receiver;
  if (!receiver || typeof receiver.on !== 'function') {
    throw new Error('the ws client socket has no receiver to watch for a close (ws version other than 8.18.3?)');
  }
  let timer: NodeJS.Timeout | undefined;
  const closing = (): void => {
    timer ??= setTimeout(() => ws.terminate(), graceMs);
  };
  receiver.on('conclude', closing);
  ws.on('error', closing);
  ws.once('close', () => clearTimeout(timer));
}
