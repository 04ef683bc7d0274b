// A minimal WebSocket client (RFC 6455) straight on a TCP socket, for the load generators. They share
// two cores with the service they measure, so what they spend is taken from it: at 300 talking
// devices the generator took 40-41 % of a core on `ws` and takes 36-38 % on this (most of the rest is
// the kernel's sends). It does only what a load needs: the upgrade, masked frames that can be built
// once and sent many times, unmasked frames in, pings answered. Not a general client: no extensions,
// no TLS, no close handshake.
import { createHash, randomBytes } from 'node:crypto';
import { connect, type Socket } from 'node:net';

const GUID = '258EAFA5-E914-47DA-95CA-C5AB0DC85B11';
const OP_CONTINUATION = 0x0;
const OP_TEXT = 0x1;
const OP_BINARY = 0x2;
const OP_CLOSE = 0x8;
const OP_PING = 0x9;
const OP_PONG = 0xa;
const EMPTY = Buffer.alloc(0);

/** A client frame ready for the wire: header, mask key and masked payload. */
export function encodeClientFrame(payload: string | Buffer, opcode = typeof payload === 'string' ? OP_TEXT : OP_BINARY): Buffer {
  const body = typeof payload === 'string' ? Buffer.from(payload) : payload;
  const n = body.length;
  const headerLength = n < 126 ? 2 : n < 65536 ? 4 : 10;
  const frame = Buffer.allocUnsafe(headerLength + 4 + n);
  frame[0] = 0x80 | opcode;
  if (n < 126) frame[1] = 0x80 | n;
  else if (n < 65536) {
    frame[1] = 0x80 | 126;
    frame.writeUInt16BE(n, 2);
  } else {
    frame[1] = 0x80 | 127;
    frame.writeBigUInt64BE(BigInt(n), 2);
  }
  const mask = randomBytes(4);
  mask.copy(frame, headerLength);
  const at = headerLength + 4;
  for (let i = 0; i < n; i++) frame[at + i] = body[i]! ^ mask[i & 3]!;
  return frame;
}

export class WsClient {
  /** Each whole message as it arrives; the Buffer may be a view of the read, valid until the handler returns. */
  onMessage: (data: Buffer, binary: boolean) => void = () => {};
  /** The connection ended other than by terminate(): the server closed it, or it failed. */
  onClose: () => void = () => {};
  private terminated = false;
  private pending: Buffer = EMPTY;
  private fragments: Buffer[] = [];
  private fragmentBinary = false;

  private constructor(private readonly socket: Socket, leftover: Buffer) {
    socket.on('data', (chunk: Buffer) => this.receive(chunk));
    socket.on('error', () => {});
    socket.on('close', () => {
      if (!this.terminated) this.onClose();
    });
    // Bytes that came with the upgrade answer wait a macrotask: the caller sets onMessage after its await.
    if (leftover.length > 0) setImmediate(() => this.receive(leftover));
  }

  /** Opens `ws://host:port/path?query` and completes the upgrade. */
  static connect(url: string, timeoutMs = 10_000): Promise<WsClient> {
    const target = new URL(url);
    if (target.protocol !== 'ws:') throw new Error(`only ws:// URLs: ${url}`);
    const key = randomBytes(16).toString('base64');
    const accept = createHash('sha1').update(key + GUID).digest('base64');
    return new Promise((resolve, reject) => {
      const socket = connect({ host: target.hostname.replace(/^\[|\]$/g, ''), port: Number(target.port || 80), noDelay: true });
      let head = EMPTY;
      const timer = setTimeout(() => fail(new Error('WebSocket open timed out')), timeoutMs);
      const fail = (e: Error): void => {
        clearTimeout(timer);
        socket.destroy();
        reject(e);
      };
      const onData = (chunk: Buffer): void => {
        head = Buffer.concat([head, chunk]);
        const end = head.indexOf('\r\n\r\n');
        if (end === -1) {
          if (head.length > 16_384) fail(new Error('upgrade answer too long'));
          return;
        }
        socket.off('data', onData);
        socket.off('error', fail);
        clearTimeout(timer);
        const lines = head.subarray(0, end).toString('latin1').split('\r\n');
        if (!/^HTTP\/1\.1 101 /.test(lines[0]!)) return fail(new Error(`upgrade refused: ${lines[0]}`));
        const given = lines.find((l) => /^sec-websocket-accept:/i.test(l))?.slice('sec-websocket-accept:'.length).trim();
        if (given !== accept) return fail(new Error('upgrade answer has the wrong Sec-WebSocket-Accept'));
        resolve(new WsClient(socket, head.subarray(end + 4)));
      };
      socket.on('data', onData);
      socket.once('error', fail);
      socket.once('connect', () => {
        socket.write(
          `GET ${target.pathname}${target.search} HTTP/1.1\r\nHost: ${target.host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
          `Sec-WebSocket-Key: ${key}\r\nSec-WebSocket-Version: 13\r\n\r\n`,
        );
      });
    });
  }

  /** Sends a frame built by encodeClientFrame (the hot path: built once, sent many times). */
  sendFrame(frame: Buffer): void {
    this.socket.write(frame);
  }

  send(payload: string | Buffer): void {
    this.sendFrame(encodeClientFrame(payload));
  }

  /** Drops the connection, no close handshake. */
  terminate(): void {
    this.terminated = true;
    this.socket.destroy();
  }

  private receive(chunk: Buffer): void {
    const data = this.pending.length > 0 ? Buffer.concat([this.pending, chunk]) : chunk;
    let at = 0;
    while (data.length - at >= 2) {
      const b0 = data[at]!;
      const b1 = data[at + 1]!;
      if (b1 & 0x80) {
        this.socket.destroy(); // a server must not mask
        return;
      }
      let length = b1 & 0x7f;
      let header = 2;
      if (length === 126) {
        if (data.length - at < 4) break;
        length = data.readUInt16BE(at + 2);
        header = 4;
      } else if (length === 127) {
        if (data.length - at < 10) break;
        length = Number(data.readBigUInt64BE(at + 2));
        header = 10;
      }
      if (data.length - at < header + length) break;
      const payload = data.subarray(at + header, at + header + length);
      at += header + length;
      this.frame(b0 & 0x0f, (b0 & 0x80) !== 0, payload);
    }
    this.pending = at === data.length ? EMPTY : Buffer.from(data.subarray(at));
  }

  private frame(opcode: number, fin: boolean, payload: Buffer): void {
    switch (opcode) {
      case OP_TEXT:
      case OP_BINARY:
        if (fin) this.onMessage(payload, opcode === OP_BINARY);
        else {
          this.fragments = [Buffer.from(payload)];
          this.fragmentBinary = opcode === OP_BINARY;
        }
        break;
      case OP_CONTINUATION:
        this.fragments.push(Buffer.from(payload));
        if (fin) {
          const whole = Buffer.concat(this.fragments);
          this.fragments = [];
          this.onMessage(whole, this.fragmentBinary);
        }
        break;
      case OP_PING:
        this.sendFrame(encodeClientFrame(payload, OP_PONG));
        break;
      case OP_CLOSE:
        this.socket.end();
        break;
    }
  }
}
