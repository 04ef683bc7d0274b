// The benchmarks' own WebSocket client (bench/lib/ws-client.ts), against a real uWS server: the
// server must accept its masked frames of every length class, and it must read every frame the
// server can send (the three length encodings, fragments, several frames in one read) and answer pings.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { WebSocket } from 'uWebSockets.js';
import { encodeClientFrame, WsClient } from '../../bench/lib/ws-client.js';
import { listen, type Listening } from '../../src/http/server.js';
import { loadNativeUws } from '../../src/http/uws-native.js';
import { waitUntil } from '../support/wait.js';

const { uws } = loadNativeUws();
const received: Array<{ text: string; binary: boolean }> = [];
let pongs = 0;
let server: WebSocket<unknown> | undefined;
let listening: Listening;

before(async () => {
  const app = uws.App();
  app.ws('/*', {
    maxPayloadLength: 1024 * 1024,
    idleTimeout: 0,
    open: (ws) => void (server = ws),
    message: (_ws, message, binary) => void received.push({ text: Buffer.from(message).toString('latin1'), binary }),
    pong: () => void pongs++,
  });
  listening = await listen(uws, app, '127.0.0.1', 0);
});
after(() => listening.close());

const sizes = [0, 5, 125, 126, 65535, 65536, 200_000];
const payload = (n: number): string => 'abcdefghij'.repeat(Math.ceil(n / 10)).slice(0, n);

test('the server reads its masked frames of every length class, text and binary, built once and sent twice', async () => {
  const client = await WsClient.connect(`ws://127.0.0.1:${listening.port}/any?x=1`);
  for (const n of sizes) {
    const frame = encodeClientFrame(payload(n));
    client.sendFrame(frame);
    client.sendFrame(frame);
  }
  client.send(Buffer.from([0, 1, 2, 255]));
  await waitUntil(() => received.length === 2 * sizes.length + 1, 'every frame at the server');
  assert.deepEqual(received.slice(0, -1).map((r) => [r.text.length, r.binary]), sizes.flatMap((n) => [[n, false], [n, false]]));
  assert.ok(received.slice(0, -1).every((r) => r.text === payload(r.text.length)));
  assert.deepEqual(received.at(-1), { text: '\x00\x01\x02\xff', binary: true });
  client.terminate();
});

test('it reads every frame the server sends, whole or in fragments, and answers pings', async () => {
  server = undefined;
  const client = await WsClient.connect(`ws://127.0.0.1:${listening.port}/`);
  const got: Array<[string, boolean]> = [];
  client.onMessage = (data, binary) => void got.push([data.toString('latin1'), binary]);
  await waitUntil(() => server !== undefined, 'the server to see the connection');
  const ws = server!;
  // Corked: several frames go out in one write, so one read holds more than one.
  ws.cork(() => {
    for (const n of sizes) ws.send(payload(n), false);
    ws.send(Buffer.from([7, 8]), true);
    ws.sendFirstFragment('frag', false);
    ws.sendFragment('men');
    ws.sendLastFragment('ted');
  });
  ws.ping('p');
  await waitUntil(() => got.length === sizes.length + 2 && pongs === 1, 'every frame at the client and its pong');
  assert.deepEqual(got.map(([t, b]) => [t.length, b]), [...sizes.map((n) => [n, false]), [2, true], [10, false]]);
  assert.ok(got.slice(0, sizes.length).every(([t]) => t === payload(t.length)));
  assert.equal(got.at(-2)![0], '\x07\x08');
  assert.equal(got.at(-1)![0], 'fragmented');
  client.terminate();
});

test('a refused upgrade fails with the status line', async () => {
  const app = uws.App();
  app.any('/*', (res) => void res.writeStatus('404 Not Found').end('no'));
  const plain = await listen(uws, app, '127.0.0.1', 0);
  try {
    await assert.rejects(WsClient.connect(`ws://127.0.0.1:${plain.port}/`), { message: 'upgrade refused: HTTP/1.1 404 Not Found' });
  } finally {
    plain.close();
  }
});
