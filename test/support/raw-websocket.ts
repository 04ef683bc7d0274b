// A WebSocket client on a bare socket, for tests that must control when it reads and what it sends
// after the server closed (a `ws` client reads, answers and ends on its own): frames built by hand
// (short payloads), the server's frames split out of the bytes received.
import { request } from 'node:http';
import type { Socket } from 'node:net';
import { withTimeout } from './wait.js';

/** A masked client frame (RFC 6455 section 5.3) of under 64 KiB. */
export function clientFrame(opcode: number, payload: Buffer): Buffer {
  const mask = Buffer.from([0x12, 0x34, 0x56, 0x78]);
  const header = payload.length < 126
    ? Buffer.from([0x80 | opcode, 0x80 | payload.length])
    : Buffer.from([0x80 | opcode, 0x80 | 126, payload.length >> 8, payload.length & 0xff]);
  return Buffer.concat([header, mask, Buffer.from(payload.map((b, i) => b ^ mask[i % 4]!))]);
}

export const textFrame = (s: string): Buffer => clientFrame(0x1, Buffer.from(s));
/** A close frame with code 1000. */
export const closeFrame = (): Buffer => clientFrame(0x8, Buffer.from([0x03, 0xe8]));

export interface ServerFrame {
  opcode: number;
  payload: Buffer;
}

/** Splits what the server sent (unmasked frames of under 64 KiB) into frames. */
export function serverFrames(bytes: Buffer): ServerFrame[] {
  const frames: ServerFrame[] = [];
  let at = 0;
  while (at + 2 <= bytes.length) {
    let length = bytes[at + 1]! & 0x7f;
    let start = at + 2;
    if (length === 126) {
      length = bytes.readUInt16BE(at + 2);
      start += 2;
    }
    frames.push({ opcode: bytes[at]! & 0x0f, payload: bytes.subarray(start, start + length) });
    at = start + length;
  }
  return frames;
}

/** The text messages of `frames`, and the code of their close frame. */
export function ending(frames: ServerFrame[]): { messages: string[]; closeCode: number | undefined } {
  return {
    messages: frames.filter((f) => f.opcode === 0x1).map((f) => f.payload.toString()),
    closeCode: frames.find((f) => f.opcode === 0x8)?.payload.readUInt16BE(0),
  };
}

/**
 * Upgrades a bare socket to a WebSocket at `url` (http://...). It is half-open: Node would answer the
 * server's FIN with its own at once. `path`, when given, is sent as written (URL parsing would remove
 * its dot segments).
 */
export function upgradeSocket(url: string, path?: string): Promise<Socket> {
  const target = new URL(url);
  return withTimeout(new Promise((resolve, reject) => {
    const req = request({
      host: target.hostname, port: target.port, path: path ?? `${target.pathname}${target.search}`,
      headers: { Connection: 'Upgrade', Upgrade: 'websocket', 'Sec-WebSocket-Version': '13', 'Sec-WebSocket-Key': 'dGhlIHNhbXBsZSBub25jZQ==' },
    });
    req.on('upgrade', (_res, socket: Socket) => {
      socket.allowHalfOpen = true;
      resolve(socket);
    });
    req.on('response', (res) => reject(new Error(`HTTP ${res.statusCode}`)));
    req.on('error', reject);
    req.end();
  }), 5000, 'the upgrade');
}

/** What the socket got until it ended, and the error that ended it, if one did. */
export function collect(socket: Socket): { bytes: () => Buffer; ended: Promise<string | undefined> } {
  const chunks: Buffer[] = [];
  socket.on('data', (d: Buffer) => chunks.push(d));
  const ended = new Promise<string | undefined>((resolve) => {
    socket.on('error', (e: NodeJS.ErrnoException) => resolve(e.code ?? e.message));
    socket.on('end', () => resolve(undefined));
  });
  return { bytes: () => Buffer.concat(chunks), ended };
}

/**
 * A JSON hub client at `hubUrl`, past its handshake, with its reading paused: it has read the handshake
 * answer and nothing after it.
 */
export async function pausedHubClient(hubUrl: string): Promise<{ socket: Socket; got: ReturnType<typeof collect> }> {
  const socket = await upgradeSocket(hubUrl);
  const got = collect(socket);
  socket.write(textFrame('{"protocol":"json","version":1}\u001e'));
  await withTimeout(new Promise((resolve) => socket.once('data', resolve)), 5000, 'the handshake answer');
  socket.pause();
  return { socket, got };
}

/**
 * Sends `frame` every `everyMs` for `forMs` or until a write fails; the write error's code, if one did.
 * What a device mid-stream does while it has not read what the server sent.
 */
export async function keepSending(socket: Socket, frame: Buffer, forMs: number, everyMs: number): Promise<string | undefined> {
  let error: string | undefined;
  const onError = (e: NodeJS.ErrnoException): void => {
    error ??= e.code ?? e.message;
  };
  socket.on('error', onError);
  const until = performance.now() + forMs;
  while (error === undefined && performance.now() < until) {
    socket.write(frame);
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
  socket.off('error', onError);
  return error;
}
