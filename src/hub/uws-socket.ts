// A uWS WebSocket as the hub's HubSocket, with its writes batched per event-loop turn: the frames a
// connection is sent during one turn (AudioProcessed and the Completion of one call; AudioResponse and
// AudioData of one upstream packet; many of each under load) are written in one `cork`, which uWS sends
// with one syscall, instead of one syscall per frame. They go out at the end of the turn (setImmediate),
// in order; `end()` writes what is waiting first. One of the uws-*.ts files, the only ones in src/hub that
// touch uWS (uws-hub.ts says which does what).
import type { WebSocket } from 'uWebSockets.js';
import { FrameTaken, type HubSocket } from './hub-socket.js';
import { EndOfTurn } from '../end-of-turn.js';

export interface UwsSocket extends HubSocket {
  /** The close event came: the socket must not be touched again, and what waits is let go. */
  markClosed(): void;
}

/** uWS' ws.send() result for a frame it dropped because the socket is over maxBackpressure. */
const DROPPED = 2;
/**
 * A batch this large is written at once rather than at the end of the turn: a burst (a decoder thread
 * answering hundreds of packets together) then reaches the client as it is made, and what waits here
 * stays small. What waits here is not counted as unsent by bufferedAmount(): it is not the client's
 * doing, and counting a burst's bytes closed clients that read perfectly well as too slow.
 */
const EARLY_FLUSH_BYTES = 64 * 1024;

/**
 * Sockets with frames waiting for the end of this turn, shared by every socket of the process. They
 * wait for the whole turn, however long (end-of-turn.ts says what sending them sooner cost).
 */
const waiting = new EndOfTurn<Batch>((batch) => batch.flush(), { wholeTurn: true });

class Batch {
  private frames: (string | Uint8Array)[] = [];
  private binary: boolean[] = [];
  /** Bytes in `frames`. */
  private bytes = 0;

  constructor(
    private readonly ws: WebSocket<unknown>,
    /** Told when uWS dropped a frame (over its back-pressure limit). */
    private readonly onDropped: () => void,
  ) {}

  /** First when no frame was waiting or the frames went out at once: uWS may hold more than before. */
  add(data: string | Uint8Array, binary: boolean): FrameTaken {
    const first = this.frames.length === 0;
    if (first) waiting.add(this);
    this.frames.push(data);
    this.binary.push(binary);
    // A string's UTF-8 length is at least its length: close enough for a batch size.
    this.bytes += typeof data === 'string' ? data.length : data.byteLength;
    if (this.bytes < EARLY_FLUSH_BYTES) return first ? FrameTaken.First : FrameTaken.Joined;
    this.flush();
    return FrameTaken.First;
  }

  flush(): void {
    const frames = this.frames;
    if (frames.length === 0) return;
    const binary = this.binary;
    this.frames = [];
    this.binary = [];
    this.bytes = 0;
    waiting.delete(this);
    let dropped = false;
    // One frame (a device talking at its own pace gets one per turn) needs no cork: uWS writes a lone
    // send in one syscall by itself, and the cork's callback is a call into JavaScript and back.
    if (frames.length === 1) dropped = this.ws.send(frames[0]!, binary[0], false) === DROPPED;
    else {
      this.ws.cork(() => {
        for (let i = 0; i < frames.length; i++) if (this.ws.send(frames[i]!, binary[i], false) === DROPPED) dropped = true;
      });
    }
    if (dropped) this.onDropped();
  }

  clear(): void {
    this.frames = [];
    this.binary = [];
    this.bytes = 0;
    waiting.delete(this);
  }
}

/** A closed flag guards every call: uWS sockets must not be used after their close event. */
export function adaptUwsSocket(ws: WebSocket<unknown>, onDropped: () => void): UwsSocket {
  let closed = false;
  const batch = new Batch(ws, () => {
    if (!closed) onDropped();
  });
  return {
    send(data, binary) {
      if (closed) return FrameTaken.Refused;
      return batch.add(data, binary);
    },
    bufferedAmount: () => (closed ? 0 : ws.getBufferedAmount()),
    end() {
      if (closed) return;
      batch.flush();
      closed = true;
      ws.end(1000);
    },
    drop() {
      if (closed) return;
      batch.clear();
      closed = true;
      // uWS calls the close handler from inside close(), with 1006.
      ws.close();
    },
    markClosed() {
      closed = true;
      batch.clear();
    },
  };
}
