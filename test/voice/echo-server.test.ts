// The built-in echo voice server, spoken to with a plain `ws` client.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import WebSocket from 'ws';
import { createLogger, silentLogger } from '../../src/log/logger.js';
import { startEchoServer } from '../../src/upstream/echo-server.js';
import { waitUntil } from '../support/wait.js';

test('echoes audio at the session format, text as "echo: ", !error as an error frame; stop closes 1000', async (t) => {
  const echo = await startEchoServer({ host: '127.0.0.1', port: 0, logger: silentLogger });
  t.after(() => echo.close());
  const socket = new WebSocket(`ws://127.0.0.1:${echo.port}/some/path?x=1`);
  const replies: unknown[] = [];
  let closeCode = 0;
  socket.on('message', (data) => replies.push(JSON.parse(data.toString())));
  socket.on('close', (code) => { closeCode = code; });
  await new Promise((resolve, reject) => { socket.once('open', resolve); socket.once('error', reject); });
  assert.equal(echo.connections(), 1);
  const send = (frame: object) => socket.send(JSON.stringify(frame));
  send({ type: 'start', sessionId: 's', deviceId: 'd', userId: 'u', audioFormat: 'opus', sampleRate: 48000, channels: 2, autoMode: false });
  socket.send('not json'); // ignored, the connection stays
  send({ type: 'audio', sessionId: 's', sequence: 1, format: 'opus', sampleRate: 48000, channels: 2, data: 'SAECAw==' });
  send({ type: 'text', sessionId: 's', text: 'hi', messageType: 'text' });
  send({ type: 'text', sessionId: 's', text: '!error it broke', messageType: 'text' });
  await waitUntil(() => replies.length === 3, 'three replies');
  assert.deepEqual(replies, [
    { type: 'audio', data: 'SAECAw==', sampleRate: 48000, channels: 2 },
    { type: 'text', text: 'echo: hi', final: true },
    { type: 'error', message: 'it broke' },
  ]);
  send({ type: 'stop', sessionId: 's' });
  await waitUntil(() => closeCode !== 0, 'close');
  assert.equal(closeCode, 1000);
  await waitUntil(() => echo.connections() === 0, 'the server to forget the connection');
});

test('close() cuts open connections and is idempotent', async () => {
  const echo = await startEchoServer({ host: '127.0.0.1', port: 0, logger: silentLogger });
  const socket = new WebSocket(`ws://127.0.0.1:${echo.port}`);
  let closeCode = 0;
  socket.on('close', (code) => { closeCode = code; });
  await new Promise((resolve) => socket.once('open', resolve));
  const closing = echo.close();
  assert.equal(echo.close(), closing);
  await closing;
  await waitUntil(() => closeCode !== 0, 'the client to see the drop');
  assert.equal(closeCode, 1006, 'no close handshake, as if the server crashed');
});

test('the address it logs is one a client can use: an IPv6 host in brackets, once', async () => {
  const lines: string[] = [];
  const logger = createLogger({ levels: { Default: 'Information' }, write: (line) => lines.push(line) }, 'EchoServer');
  const echo = await startEchoServer({ host: '::1', port: 0, logger });
  try {
    const listening = lines.filter((l) => l.includes('listening on'));
    assert.equal(listening.length, 1, lines.join('\n'));
    assert.match(listening[0]!, new RegExp(`listening on ws://\\[::1\\]:${echo.port}/voice$`));
    const url = /(ws:\/\/\S+)$/.exec(listening[0]!)![1]!;
    const socket = new WebSocket(url);
    await new Promise((resolve, reject) => { socket.once('open', resolve); socket.once('error', reject); });
    socket.close();
  } finally {
    await echo.close();
  }
});

test('a client that sends and does not read is no longer read from: its answers wait in TCP, not in the server, and all arrive once it reads', async (t) => {
  const echo = await startEchoServer({ host: '127.0.0.1', port: 0, logger: silentLogger });
  t.after(() => echo.close());
  const socket = new WebSocket(`ws://127.0.0.1:${echo.port}/voice`, { maxPayload: 2 * 1024 * 1024 });
  await new Promise((resolve, reject) => { socket.once('open', resolve); socket.once('error', reject); });
  let answers = 0;
  socket.on('message', () => answers++);
  socket.pause();
  socket.send(JSON.stringify({ type: 'start', sessionId: 's', deviceId: 'd', userId: 'u', audioFormat: 'opus', sampleRate: 16000, channels: 1, autoMode: false }));
  // 64 frames of 800 KB: 51 MB, far more than the loopback's socket buffers hold.
  const frame = JSON.stringify({ type: 'audio', sessionId: 's', sequence: 1, format: 'opus', sampleRate: 16000, channels: 1, data: Buffer.alloc(600_000).toString('base64') });
  const frames = 64;
  for (let i = 0; i < frames; i++) socket.send(frame);
  await new Promise((resolve) => setTimeout(resolve, 2000));
  // What the server read it answered, and what it answered waits for us: it stopped reading at about
  // 1 MiB of answers plus the socket buffers both ways, so most of the frames are still ours to send.
  const unread = socket.bufferedAmount;
  assert.ok(unread > 20 * frame.length, `only ${Math.round(unread / frame.length)} of ${frames} frames were still unsent: the server read on`);
  socket.resume();
  await waitUntil(() => answers === frames, `all ${frames} answers (got ${answers})`, 20_000);
  socket.close();
});
