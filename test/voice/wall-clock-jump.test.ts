// A Raspberry Pi has no real-time clock: NTP moves the wall clock by hours while the service runs. What
// measures a duration (how long a device was away, a reconnected link's uptime, a log rate window) must
// come out right across such a jump. Each test moves Date.now() back an hour in the middle of what it
// measures; each failed with the durations taken from Date.now().
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { test, type TestContext } from 'node:test';
import { WebSocketServer, type WebSocket } from 'ws';
import { UpstreamVoiceLink } from '../../src/upstream/link.js';
import { silentLogger } from '../../src/log/logger.js';
import { startEchoServer } from '../../src/upstream/echo-server.js';
import { VoiceSessionService } from '../../src/voice/sessions.js';
import { MemorySessionRepository, RecordingEvents, recordingLogger, testBudgets } from './helpers.js';
import { waitUntil } from '../support/wait.js';

const HOUR_MS = 3_600_000;
const START = { sessionId: 's1', deviceId: 'd1', userId: 'u1', audioFormat: 'opus', sampleRate: 16000, channels: 1, autoMode: false };

/** From now until the test ends, the wall clock reads an hour earlier (NTP correcting a clock that ran ahead). */
function wallClockBackAnHour(t: TestContext): void {
  const realNow = Date.now;
  Date.now = () => realNow() - HOUR_MS;
  t.after(() => {
    Date.now = realNow;
  });
}

/** Date.now() as it reads when called, so that the jump above reaches what takes its time from here. */
const wallClock = (): Date => new Date(Date.now());

async function upstream(t: TestContext): Promise<{ url: string; sockets: WebSocket[] }> {
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0 });
  await new Promise<void>((resolve) => wss.once('listening', resolve));
  const sockets: WebSocket[] = [];
  wss.on('connection', (socket) => sockets.push(socket));
  t.after(() => new Promise<void>((resolve) => {
    for (const c of wss.clients) c.terminate();
    wss.close(() => resolve());
  }));
  return { url: `ws://127.0.0.1:${(wss.address() as AddressInfo).port}`, sockets };
}

test('a device away across a wall-clock jump is reported away for the time it was gone', async (t) => {
  const echo = await startEchoServer({ host: '127.0.0.1', port: 0, logger: silentLogger });
  t.after(() => echo.close());
  const events = new RecordingEvents();
  const service = new VoiceSessionService({
    config: {
      serverUrl: `ws://127.0.0.1:${echo.port}/voice`, apiKey: '', connectTimeoutMs: 2000, sessionIdleTimeoutMs: 60_000,
      deviceReconnectGraceMs: 60_000, enableVoice: () => true, budgets: testBudgets(),
    },
    sessions: new MemorySessionRepository(), deviceGeneration: () => 1, voiceDefaults: () => ({ sampleRate: 16000, channels: 1 }),
    listeners: [events.listener], logger: silentLogger, now: wallClock,
  });
  t.after(() => service.shutdown());
  const { id } = await service.start({ deviceId: 'dev-1', userId: 'u' });
  assert.equal(service.attach(id, 'conn-1'), true);
  service.release('conn-1');
  await new Promise((resolve) => setImmediate(resolve));
  assert.equal(events.ofType('deviceAway', id).length, 1);
  wallClockBackAnHour(t);
  await new Promise((resolve) => setTimeout(resolve, 50));
  assert.equal(service.attach(id, 'conn-2'), true);
  const [back] = events.ofType('deviceReturned', id);
  assert.ok(back!.awayMs >= 40 && back!.awayMs < 5_000, `away ${back!.awayMs} ms`);
});

test('ignored upstream frames are logged again a second after a wall-clock jump', async (t) => {
  const server = await upstream(t);
  const { logger, lines } = recordingLogger();
  const link = new UpstreamVoiceLink({
    url: server.url, apiKey: '', connectTimeoutMs: 2000, start: START, logger,
    onMessage: () => {}, onFailed: () => {}, reconnect: testBudgets().reconnect,
  });
  t.after(() => link.close());
  await link.connect();
  await waitUntil(() => server.sockets.length === 1, 'the connection');
  for (let i = 0; i < 5; i++) server.sockets[0]!.send('garbage');
  await waitUntil(() => link.stats.invalidFrames === 5, 'five invalid frames');
  wallClockBackAnHour(t);
  await new Promise((resolve) => setTimeout(resolve, 1100));
  server.sockets[0]!.send('garbage');
  await waitUntil(() => link.stats.invalidFrames === 6, 'the sixth');
  const logged = lines.filter((line) => line.includes('ignored upstream frame'));
  assert.equal(logged.length, 4, logged.join('\n'));
  assert.match(logged[3]!, /; 6 so far \(2 more not logged\)$/);
});

test('a reconnected link that stayed up past ReconnectStableAfter is not a failed attempt after a wall-clock jump', async (t) => {
  const server = await upstream(t);
  const { logger, lines } = recordingLogger();
  const link = new UpstreamVoiceLink({
    url: server.url, apiKey: '', connectTimeoutMs: 2000, start: START, logger,
    onMessage: () => {}, onFailed: () => {},
    reconnect: testBudgets({ 'VoiceService.ReconnectDelay': '00:00:00.0200000', 'VoiceService.ReconnectStableAfter': '00:00:00.2000000' }).reconnect,
  });
  t.after(() => link.close());
  await link.connect();
  await waitUntil(() => server.sockets.length === 1, 'the connection');
  server.sockets[0]!.terminate();
  await waitUntil(() => server.sockets.length === 2 && link.state === 'Open', 'the reconnect');
  await new Promise((resolve) => setTimeout(resolve, 400));
  wallClockBackAnHour(t);
  server.sockets[1]!.terminate();
  await waitUntil(() => server.sockets.length === 3 && link.state === 'Open', 'the second reconnect');
  const lost = lines.filter((line) => line.includes('upstream connection lost'));
  assert.equal(lost.length, 2, lost.join('\n'));
  assert.match(lost[1]!, /after \d{3} ms; reconnecting$/);
  assert.equal(link.stats.failedReconnects, 0);
});
