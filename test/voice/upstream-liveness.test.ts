// A voice server that goes silent without closing (its host lost power, the path died, it stopped in the
// middle of a frame): the link pings it after an interval without a byte, and drops the connection (then
// reconnects, or fails) when not even the ping is answered within another. A server that answers pings
// stays however quiet it is, and a link that does not read (devices behind) does not count the time.
import assert from 'node:assert/strict';
import { type AddressInfo } from 'node:net';
import { test } from 'node:test';
import { WebSocketServer } from 'ws';
import { UpstreamVoiceLink } from '../../src/upstream/link.js';
import { recordingLogger, testBudgets, rawUpstream } from './helpers.js';
import { sleep, waitUntil } from '../support/wait.js';

const START = { sessionId: 's1', deviceId: 'd1', userId: 'u1', audioFormat: 'opus', sampleRate: 16000, channels: 1, autoMode: false };
const INTERVAL_MS = 150;

/** Accepts the upgrade, reads everything and answers nothing, ever; `first` is written once, after the upgrade. */
function silentUpstream(first = Buffer.alloc(0)) {
  return rawUpstream((s) => {
    s.write(first);
    s.on('data', () => {});
    s.on('end', () => {});
  }, true);
}

function link(t: { after: (fn: () => unknown) => void }, url: string) {
  const { logger, lines } = recordingLogger();
  const failures: string[] = [];
  const l = new UpstreamVoiceLink({
    url, apiKey: '', connectTimeoutMs: 2000, start: START, logger, onMessage: () => {}, onFailed: (r) => failures.push(r),
    reconnect: testBudgets({ 'VoiceService.ReconnectAttempts': '0' }).reconnect, livenessIntervalMs: INTERVAL_MS,
  });
  t.after(() => l.close());
  return { l, failures, lines };
}

test('a server that says nothing and answers no ping: the connection is dropped after two intervals, with why', async (t) => {
  const server = await silentUpstream();
  t.after(() => server.close());
  const { l, failures, lines } = link(t, server.url);
  // From before the connect: the watch starts when the socket opens, which is before connect() resolves.
  const started = performance.now();
  await l.connect();
  await waitUntil(() => failures.length === 1, 'the link to give up on the silent server', 5000);
  const ms = performance.now() - started;
  assert.ok(ms >= 2 * INTERVAL_MS && ms < 3 * INTERVAL_MS + 500, `dropped after ${Math.round(ms)} ms`);
  assert.deepEqual(failures, ['upstream connection lost (closed with 1006: nothing from the server for 300 ms, not even the answer to a ping); reconnecting is switched off']);
  assert.equal(lines.filter((line) => line.includes('upstream connection lost')).length, 1);
});

test('a server stalled in the middle of a frame is dropped the same way', async (t) => {
  // The header of a 5,000-byte text frame and 10 bytes of it.
  const server = await silentUpstream(Buffer.from([0x81, 126, 0x13, 0x88, ...Buffer.from('{"type":"t')]));
  t.after(() => server.close());
  const { l, failures } = link(t, server.url);
  await l.connect();
  await waitUntil(() => failures.length === 1, 'the link to give up on the stalled server', 5000);
  assert.match(failures[0]!, /closed with 1006: nothing from the server for 300 ms, not even the answer to a ping/);
});

test('a quiet server that answers pings keeps its connection; so does a silent one while the link is not reading', async (t) => {
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0 });
  await new Promise<void>((resolve) => wss.once('listening', resolve));
  t.after(() => new Promise<void>((resolve) => { for (const c of wss.clients) c.terminate(); wss.close(() => resolve()); }));
  let pings = 0;
  wss.on('connection', (socket) => socket.on('ping', () => pings++));
  const quiet = link(t, `ws://127.0.0.1:${(wss.address() as AddressInfo).port}`);
  await quiet.l.connect();

  const server = await silentUpstream();
  t.after(() => server.close());
  const paused = link(t, server.url);
  paused.l.pauseReading(true);
  await paused.l.connect();

  await sleep(8 * INTERVAL_MS);
  assert.ok(pings >= 2, `${pings} pings`);
  assert.equal(quiet.l.state, 'Open');
  assert.deepEqual(quiet.failures, []);
  assert.equal(paused.l.state, 'Open');
  assert.deepEqual(paused.failures, []);
  // Reading again, the silence counts.
  paused.l.pauseReading(false);
  await waitUntil(() => paused.failures.length === 1, 'the link to give up once it reads again', 5000);
});
