// UpstreamFrameWriter against a real `ws` server on 127.0.0.1: what it frames must be read back as the
// same text by a strict WebSocket server (masking, the three length forms, multi-byte UTF-8), a turn's
// frames must leave in one socket write and in order, and nothing may follow `ws`' close frame.
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import WebSocket, { WebSocketServer } from 'ws';
import { useClock } from '../../src/end-of-turn.js';
import { rawSocket, UpstreamFrameWriter } from '../../src/upstream/frame-writer.js';
import { waitUntil } from '../support/wait.js';

async function pair() {
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0, maxPayload: 1024 * 1024 });
  await new Promise<void>((resolve) => wss.once('listening', resolve));
  const received: { text: string; binary: boolean }[] = [];
  const closes: number[] = [];
  wss.on('connection', (socket) => {
    socket.on('message', (data, binary) => received.push({ text: data.toString(), binary }));
    socket.on('close', (code) => closes.push(code));
  });
  const client = new WebSocket(`ws://127.0.0.1:${(wss.address() as AddressInfo).port}/`);
  await new Promise<void>((resolve, reject) => { client.once('open', resolve); client.once('error', reject); });
  const raw = rawSocket(client);
  /** Every write to the TCP socket, copied. */
  const writes: Buffer[] = [];
  const write = raw.write.bind(raw);
  raw.write = ((chunk: Buffer, ...rest: never[]) => { writes.push(Buffer.from(chunk)); return write(chunk, ...rest); }) as typeof raw.write;
  return {
    client, received, closes, writes, writer: new UpstreamFrameWriter(client),
    close: () => new Promise<void>((resolve) => { client.terminate(); wss.close(() => resolve()); }),
  };
}

type Pair = Awaited<ReturnType<typeof pair>>;

/** Runs `body` against a fresh pair, closed afterwards whatever happens. */
async function withPair(body: (p: Pair) => Promise<void>): Promise<void> {
  const p = await pair();
  try {
    await body(p);
  } finally {
    await p.close();
  }
}

test('frames of every length form and multi-byte UTF-8 are read back as sent, in order', () => withPair(async (p) => {
  const texts = [
    '', 'a', 'x'.repeat(125), 'y'.repeat(126), 'é€😀'.repeat(40), 'z'.repeat(65535), 'w'.repeat(65536),
    JSON.stringify({ type: 'audio', data: 'AAEC'.repeat(50) }), 'abc', 'abcd', 'abcde',
  ];
  for (const t of texts) p.writer.send(t);
  await waitUntil(() => p.received.length === texts.length, 'every frame read back');
  assert.deepEqual(p.received.map((r) => r.text), texts);
  assert.ok(p.received.every((r) => !r.binary));
  assert.equal(p.writer.pendingBytes, 0);
}));

test('a turn\'s frames wait in the writer, counted, and leave together', () => withPair(async (p) => {
  // The hold's clock stands still, so that a loaded machine cannot release the turn early
  // (end-of-turn.ts lets held work go after MAX_HOLD_MS; its own tests cover that).
  const restore = useClock(() => 0);
  try {
    p.writer.send('abc');
    assert.equal(p.writer.pendingBytes, 2 + 4 + 3, 'header, mask and payload counted while the frame waits');
    assert.deepEqual(p.writes, [], 'nothing written before the turn ends');
    for (let i = 0; i < 9; i++) p.writer.send(`frame ${i}`);
    await waitUntil(() => p.received.length === 10, 'the 10 frames');
  } finally {
    restore();
  }
  assert.equal(p.writes.length, 1, `${p.writes.length} writes for 10 frames`);
}));

test('masks differ from frame to frame, so the same text is never the same bytes on the wire', () => withPair(async (p) => {
  for (let i = 0; i < 20; i++) {
    p.writer.send('same text');
    p.writer.flush();
  }
  await waitUntil(() => p.received.length === 20, 'the 20 frames');
  assert.equal(p.writes.length, 20);
  assert.equal(new Set(p.writes.map((c) => c.toString('hex'))).size, 20);
}));

test('flush() before ws\' own close keeps the order: the frames, then the close', () => withPair(async (p) => {
  p.writer.send('last words');
  p.writer.flush();
  p.client.close(1000, 'done');
  await waitUntil(() => p.closes.length === 1, 'the close');
  assert.deepEqual(p.received.map((r) => r.text), ['last words']);
  assert.deepEqual(p.closes, [1000]);
}));

test('discard() drops what waits: nothing is written at the turn\'s end', () => withPair(async (p) => {
  p.writer.send('never sent');
  p.writer.discard();
  assert.equal(p.writer.pendingBytes, 0);
  p.writer.send('sent');
  await waitUntil(() => p.received.length === 1, 'the frame sent after the discard');
  await new Promise((resolve) => setTimeout(resolve, 50));
  assert.deepEqual(p.received.map((r) => r.text), ['sent']);
}));

test('frames still waiting when ws has written its close frame are dropped, never written after it', () => withPair(async (p) => {
  p.writer.send('too late');
  p.client.close(1000, 'bye');
  await waitUntil(() => p.closes.length === 1, 'the close');
  await new Promise((resolve) => setTimeout(resolve, 50));
  assert.deepEqual(p.received, []);
  assert.deepEqual(p.closes, [1000]);
  assert.equal(p.writer.pendingBytes, 0);
}));
