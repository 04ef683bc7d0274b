// An upstream server that quotes the API key it was sent in its own words (a close reason, the type of
// a frame it made up): neither the log nor the devices' SessionEnded reason may carry the key.
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { WebSocketServer, type WebSocket } from 'ws';
import { UpstreamVoiceLink } from '../../src/upstream/link.js';
import { recordingLogger, testBudgets } from './helpers.js';
import { waitUntil } from '../support/wait.js';

const KEY = 'secret-key-0123456789abcdefghijklmnopqrstuvwxyz';
const START = { sessionId: 's1', deviceId: 'd1', userId: 'u1', audioFormat: 'opus', sampleRate: 16000, channels: 1, autoMode: false };

async function upstream(onConnection: (socket: WebSocket) => void) {
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0 });
  await new Promise<void>((resolve) => wss.once('listening', resolve));
  wss.on('connection', onConnection);
  return {
    url: `ws://127.0.0.1:${(wss.address() as AddressInfo).port}`,
    close: () => new Promise<void>((resolve) => { for (const c of wss.clients) c.terminate(); wss.close(() => resolve()); }),
  };
}

function link(url: string) {
  const { logger, lines } = recordingLogger();
  const failures: string[] = [];
  const l = new UpstreamVoiceLink({
    url, apiKey: KEY, connectTimeoutMs: 2000, start: START, logger, onMessage: () => {}, onFailed: (r) => failures.push(r),
    reconnect: testBudgets({ 'VoiceService.ReconnectAttempts': '0' }).reconnect,
  });
  return { l, lines, failures };
}

test('a close reason quoting the key: the reason devices get and the log say *** instead', async (t) => {
  const server = await upstream((socket) => socket.close(4001, `bad key Bearer ${KEY}`));
  t.after(() => server.close());
  const { l, lines, failures } = link(server.url);
  await l.connect();
  await waitUntil(() => failures.length === 1, 'the link to fail');
  assert.deepEqual(failures, ['upstream connection lost (closed with 4001 bad key Bearer ***); reconnecting is switched off']);
  assert.ok(lines.some((line) => line.includes('upstream connection lost (closed with 4001 bad key Bearer ***)')), lines.join('\n'));
  assert.deepEqual(lines.filter((line) => line.includes('secret-key')), []);
});

test('a frame whose unknown type quotes the key: logged with *** and clipped, no part of the key', async (t) => {
  const server = await upstream((socket) => {
    socket.send(JSON.stringify({ type: `Bearer ${KEY}` }));
    socket.send(JSON.stringify({ type: 'x'.repeat(1000) }));
  });
  t.after(() => server.close());
  const { l, lines } = link(server.url);
  await l.connect();
  await waitUntil(() => l.stats.invalidFrames === 2, 'two ignored frames');
  assert.deepEqual(lines.filter((line) => line.includes('ignored upstream frame')), [
    "warn: App: session s1: ignored upstream frame: unknown type 'Bearer ***'; 1 so far",
    `warn: App: session s1: ignored upstream frame: unknown type '${'x'.repeat(120 - 14)}...; 2 so far`,
  ]);
  assert.deepEqual(lines.filter((line) => line.includes('secret-key')), []);
  await l.close();
});
