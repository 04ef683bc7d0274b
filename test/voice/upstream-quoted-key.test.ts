// An upstream server that quotes the API key it was sent in its own words (a close reason, the type of
// a frame it made up), or the credentials in the URL it was called with: neither the log, the texts and
// errors devices get, nor the devices' SessionEnded reason may carry them.
import assert from 'node:assert/strict';
import type { IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { WebSocketServer, type WebSocket } from 'ws';
import { UpstreamVoiceLink } from '../../src/upstream/link.js';
import type { UpstreamMessage } from '../../src/upstream/protocol.js';
import { serverUrlSecrets } from '../../src/upstream/public-url.js';
import { recordingLogger, testBudgets } from './helpers.js';
import { waitUntil } from '../support/wait.js';

const KEY = 'secret-key-0123456789abcdefghijklmnopqrstuvwxyz';
const START = { sessionId: 's1', deviceId: 'd1', userId: 'u1', audioFormat: 'opus', sampleRate: 16000, channels: 1, autoMode: false };

async function upstream(onConnection: (socket: WebSocket, request: IncomingMessage) => void) {
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0 });
  await new Promise<void>((resolve) => wss.once('listening', resolve));
  wss.on('connection', onConnection);
  return {
    url: `ws://127.0.0.1:${(wss.address() as AddressInfo).port}`,
    close: () => new Promise<void>((resolve) => { for (const c of wss.clients) c.terminate(); wss.close(() => resolve()); }),
  };
}

function link(url: string, apiKey = KEY) {
  const { logger, lines } = recordingLogger();
  const failures: string[] = [];
  const messages: UpstreamMessage[] = [];
  const l = new UpstreamVoiceLink({
    url, apiKey, connectTimeoutMs: 2000, start: START, logger, onMessage: (m) => messages.push(m), onFailed: (r) => failures.push(r),
    reconnect: testBudgets({ 'VoiceService.ReconnectAttempts': '0' }).reconnect,
  });
  return { l, lines, failures, messages };
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

test('a close reason that quotes a key too long for it (123 bytes at most): the part that fits is *** too', async (t) => {
  const longKey = `sk-${'0123456789abcdef'.repeat(10)}`;
  const server = await upstream((socket, request) => socket.close(4001, `bad key ${request.headers.authorization}`.slice(0, 123)));
  t.after(() => server.close());
  const { l, lines, failures } = link(server.url, longKey);
  await l.connect();
  await waitUntil(() => failures.length === 1, 'the link to fail');
  assert.deepEqual(failures, ['upstream connection lost (closed with 4001 bad key Bearer ***); reconnecting is switched off']);
  assert.deepEqual(lines.filter((line) => line.includes('sk-0123')), []);
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

test("a server quoting the URL's user info, its Basic credentials and its query: *** in texts, errors, the log and the end reason", async (t) => {
  const server = await upstream((socket, request) => {
    const quoted = `url=${request.url} auth=${request.headers.authorization}`;
    socket.send(JSON.stringify({ type: 'text', text: `T:${quoted}` }));
    socket.send(JSON.stringify({ type: 'error', message: `E:${quoted}`, code: `C:${quoted}` }));
    socket.send(JSON.stringify({ type: `X:${quoted}` }));
    setTimeout(() => socket.close(4001, `R:${quoted}`.slice(0, 120)), 50);
  });
  t.after(() => server.close());
  const url = server.url.replace('ws://', 'ws://voice%20user:pa%24%24-word-0042@') + '/voice?token=url-token-4242&lang=en&debug=1';
  const { l, lines, failures, messages } = link(url, '');
  await l.connect();
  await waitUntil(() => failures.length === 1, 'the link to fail');
  const seen = [...lines, ...failures, ...messages.map((m) => JSON.stringify(m))].join('\n');
  for (const secret of ['voice user', 'voice%20user', 'pa$$-word-0042', 'pa%24%24-word-0042', 'url-token-4242', Buffer.from('voice user:pa$$-word-0042').toString('base64')]) {
    assert.ok(!seen.includes(secret), `${secret} in:\n${seen}`);
  }
  assert.deepEqual(messages.map((m) => (m.kind === 'text' ? m.text : m.kind === 'error' ? `${m.message} / ${m.code}` : m.kind)), [
    'T:url=/voice?*** auth=Basic ***',
    'E:url=/voice?*** auth=Basic *** / C:url=/voice?*** auth=Basic ***',
  ]);
  assert.match(failures[0]!, /^upstream connection lost \(closed with 4001 R:url=\/voice\?\*\*\* auth=Basic \*\*\*\)/);
});

test('the secret parts of a server URL: user info raw and decoded, Basic credentials, the query whole and per value; short values left alone', () => {
  assert.deepEqual(serverUrlSecrets('ws://host:5050/voice'), []);
  assert.deepEqual(serverUrlSecrets('not a url'), []);
  const secrets = serverUrlSecrets('ws://a%40b:c+d@host/v?key=k%2B1234&v=1&flag');
  assert.deepEqual([...secrets].sort(), [
    Buffer.from('a%40b:c+d').toString('base64'), Buffer.from('a@b:c+d').toString('base64'),
    'key=k%2B1234&v=1&flag', 'k%2B1234', 'a%40b:c+d', 'a@b:c+d', 'k+1234', 'flag', 'a%40b',
  ].sort());
  assert.deepEqual(secrets.map((s) => s.length), secrets.map((s) => s.length).sort((a, b) => b - a), 'longest first');
});

test('user info in the URL is sent as Basic credentials of the decoded text, alone; a key, when set, is the one Authorization', async (t) => {
  const seen: Array<{ url: string | undefined; authorization: string | string[] | undefined; headers: string[] }> = [];
  const server = await upstream((socket, request) => {
    seen.push({ url: request.url, authorization: request.headers.authorization, headers: request.rawHeaders.filter((_, i) => i % 2 === 0).map((h) => h.toLowerCase()) });
    socket.close(1000);
  });
  t.after(() => server.close());
  const withUser = server.url.replace('ws://', 'ws://us%65r:p%40ss%3Aw%C3%B6rd@') + '/voice';
  for (const apiKey of ['', KEY]) {
    const { l } = link(withUser, apiKey);
    await l.connect().catch(() => undefined);
    await waitUntil(() => seen.length === (apiKey ? 2 : 1), 'the upgrade request');
    await l.close();
  }
  assert.equal(seen[0]!.url, '/voice');
  assert.equal(seen[0]!.authorization, `Basic ${Buffer.from('user:p@ss:wörd').toString('base64')}`);
  assert.equal(seen[1]!.authorization, `Bearer ${KEY}`);
  for (const s of seen) assert.equal(s.headers.filter((h) => h === 'authorization').length, 1, s.headers.join(' '));
});
