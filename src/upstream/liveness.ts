// Whether the voice server is still there. A server that vanished without a FIN or a reset (its host lost
// power, the network path died) or that stopped in the middle of a frame leaves an open socket that says
// nothing: the link kept it as Open, refused the devices' audio once 256 KiB waited in it ("upstream is
// not keeping up"), and the session ended at its idle timeout as "idle timeout", never reconnected.
// Silence is tested with a WebSocket ping, which every server answers as it reads (RFC 6455 5.5.2).
import type WebSocket from 'ws';
import { rawSocket } from './frame-writer.js';

/** How often the connection is looked at: a ping after one silent interval, dead after the next. */
export const LIVENESS_INTERVAL_MS = 10_000;

/**
 * Calls `silent` (once) when nothing at all came from the server, not a byte, for an interval, then a
 * ping, and still nothing for another interval. Time while the link does not read (`reading()` false:
 * its devices or its decoder are behind) does not count: the answer would be waiting unread. Stops by
 * itself when the socket closes.
 */
export function watchLiveness(ws: WebSocket, intervalMs: number, reading: () => boolean, silent: (silentMs: number) => void): void {
  const raw = rawSocket(ws);
  // The socket's byte count, looked at once an interval: no listener on the path of every packet.
  let bytesRead = raw.bytesRead;
  let pinged = false;
  const timer = setInterval(() => {
    const heard = raw.bytesRead !== bytesRead;
    bytesRead = raw.bytesRead;
    if (heard || !reading()) {
      pinged = false;
      return;
    }
    if (!pinged) {
      pinged = true;
      ws.ping();
      return;
    }
    clearInterval(timer);
    silent(2 * intervalMs);
  }, intervalMs);
  timer.unref();
  ws.once('close', () => clearInterval(timer));
}
