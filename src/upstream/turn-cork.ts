// Upstream writes coalesced per event-loop turn. The upstream protocol carries one JSON message per
// WebSocket frame, so frames cannot be merged; but the frames a link sends during one turn (a device
// sending faster than one packet per turn, text after audio) can leave in one write: the TCP socket is
// corked at the turn's first frame and uncorked, for every link at once, at the end of the turn or
// once the first has waited MAX_HOLD_MS (a long turn must not hold the upstream's packets: end-of-turn.ts).
import type { Socket } from 'node:net';
import type WebSocket from 'ws';
import { EndOfTurn } from '../end-of-turn.js';

const corked = new EndOfTurn<Socket>((socket) => socket.uncork());

/**
 * The TCP socket under a `ws` client socket. `ws` (pinned exactly) keeps it in `_socket` and corks it
 * itself around each frame's two writes, which nests inside this cork. Checked where it is taken, so a
 * `ws` without it fails at connect time, not on the first write.
 */
export function rawSocket(ws: WebSocket): Socket {
  const raw = (ws as unknown as { _socket?: Socket })._socket;
  if (!raw || typeof raw.cork !== 'function' || typeof raw.uncork !== 'function') {
    throw new Error('the ws client socket has no TCP socket to cork (ws version other than 8.18.3?)');
  }
  return raw;
}

/** Holds `socket`'s writes until the end of this turn at most (later calls meanwhile do nothing). */
export function corkForTurn(socket: Socket): void {
  if (corked.add(socket)) socket.cork();
}
