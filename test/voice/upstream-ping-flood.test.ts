// Pings from the upstream server: answered while the server reads, and never piled up in memory by a
// server that floods pings without reading the answers.
import assert from 'node:assert/strict';
import { createServer, type AddressInfo, type Socket } from 'node:net';
import { test } from 'node:test';
import { WebSocketServer } from 'ws';
import { UpstreamVoiceLink } from '../../src/upstream/link.js';
import { recordingLogger, testBudgets, acceptUpgrade } from './helpers.js';
import { waitUntil } from '../support/wait.js';

const START = { sessionId: 's1', deviceId: 'd1', userId: 'u1', audioFormat: 'opus', sampleRate: 16000, channels: 1, autoMode: false };

function link(url: string) {
  const { logger, lines } = recordingLogger();
  const l = new UpstreamVoiceLink({
    url, apiKey: '', connectTimeoutMs: 2000, start: START, logger, onMessage: () => {}, onFailed: () => {},
    reconnect: testBudgets({ 'VoiceService.ReconnectAttempts': '0' }).reconnect,
  });
  return { l, lines };
}

test('a ping from a server that reads is answered with a pong carrying its payload', async (t) => {
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0 });
  await new Promise<void>((resolve) => wss.once('listening', resolve));
  t.after(() => new Promise<void>((resolve) => { for (const c of wss.clients) c.terminate(); wss.close(() => resolve()); }));
  const pongs: string[] = [];
  wss.on('connection', (socket) => {
    socket.on('pong', (data) => pongs.push(data.toString()));
    socket.ping('are you there');
  });
  const { l } = link(`ws://127.0.0.1:${(wss.address() as AddressInfo).port}`);
  await l.connect();
  await waitUntil(() => pongs.length === 1, 'the pong');
  assert.deepEqual(pongs, ['are you there']);
  assert.equal(l.stats.unansweredPings, 0);
  await l.close();
});

test('a server that floods pings and reads nothing: the pongs waiting for it stay bounded, the rest are counted, one warning', async (t) => {
  const sockets: Socket[] = [];
  const server = createServer((s) => {
    sockets.push(s);
    s.on('error', () => {});
    s.once('data', (request) => {
      acceptUpgrade(s, request);
      s.pause(); // never reads again: every pong stays with the service
      const pings = Buffer.alloc(2 * 32_768);
      for (let i = 0; i < pings.length; i += 2) pings[i] = 0x89; // FIN + ping, empty payload
      const flood = (): void => {
        while (!s.destroyed && s.write(pings));
        if (!s.destroyed) s.once('drain', flood);
      };
      flood();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => { for (const s of sockets) s.destroy(); server.close(); });
  const { l, lines } = link(`ws://127.0.0.1:${(server.address() as AddressInfo).port}`);
  await l.connect();
  // Each ping answered would queue a 6-byte pong; 200,000 of them past the kernel's buffers are 1.2 MB.
  await waitUntil(() => l.stats.unansweredPings >= 200_000, '200,000 unanswered pings', 30_000);
  assert.ok(l.bufferedAmount <= 16 * 1024 + 6, `${l.bufferedAmount} bytes wait for the server`);
  assert.deepEqual(lines.filter((line) => line.includes('ping')), [
    'warn: App: session s1: the upstream server pings but does not read what it is sent (more than 16384 bytes wait for it): its pings go unanswered until it reads again',
  ]);
  assert.equal(l.state, 'Open');
  await l.close();
  assert.equal(l.state, 'Closed');
});
