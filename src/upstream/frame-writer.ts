// Upstream frames written by the link, one write per link and event-loop turn. The upstream protocol
// carries one JSON message per WebSocket frame, so frames cannot be merged; `ws`' own send makes a
// header buffer and a payload buffer per frame and writes both through the socket's stream (2 writes,
// a cork and a random-pool draw each), which a profile at 16 packets in flight per session put at
// about a tenth of the event loop. Here a frame is made in one buffer (header, mask, masked UTF-8
// payload), the frames of a turn wait in the writer, and the turn's end (or MAX_HOLD_MS: end-of-turn.ts)
// writes them with one socket write. `ws` still owns the connection: the handshake, reading, pings,
// pongs and the close; its writes are whole frames too, so the two never interleave inside a frame, and
// its `bufferedAmount` counts the socket's queue, which these writes join.
import { randomFillSync } from 'node:crypto';
import type { Socket } from 'node:net';
import type WebSocket from 'ws';
import { EndOfTurn } from '../end-of-turn.js';

const OPCODE_TEXT = 0x1;
const FIN = 0x80;
const MASKED = 0x80;

/**
 * Masking keys are drawn from a pool of random bytes refilled from the CSPRNG, as RFC 6455 5.3 asks
 * for keys a script cannot predict; one system call per 1,024 frames instead of one per frame.
 */
const MASK_POOL_BYTES = 4096;
const maskPool = Buffer.alloc(MASK_POOL_BYTES);
let maskPoolNext = MASK_POOL_BYTES;

const writers = new EndOfTurn<UpstreamFrameWriter>((writer) => writer.flush());

/**
 * The TCP socket under a `ws` client socket. `ws` (pinned exactly) keeps it in `_socket`. Checked where
 * it is taken, so a `ws` without it fails at connect time, not on the first write.
 */
export function rawSocket(ws: WebSocket): Socket {
  const raw = (ws as unknown as { _socket?: Socket })._socket;
  if (!raw || typeof raw.write !== 'function' || typeof raw.writableLength !== 'number') {
    throw new Error('the ws client socket has no TCP socket to write to (ws version other than 8.18.3?)');
  }
  return raw;
}

/** The client's text frames of one upstream connection, held until the turn's end. */
export class UpstreamFrameWriter {
  private frames: Buffer[] = [];
  private bytes = 0;

  private readonly socket: Socket;

  /** `ws`: an open client socket; its TCP socket is taken now (rawSocket throws for a `ws` without one). */
  constructor(private readonly ws: WebSocket) {
    this.socket = rawSocket(ws);
  }

  /** Bytes framed this turn, not yet handed to the socket. */
  get pendingBytes(): number { return this.bytes; }

  /** Frames `text` (masked, as a client must) for this turn's write. */
  send(text: string): void {
    const length = Buffer.byteLength(text, 'utf8');
    const head = length < 126 ? 2 : length < 65536 ? 4 : 10;
    const frame = Buffer.allocUnsafe(head + 4 + length);
    frame[0] = FIN | OPCODE_TEXT;
    if (head === 2) {
      frame[1] = MASKED | length;
    } else if (head === 4) {
      frame[1] = MASKED | 126;
      frame.writeUInt16BE(length, 2);
    } else {
      frame[1] = MASKED | 127;
      frame.writeUInt32BE(Math.floor(length / 2 ** 32), 2);
      frame.writeUInt32BE(length >>> 0, 6);
    }
    if (maskPoolNext === MASK_POOL_BYTES) {
      randomFillSync(maskPool);
      maskPoolNext = 0;
    }
    const m0 = (frame[head] = maskPool[maskPoolNext++]!);
    const m1 = (frame[head + 1] = maskPool[maskPoolNext++]!);
    const m2 = (frame[head + 2] = maskPool[maskPoolNext++]!);
    const m3 = (frame[head + 3] = maskPool[maskPoolNext++]!);
    const start = head + 4;
    frame.write(text, start, length, 'utf8');
    const end = start + length;
    let i = start;
    for (; i + 3 < end; i += 4) {
      frame[i] = frame[i]! ^ m0;
      frame[i + 1] = frame[i + 1]! ^ m1;
      frame[i + 2] = frame[i + 2]! ^ m2;
      frame[i + 3] = frame[i + 3]! ^ m3;
    }
    for (let k = 0; i < end; i++, k++) frame[i] = frame[i]! ^ (k === 0 ? m0 : k === 1 ? m1 : m2);
    this.frames.push(frame);
    this.bytes += frame.length;
    writers.add(this);
  }

  /** Writes what waits now: before anything `ws` writes that must come after it (the close). */
  flush(): void {
    const { frames } = this;
    if (frames.length === 0) return;
    const data = frames.length === 1 ? frames[0]! : Buffer.concat(frames, this.bytes);
    this.frames = [];
    this.bytes = 0;
    writers.delete(this);
    // Once `ws` has written a close frame (the server closed during this turn), nothing may follow it;
    // the server that closed would not read it either.
    if (this.ws.readyState === this.ws.OPEN && !this.socket.destroyed) this.socket.write(data);
  }

  /** The connection is gone: what waits is dropped, as `ws` drops what it could not write. */
  discard(): void {
    this.frames = [];
    this.bytes = 0;
    writers.delete(this);
  }
}
