// A client the hub closes while it is still sending must still get the Close message and the close
// frame. uWS waits for the client's FIN after our close frame only as long as its idleTimeout's margin;
// with idleTimeout off that was one 4-s sweep (0 to 4 s), after which uWS closed the socket, the
// client's next bytes drew a reset, and the reset made the client drop the unread Close message and
// close frame (1006 instead of 1000 and the reason). These tests hold the client's reading off for
// longer than that sweep while it keeps sending, on a raw socket so that nothing reads for it.
import assert from 'node:assert/strict';
import { request } from 'node:http';
import type { Socket } from 'node:net';
import { describe, it } from 'node:test';
import { closeWaitSeconds, hubIdleTimeoutSeconds, UWS_MAX_IDLE_TIMEOUT_S } from '../../src/hub/close-wait.js';
import { ErrorText } from '../../src/hub/errors.js';
import { shippedBudgets, startHub } from './helpers.js';
import { sleep, withTimeout } from '../support/wait.js';

/** A masked client frame (RFC 6455 section 5.3); the payloads here are short. */
function clientFrame(opcode: number, payload: Buffer): Buffer {
  const mask = Buffer.from([0x12, 0x34, 0x56, 0x78]);
  const header = payload.length < 126
    ? Buffer.from([0x80 | opcode, 0x80 | payload.length])
    : Buffer.from([0x80 | opcode, 0x80 | 126, payload.length >> 8, payload.length & 0xff]);
  return Buffer.concat([header, mask, Buffer.from(payload.map((b, i) => b ^ mask[i % 4]!))]);
}
const text = (s: string): Buffer => clientFrame(0x1, Buffer.from(s));

interface ServerFrame { opcode: number; payload: Buffer }

/** Splits what the server sent (unmasked frames) into frames. */
function serverFrames(bytes: Buffer): ServerFrame[] {
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

/** Upgrades a raw socket to the hub's WebSocket. Set allowHalfOpen: Node answers a FIN with its own by default. */
function upgrade(url: string): Promise<Socket> {
  const target = new URL(url);
  return withTimeout(new Promise((resolve, reject) => {
    const req = request({
      host: target.hostname, port: target.port, path: target.pathname,
      headers: { Connection: 'Upgrade', Upgrade: 'websocket', 'Sec-WebSocket-Version': '13', 'Sec-WebSocket-Key': 'dGhlIHNhbXBsZSBub25jZQ==' },
    });
    req.on('upgrade', (_res, socket) => resolve(socket));
    req.on('response', (res) => reject(new Error(`HTTP ${res.statusCode}`)));
    req.on('error', reject);
    req.end();
  }), 5000, 'the upgrade');
}

/** What the socket got until it ended, and the error that ended it, if one did. */
function collect(socket: Socket): { bytes: () => Buffer; ended: Promise<string | undefined> } {
  const chunks: Buffer[] = [];
  socket.on('data', (d: Buffer) => chunks.push(d));
  const ended = new Promise<string | undefined>((resolve) => {
    socket.on('error', (e: NodeJS.ErrnoException) => resolve(e.code ?? e.message));
    socket.on('end', () => resolve(undefined));
  });
  return { bytes: () => Buffer.concat(chunks), ended };
}

const { burst, perSecond } = shippedBudgets.budgets.unauthenticated;
const PING = '{"type":6}\u001e';

describe('a closed client that is still sending gets the Close message and the close frame', () => {
  it('still arrives when the client reads nothing for 6 s after the close while it keeps sending', async (t) => {
    const hub = await startHub();
    t.after(() => hub.stop());
    const socket = await upgrade(hub.url);
    t.after(() => socket.destroy());
    socket.allowHalfOpen = true;
    const got = collect(socket);
    socket.write(text('{"protocol":"json","version":1}\u001e'));
    await withTimeout(new Promise((resolve) => socket.once('data', resolve)), 5000, 'the handshake answer');
    socket.pause();
    // Over the unauthenticated burst in one frame: the hub closes the connection at once.
    socket.write(text(PING.repeat(burst + 10)));
    // What a device mid-stream does: it goes on sending, and reads later.
    let writeError: string | undefined;
    socket.on('error', (e: NodeJS.ErrnoException) => (writeError ??= e.code));
    for (let i = 0; i < 60 && writeError === undefined; i++) {
      socket.write(text(PING));
      await sleep(100);
    }
    socket.resume();
    socket.end(clientFrame(0x8, Buffer.from([0x03, 0xe8])));
    const error = await withTimeout(got.ended, 10_000, 'the end of the stream');
    const frames = serverFrames(got.bytes());
    const messages = frames.filter((f) => f.opcode === 0x1).map((f) => f.payload.toString());
    const close = frames.find((f) => f.opcode === 0x8);
    assert.deepEqual(
      { error, writeError, messages, closeCode: close?.payload.readUInt16BE(0) },
      {
        error: undefined,
        writeError: undefined,
        messages: ['{}\u001e', `${JSON.stringify({ type: 7, error: ErrorText.rateLimited(burst, perSecond), allowReconnect: true })}\u001e`],
        closeCode: 1000,
      },
    );
  });

  it('is not waited for forever: a client that never answers the close is dropped within about 20 s', async (t) => {
    const hub = await startHub();
    t.after(() => hub.stop());
    const socket = await upgrade(hub.url);
    t.after(() => socket.destroy());
    socket.allowHalfOpen = true;
    const got = collect(socket);
    socket.write(text('{"protocol":"json","version":1}\u001e'));
    socket.write(text(PING.repeat(burst + 10)));
    const closedAt = performance.now();
    // It reads everything but never sends its FIN or a close frame; its pings find the socket gone.
    let error: string | undefined;
    socket.on('error', (e: NodeJS.ErrnoException) => (error ??= e.code));
    while (error === undefined && performance.now() - closedAt < 40_000) {
      socket.write(text(PING));
      await sleep(250);
    }
    const seconds = (performance.now() - closedAt) / 1000;
    // The reset reaches the client as the answer to a write (EPIPE) or on its own (ECONNRESET).
    assert.match(String(error), /^(ECONNRESET|EPIPE)$/);
    // The 16-s wait fires at one of uWS's 4-s sweeps: after 12 to 16 s, later on a busy machine.
    assert.ok(seconds >= 11 && seconds < 30, `dropped after ${seconds.toFixed(1)} s`);
    assert.equal(serverFrames(got.bytes()).find((f) => f.opcode === 0x8)?.payload.readUInt16BE(0), 1000);
  });
});

describe('the idleTimeout that sets the close wait', () => {
  it('is uWS\'s largest, for a 16-s wait, while Hub.ClientTimeout closes a silent connection well before it', () => {
    assert.deepEqual(
      [30_000, 940_000, 940_001, 2 ** 31 - 1].map((ms) => hubIdleTimeoutSeconds(ms)),
      [UWS_MAX_IDLE_TIMEOUT_S, UWS_MAX_IDLE_TIMEOUT_S, 0, 0],
    );
  });

  it('gives uWS\'s margins: 4 s below an idleTimeout of 16, 8 s below 32, 16 s from 32', () => {
    assert.deepEqual([0, 15, 16, 31, 32, 960].map(closeWaitSeconds), [4, 4, 8, 8, 16, 16]);
  });
});
