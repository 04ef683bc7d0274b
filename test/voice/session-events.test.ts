// The session service's events, read straight from the domain (no hub, no MQTT): a listener registered
// on VoiceSessionService against the real echo voice server on 127.0.0.1 sees started, audioProcessed,
// decodedAudio + upstreamAudio, text, upstreamError and ended, with the facts each carries; a failed
// start tells nobody anything; a listener that throws is logged and does not stop the others.
import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import { silentLogger } from '../../src/log/logger.js';
import { startEchoServer } from '../../src/upstream/echo-server.js';
import type { SessionEvent } from '../../src/voice/session-events.js';
import { VoiceSessionService } from '../../src/voice/sessions.js';
import { MemorySessionRepository, RecordingEvents, recordingLogger, referenceDecode, speechPackets, testBudgets } from './helpers.js';
import { freePort } from '../support/ports.js';

/** A clock that moves one second per reading, so each event's time says which reading it took. */
function steppingClock(): () => Date {
  let t = Date.parse('2030-05-06T07:08:00.000Z');
  return () => new Date((t += 1000));
}

async function setup(t: TestContext, options: { serverUrl?: string; idleMs?: number; now?: () => Date } = {}) {
  let serverUrl = options.serverUrl;
  let echo: Awaited<ReturnType<typeof startEchoServer>> | undefined;
  if (!serverUrl) {
    echo = await startEchoServer({ host: '127.0.0.1', port: 0, logger: silentLogger });
    t.after(() => echo!.close());
    serverUrl = `ws://127.0.0.1:${echo.port}/voice`;
  }
  const events = new RecordingEvents();
  const { logger, lines } = recordingLogger();
  const service = new VoiceSessionService({
    config: {
      serverUrl, apiKey: 'k', connectTimeoutMs: 2000, sessionIdleTimeoutMs: options.idleMs ?? 60_000, deviceReconnectGraceMs: 30_000,
      enableVoice: () => true, budgets: testBudgets({ 'VoiceService.ReconnectDelay': '00:00:00.0500000' }),
    },
    sessions: new MemorySessionRepository(),
    deviceGeneration: () => 1,
    voiceDefaults: () => ({ sampleRate: 16000, channels: 1 }),
    logger,
    now: options.now ?? steppingClock(),
  });
  service.addListener(events.listener);
  t.after(() => service.shutdown());
  return { echo, events, lines, service };
}

test('a session from start to stop tells its listeners every step, in order, with its facts', async (t) => {
  const { events, service } = await setup(t);
  const record = await service.start({ deviceId: 'dev-1', userId: 'user-1' });
  const [packet] = speechPackets();
  assert.deepEqual(service.sendAudio(record.id, packet!), { sequence: 1, bytes: packet!.length, durationMs: 20 });
  const [decoded] = await events.waitForType('decodedAudio', 1, record.id);
  const [upstream] = await events.waitForType('upstreamAudio', 1, record.id);
  service.sendText(record.id, 'hello', 'text');
  await events.waitForType('text', 1, record.id);
  service.sendText(record.id, '!error boom', 'text');
  await events.waitForType('upstreamError', 1, record.id);
  const final = await service.stop(record.id, 'stopped by the user');

  const id = record.id;
  assert.deepEqual(events.domain.map((e) => e.type), ['started', 'audioProcessed', 'decodedAudio', 'upstreamAudio', 'text', 'upstreamError', 'ended']);
  // The clock's first reading is the record's start; the second is taken when the session became Active.
  assert.equal(record.startTime, '2030-05-06T07:08:01.000Z');
  assert.deepEqual(events.domain[0], { type: 'started', sessionId: id, deviceId: 'dev-1', userId: 'user-1', at: new Date('2030-05-06T07:08:02.000Z') });
  assert.deepEqual(events.domain[1], { type: 'audioProcessed', sessionId: id, sequence: 1, bytes: packet!.length, durationMs: 20 });
  assert.deepEqual(Buffer.from(decoded!.pcm), referenceDecode([packet!], 16000, 1)[0], 'the PCM is libopus\' int16 decode');
  assert.deepEqual(decoded!.format, { sampleRate: 16000, channels: 1 });
  assert.deepEqual([Buffer.from(upstream!.packet), upstream!.format], [packet, { sampleRate: 16000, channels: 1 }], 'the Opus packet as it came back');
  assert.deepEqual(events.domain[4], { type: 'text', sessionId: id, text: 'echo: hello', final: true });
  assert.deepEqual(events.domain[5], { type: 'upstreamError', sessionId: id, message: 'boom' });
  assert.deepEqual(events.domain[6], { type: 'ended', sessionId: id, deviceId: 'dev-1', state: 'Stopped', reason: 'stopped by the user', at: new Date(final.endTime!) });
});

test('ended says how: idle timeout (Stopped), replaced (Stopped), upstream lost (Failed)', async (t) => {
  const quiet = await setup(t, { idleMs: 300 });
  const idle = await quiet.service.start({ deviceId: 'dev-idle', userId: 'u' });
  const [idleEnd] = await quiet.events.waitForType('ended', 1, idle.id);
  assert.deepEqual([idleEnd!.state, idleEnd!.reason, idleEnd!.deviceId], ['Stopped', 'idle timeout', 'dev-idle']);

  const { echo, events, service } = await setup(t);

  const first = await service.start({ deviceId: 'dev-1', userId: 'u' });
  const second = await service.start({ deviceId: 'dev-1', userId: 'u' });
  const [replaced] = events.ofType('ended', first.id);
  assert.deepEqual([replaced!.state, replaced!.reason], ['Stopped', 'replaced']);

  await echo!.close();
  const [lost] = await events.waitForType('ended', 1, second.id, 10_000);
  assert.equal(lost!.state, 'Failed');
  assert.match(lost!.reason, /^upstream connection lost/);
  assert.equal(events.ofType('started').length, 2);
  assert.equal(events.ofType('ended').length, 2, 'each started session ends exactly once');
});

test('a session that never became Active has no started and no ended, only the upstream unreachable', async (t) => {
  const { events, service } = await setup(t, { serverUrl: `ws://127.0.0.1:${await freePort()}` });
  await assert.rejects(service.start({ deviceId: 'dev-1', userId: 'u' }), { code: 'upstream_unavailable' });
  assert.deepEqual(events.domain.map((e) => (e.type === 'upstreamLink' ? { type: e.type, state: e.state } : e)), [{ type: 'upstreamLink', state: 'unreachable' }]);
});

test('a listener that throws is logged with its stack; the session and the other listeners carry on', async (t) => {
  const { events, lines, service } = await setup(t);
  const seenAfter: SessionEvent['type'][] = [];
  service.addListener((e) => {
    if (e.type === 'audioProcessed') throw new TypeError('listener bug');
  });
  service.addListener((e) => void seenAfter.push(e.type));
  const { id } = await service.start({ deviceId: 'dev-1', userId: 'u' });
  assert.deepEqual(service.sendAudio(id, speechPackets()[0]!).sequence, 1, 'the caller is not failed by a listener');
  await events.waitForType('upstreamAudio', 1, id);
  assert.deepEqual(seenAfter.slice(0, 2), ['started', 'audioProcessed']);
  const logged = lines.filter((l) => l.includes(`session ${id}: a listener failed on 'audioProcessed': TypeError: listener bug`));
  assert.equal(logged.length, 1);
  assert.match(lines.join('\n'), /TypeError: listener bug\s+at /, 'with its stack');
});

test('a clock set back while a session runs never dates its end before its start', async (t) => {
  // NTP correcting a Pi that started without a real-time clock, or a bad time source: the end of a
  // session dated by the clock alone came before its start, and its `ended` event before its `started`.
  const clock = { ms: Date.parse('2030-05-06T07:08:00.000Z') };
  const { events, service } = await setup(t, { now: () => new Date(clock.ms) });
  const record = await service.start({ deviceId: 'dev-1', userId: 'user-1' });
  clock.ms = Date.parse('2029-01-01T00:00:00.000Z');
  const final = await service.stop(record.id, 'stopped by the user');
  assert.deepEqual([final.startTime, final.endTime], ['2030-05-06T07:08:00.000Z', '2030-05-06T07:08:00.000Z']);
  assert.deepEqual(events.domain.filter((e) => e.type === 'started' || e.type === 'ended').map((e) => [e.type, (e as { at: Date }).at.toISOString()]),
    [['started', '2030-05-06T07:08:00.000Z'], ['ended', '2030-05-06T07:08:00.000Z']]);

  // A session started after the step is dated by the clock as it is now.
  const next = await service.start({ deviceId: 'dev-1', userId: 'user-1' });
  clock.ms += 5000;
  const nextFinal = await service.stop(next.id, 'stopped by the user');
  assert.deepEqual([nextFinal.startTime, nextFinal.endTime], ['2029-01-01T00:00:00.000Z', '2029-01-01T00:00:05.000Z']);
});
