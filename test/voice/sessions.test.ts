// VoiceSessionService against the real echo voice server on 127.0.0.1 (port 0).
import assert from 'node:assert/strict';
import { createServer, type AddressInfo, type Socket } from 'node:net';
import { test, type TestContext } from 'node:test';
import { WebSocketServer } from 'ws';
import { DomainError } from '../../src/errors.js';
import { silentLogger } from '../../src/log/logger.js';
import { startEchoServer, type EchoServer } from '../../src/upstream/echo-server.js';
import { VoiceSessionService } from '../../src/voice/sessions.js';
import { MemorySessionRepository, RecordingEvents, recordingLogger, referenceDecode, speechPackets, testBudgets } from './helpers.js';
import { sleep, waitUntil } from '../support/wait.js';
import { freePort } from '../support/ports.js';
import { scratchDir } from '../support/tmp.js';
import { openStore } from '../../src/store/index.js';
import { onDisk, session as storedSession } from '../store/helpers.js';

const isError = (code: string, text?: RegExp) => (e: unknown): boolean =>
  e instanceof DomainError && e.code === code && (!text || text.test(e.message));

interface Setup {
  idleMs?: number;
  serverUrl?: string;
  unsavedEndRetryMs?: number;
}

async function setup(t: TestContext, options: Setup = {}) {
  const echo = await startEchoServer({ host: '127.0.0.1', port: 0, logger: silentLogger });
  t.after(() => echo.close());
  const repo = new MemorySessionRepository();
  const events = new RecordingEvents();
  const { logger, lines } = recordingLogger();
  /** Registered devices by id, with their token generation (a new one when registered again). */
  const devices = new Map([['dev-1', 1], ['dev-2', 1]]);
  const state = { voice: true };
  const service = new VoiceSessionService({
    config: {
      serverUrl: options.serverUrl ?? `ws://127.0.0.1:${echo.port}/voice`,
      apiKey: 'upstream-key',
      connectTimeoutMs: 2000,
      sessionIdleTimeoutMs: options.idleMs ?? 60_000, deviceReconnectGraceMs: 30_000,
      enableVoice: () => state.voice,
      budgets: testBudgets({ 'VoiceService.ReconnectDelay': '00:00:00.0500000' }),
    },
    sessions: repo,
    deviceGeneration: (id) => devices.get(id),
    voiceDefaults: () => ({ sampleRate: 16000, channels: 1 }),
    listeners: [events.listener],
    logger,
    ...(options.unsavedEndRetryMs ? { unsavedEndRetryMs: options.unsavedEndRetryMs } : {}),
  });
  t.after(() => service.shutdown());
  return { echo, repo, events, lines, devices, state, service };
}

const start = (service: VoiceSessionService, deviceId = 'dev-1', sessionConfig?: Record<string, unknown>) =>
  service.start({ deviceId, userId: 'user-1', ...(sessionConfig ? { sessionConfig } : {}) });

test('start and stop: Starting -> Active -> Stopped, stored as history, SessionEnded to the group', async (t) => {
  const { echo, repo, events, service } = await setup(t);
  const record = await start(service);
  assert.match(record.id, /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
  assert.equal(record.state, 'Active');
  assert.deepEqual(record.config, { audioFormat: 'opus', sampleRate: 16000, channels: 1, autoMode: false, serverUrl: `ws://127.0.0.1:${echo.port}/voice` });
  assert.equal(record.endTime, null);
  // The answered states go to disk before the answer; Starting is a step on the way.
  assert.deepEqual(repo.saves.map((s) => [s.record.state, s.durable]), [['Starting', false], ['Active', true]]);
  assert.equal(service.get(record.id)?.state, 'Active');
  assert.equal(echo.connections(), 1);

  const final = await service.stop(record.id);
  assert.equal(final.state, 'Stopped');
  assert.equal(final.endReason, 'stopped');
  assert.ok(final.endTime !== null);
  assert.deepEqual(repo.records.get(record.id), final);
  assert.deepEqual([repo.saves.at(-1)?.record.state, repo.saves.at(-1)?.durable], ['Stopped', true]);
  assert.deepEqual((await events.waitFor('SessionEnded'))[0]!.payload, { sessionId: record.id, reason: 'stopped' });
  await waitUntil(() => echo.connections() === 0, 'the upstream socket to close');
  assert.deepEqual(await service.stop(record.id), final, 'stopping again returns the final record');
  assert.equal(events.of('SessionEnded').length, 1);
  assert.deepEqual(service.list(), []);
});

test('audio round trip: AudioProcessed facts, AudioResponse PCM equal to native libopus, AudioData as received', async (t) => {
  const { repo, events, service } = await setup(t);
  const { id } = await start(service);
  const packets = speechPackets().slice(0, 10);
  packets.forEach((packet, i) => {
    assert.deepEqual(service.sendAudio(id, packet), { sequence: i + 1, bytes: packet.length, durationMs: 20 });
  });
  const responses = await events.waitFor('AudioResponse', 10, id);
  const data = await events.waitFor('AudioData', 10, id);
  const expected = referenceDecode(packets, 16000, 1);
  responses.forEach((r, i) => assert.equal(r.payload, expected[i]!.toString('base64'), `AudioResponse ${i} is libopus' int16 PCM`));
  data.forEach((d, i) => assert.deepEqual(d.payload, { sessionId: id, format: 'opus', sampleRate: 16000, channels: 1, data: packets[i]!.toString('base64') }));
  assert.equal(service.get(id)?.audioPacketsSent, 10);
  await service.stop(id);
  assert.equal(repo.records.get(id)?.audioPacketsSent, 10);
});

test('text round trip, upstream error and a corrupt upstream packet reach the group', async (t) => {
  const { events, service } = await setup(t);
  const { id } = await start(service);
  service.sendText(id, 'hello', 'text');
  assert.deepEqual((await events.waitFor('TextResponse', 1, id))[0]!.payload, { sessionId: id, text: 'echo: hello', final: true });
  service.sendText(id, '!error boom', 'text');
  assert.equal((await events.waitFor('Error', 1, id))[0]!.payload, 'boom');
  // Passes the TOC checks (CBR code 3, 2 frames) but has 3 bytes to split: libopus rejects it on the way back.
  service.sendAudio(id, Uint8Array.from([0xfb, 0x02, 1, 2, 3]));
  const errors = await events.waitFor('Error', 2, id);
  assert.match(String(errors[1]!.payload), /^upstream audio could not be decoded: corrupt Opus packet: libopus -4/);
  assert.equal(service.get(id)?.state, 'Active');
  service.sendAudio(id, speechPackets()[0]!);
  await events.waitFor('AudioResponse', 1, id);
  assert.equal(events.of('AudioData', id).length, 1, 'no AudioData for the corrupt packet');
});

test('voice switched off: text is refused, a running session goes on with its audio and can be stopped', async (t) => {
  const { events, state, service } = await setup(t);
  const { id } = await start(service);
  state.voice = false;
  assert.throws(() => service.sendText(id, 'hello', 'text'), isError('unavailable', /^voice features are disabled \(VoiceService.EnableVoice is false\)$/));
  assert.equal(service.get(id)?.state, 'Active');
  assert.deepEqual(service.sendAudio(id, speechPackets()[0]!), { sequence: 1, bytes: speechPackets()[0]!.length, durationMs: 20 });
  await events.waitFor('AudioResponse', 1, id);
  assert.equal(events.of('TextResponse', id).length, 0, 'the refused text never went upstream');
  const stopped = await service.stop(id, 'stopped by request');
  assert.deepEqual([stopped.state, stopped.endReason], ['Stopped', 'stopped by request']);
});

test('bad audio and text from the client are refused without counting', async (t) => {
  const { service } = await setup(t);
  const { id } = await start(service);
  assert.throws(() => service.sendAudio(id, new Uint8Array(0)), isError('invalid_argument', /empty packet/));
  assert.throws(() => service.sendAudio(id, Uint8Array.from([0x4b, 0])), isError('invalid_argument', /zero frames/));
  assert.throws(() => service.sendAudio(id, new Uint8Array(4000).fill(0x48)), isError('invalid_argument', /exceeds 3840/));
  assert.throws(() => service.sendText(id, '', 'text'), isError('invalid_argument', /text/));
  assert.throws(() => service.sendText(id, 'x', ''), isError('invalid_argument', /messageType/));
  assert.equal(service.get(id)?.audioPacketsSent, 0);
});

test('unknown device, voice disabled, bad sessionConfig and unknown sessions are refused', async (t) => {
  const { repo, state, service } = await setup(t);
  await assert.rejects(start(service, 'nope'), isError('not_found', /^device 'nope' does not exist$/));
  state.voice = false;
  await assert.rejects(start(service), isError('unavailable', /disabled/));
  state.voice = true;
  await assert.rejects(start(service, 'dev-1', { audioFormat: 'pcm', sampleRate: 44100, channels: 3, autoMode: 'yes' }), (e: unknown) => {
    assert.ok(e instanceof DomainError && e.code === 'invalid_argument');
    assert.deepEqual(Object.keys(e.fields ?? {}).sort(),
      ['sessionConfig.audioFormat', 'sessionConfig.autoMode', 'sessionConfig.channels', 'sessionConfig.sampleRate']);
    return true;
  });
  assert.equal(repo.saves.length, 0);
  assert.throws(() => service.sendAudio('nope', Uint8Array.from([0x48])), isError('not_found', /^session 'nope' does not exist$/));
  assert.throws(() => service.sendText('nope', 'hi', 'text'), isError('not_found', /^session 'nope' does not exist$/));
  await assert.rejects(service.stop('nope'), isError('not_found', /^session 'nope' does not exist$/));
  const custom = await start(service, 'dev-1', { sampleRate: 48000, channels: 2, autoMode: true });
  assert.deepEqual([custom.config.sampleRate, custom.config.channels, custom.config.autoMode], [48000, 2, true]);
});

test('upstream unreachable: upstream_unavailable, fast, and no session left behind', async (t) => {
  const port = await freePort();
  const { repo, events, service } = await setup(t, { serverUrl: `ws://127.0.0.1:${port}` });
  await assert.rejects(start(service), isError('upstream_unavailable', new RegExp(`unreachable: connect ECONNREFUSED 127\\.0\\.0\\.1:${port}`)));
  assert.deepEqual(service.list(), []);
  assert.deepEqual(repo.listOpen(), []);
  const [record] = [...repo.records.values()];
  assert.equal(record?.state, 'Failed');
  assert.match(record?.endReason ?? '', /ECONNREFUSED/);
  assert.deepEqual(events.events, [], 'nobody could have joined a session that never started');
});

test('starts refused while the upstream is down: 5 lines a minute, the rest summed up at shutdown with the last reason; every record kept', async (t) => {
  const port = await freePort();
  const { repo, lines, service } = await setup(t, { serverUrl: `ws://127.0.0.1:${port}` });
  for (let i = 0; i < 30; i++) await assert.rejects(start(service), isError('upstream_unavailable'));
  const failed = (): string[] => lines.filter((l) => / failed: upstream voice server unreachable/.test(l));
  assert.equal(failed().length, 5, failed().join('\n'));
  assert.equal([...repo.records.values()].filter((r) => r.state === 'Failed').length, 30, 'each refused start is recorded');
  await service.shutdown();
  const sums = lines.filter((l) => l.includes('more session start(s) failed'));
  assert.deepEqual(sums.map((l) => /warn: .*?(\d+) more session start\(s\) failed in the last 60 s, each recorded as Failed; the last: session [0-9a-f-]{36} failed: upstream voice server unreachable: connect ECONNREFUSED/.exec(l)?.[1]), ['25'], sums.join('\n'));
});

test('echo server killed mid-session: reconnect attempts, then Failed + SessionEnded; a new session works once it is back', async (t) => {
  const { echo, repo, events, lines, service } = await setup(t);
  const { id } = await start(service);
  await echo.close();
  const [ended] = await events.waitFor('SessionEnded', 1, id, 10_000);
  assert.match(String((ended!.payload as { reason: string }).reason), /upstream connection lost .*3 reconnect attempts failed: connect ECONNREFUSED/);
  assert.deepEqual(
    lines.filter((l) => l.includes(`session ${id}: reconnect attempt`) && l.includes('failed')).map((l) => /attempt (\d of \d)/.exec(l)?.[1]),
    ['1 of 3', '2 of 3', '3 of 3'],
  );
  await waitUntil(() => repo.records.get(id)?.state === 'Failed', 'the Failed record');
  assert.equal(service.get(id)?.state, 'Failed');
  assert.deepEqual(service.list(), []);
  assert.throws(() => service.sendAudio(id, speechPackets()[0]!), isError('conflict', /is not active \(Failed\)/));

  const again: EchoServer = await startEchoServer({ host: '127.0.0.1', port: echo.port, logger: silentLogger });
  t.after(() => again.close());
  const next = await start(service);
  service.sendText(next.id, 'back', 'text');
  assert.deepEqual((await events.waitFor('TextResponse', 1, next.id))[0]!.payload, { sessionId: next.id, text: 'echo: back', final: true });
});

test('idle timeout stops a silent session; traffic keeps a session alive', async (t) => {
  const { repo, events, service } = await setup(t, { idleMs: 300 });
  const silent = await start(service);
  const [ended] = await events.waitFor('SessionEnded', 1, silent.id);
  assert.deepEqual(ended!.payload, { sessionId: silent.id, reason: 'idle timeout' });
  await waitUntil(() => repo.records.get(silent.id)?.state === 'Stopped', 'the Stopped record');

  const { service: busyService, events: busyEvents } = await setup(t, { idleMs: 1000 });
  const busy = await start(busyService);
  for (let i = 0; i < 15; i++) { // 1.5 s of traffic, every 100 ms, against a 1 s idle timeout
    busyService.sendAudio(busy.id, speechPackets()[i]!);
    await new Promise((r) => setTimeout(r, 100));
  }
  assert.equal(busyService.get(busy.id)?.state, 'Active');
  assert.equal(busyEvents.of('SessionEnded').length, 0);
});

test('one active session per device: a new start replaces the old one', async (t) => {
  const { repo, events, service } = await setup(t);
  const first = await start(service);
  const other = await start(service, 'dev-2');
  const second = await start(service);
  assert.deepEqual((await events.waitFor('SessionEnded', 1, first.id))[0]!.payload, { sessionId: first.id, reason: 'replaced' });
  assert.equal(repo.records.get(first.id)?.state, 'Stopped');
  assert.equal(repo.records.get(first.id)?.endReason, 'replaced');
  assert.deepEqual(service.list().map((s) => s.id).sort(), [other.id, second.id].sort());
  assert.throws(() => service.sendAudio(first.id, speechPackets()[0]!), isError('conflict'));

  const racing = await Promise.allSettled([start(service, 'dev-2'), start(service, 'dev-2')]);
  assert.equal(racing.filter((r) => r.status === 'fulfilled').length, 1);
  const loser = racing.find((r) => r.status === 'rejected');
  assert.ok(loser && isError('conflict', /ended before it started \(replaced\)/)(loser.reason));
  assert.equal(service.list().filter((s) => s.deviceId === 'dev-2').length, 1, 'concurrent starts leave one session');
});

test('a start replaced while it writes its Active record is not answered as started', async (t) => {
  const { repo, service } = await setup(t);
  // Each durable write takes a while, as on an SD card: a later start replaces a session whose start is
  // still writing its Active record, which must then not be answered as started.
  repo.durableDelayMs = 100;
  const first = start(service, 'dev-2');
  await waitUntil(() => repo.saves.some((s) => s.record.state === 'Active' && s.durable), 'the first start writing its Active record');
  const [a, b] = await Promise.allSettled([first, start(service, 'dev-2')]);
  assert.ok(a.status === 'rejected' && isError('conflict', /ended before it started \(replaced\)/)(a.reason), String(a.status === 'rejected' ? a.reason : 'answered as started'));
  assert.equal(b.status, 'fulfilled');
  assert.deepEqual(service.list().map((s) => s.id), [b.status === 'fulfilled' ? b.value.id : '']);

  // Many, each a little after the other: whatever the interleaving, only the running one is answered.
  repo.durableDelayMs = 30;
  const results = await Promise.allSettled(Array.from({ length: 6 }, (_, i) => sleep(i * 12).then(() => start(service, 'dev-2'))));
  const started = results.flatMap((r) => (r.status === 'fulfilled' ? [r.value.id] : []));
  const live = service.list().filter((s) => s.deviceId === 'dev-2');
  assert.equal(live.length, 1, 'one session runs');
  assert.deepEqual(started, [live[0]!.id], 'only the running session is answered');
  for (const r of results) if (r.status === 'rejected') assert.ok(isError('conflict', /ended before it started/)(r.reason), String(r.reason));
});

test('a final record the store cannot write: the stop is refused with 503, the session shows as stopped, and the record is written when storage recovers', async (t) => {
  const { repo, lines, service } = await setup(t, { unsavedEndRetryMs: 100 });
  const record = await start(service);
  repo.failDurable = true;
  await assert.rejects(service.stop(record.id, 'stopped by request'), isError('unavailable', /is stopped, but its final record could not be written \(storage is not writable: ENOSPC/));
  assert.equal(repo.records.get(record.id)?.state, 'Active', 'the store reverted the write it could not make');
  const shown = service.get(record.id);
  assert.deepEqual([shown?.state, shown?.endReason], ['Stopped', 'stopped by request'], 'the service shows what happened');
  assert.throws(() => service.sendText(record.id, 'hello', 'text'), isError('conflict', /is not active \(Stopped\)/));
  await assert.rejects(service.stop(record.id), isError('unavailable'), 'a repeated stop tries again, and says so');

  // A new session for the device changes nothing about the old one.
  repo.failDurable = false;
  const next = await start(service);
  repo.failDurable = true;
  assert.equal(service.get(record.id)?.state, 'Stopped');
  await sleep(350); // a few retries, all failing: said once in the log, not at each
  assert.equal(lines.filter((l) => l.includes('still not written')).length, 1, lines.join('\n'));

  repo.failDurable = false;
  await waitUntil(() => repo.records.get(record.id)?.state === 'Stopped', 'the held record written by the retry', 3000);
  assert.deepEqual(await service.stop(record.id), { ...shown });
  assert.equal(repo.records.get(record.id)?.endReason, 'stopped by request');
  assert.ok(lines.some((l) => l.includes('wrote 1 final session record(s) held since storage failed')));
  assert.equal(service.get(next.id)?.state, 'Active');
});

test('stopAllForDevice, shutdown and recordInterrupted record how sessions ended', async (t) => {
  const { repo, events, service } = await setup(t);
  const a = await start(service, 'dev-1');
  const b = await start(service, 'dev-2');
  await service.stopAllForDevice('dev-1');
  assert.equal(repo.records.get(a.id)?.endReason, 'device deleted');
  assert.equal(service.get(b.id)?.state, 'Active');
  await service.shutdown();
  assert.equal(repo.records.get(b.id)?.endReason, 'service shutdown');
  assert.equal(repo.saves.at(-1)?.durable, true, 'sessions ended by shutdown are written durably');
  assert.equal(events.of('SessionEnded').length, 2);
  await assert.rejects(start(service), isError('unavailable', /shutting down/));

  // A new process finds sessions the previous one left open.
  const leftOpen = { ...b, id: 'left-open', state: 'Active' as const, endTime: null, endReason: null };
  await repo.save(leftOpen);
  await repo.save({ ...leftOpen, id: 'half-started', state: 'Starting' });
  const restarted = new VoiceSessionService({
    config: { serverUrl: 'ws://127.0.0.1:9', apiKey: '', connectTimeoutMs: 100, sessionIdleTimeoutMs: 0, deviceReconnectGraceMs: 30_000, enableVoice: () => true, budgets: testBudgets() },
    sessions: repo, deviceGeneration: () => 1, voiceDefaults: () => ({ sampleRate: 16000, channels: 1 }),
    listeners: [events.listener], logger: silentLogger, now: () => new Date('2030-01-02T03:04:05Z'),
  });
  const endedBefore = events.ofType('ended').length;
  assert.equal(await restarted.recordInterrupted(), 2);
  assert.deepEqual(repo.listOpen(), []);
  // The Active one had told the listeners (MQTT) it started; one that never got past Starting had not.
  assert.deepEqual(events.ofType('ended').slice(endedBefore).map((e) => [e.sessionId, e.deviceId, e.state, e.reason, e.at.toISOString()]),
    [['left-open', 'dev-2', 'Stopped', 'service restarted', '2030-01-02T03:04:05.000Z']]);
  assert.deepEqual(
    [repo.records.get('left-open')?.state, repo.records.get('left-open')?.endReason, repo.records.get('left-open')?.endTime],
    ['Stopped', 'service restarted', '2030-01-02T03:04:05.000Z'],
  );
  assert.equal(repo.saves.at(-1)?.durable, true);
});

test('a session a crash left open is not recorded as ending before it started when the clock starts in the past', async (t) => {
  // A Pi without a real-time clock boots at the time it saved, or 1970, until NTP corrects it.
  const repo = new MemorySessionRepository();
  const events = new RecordingEvents();
  const open = { id: 'left-open', deviceId: 'dev-1', userId: 'u', state: 'Active' as const, startTime: '2026-12-03T19:00:00.000Z',
    endTime: null, endReason: null, config: { audioFormat: 'opus', sampleRate: 16000, channels: 1, autoMode: false, serverUrl: 'ws://127.0.0.1:9/' }, audioPacketsSent: 3 };
  await repo.save(open);
  await repo.save({ ...open, id: 'older', startTime: '1969-12-31T23:59:59.000Z' });
  const restarted = new VoiceSessionService({
    config: { serverUrl: 'ws://127.0.0.1:9', apiKey: '', connectTimeoutMs: 100, sessionIdleTimeoutMs: 0, deviceReconnectGraceMs: 30_000, enableVoice: () => true, budgets: testBudgets() },
    sessions: repo, deviceGeneration: () => 1, voiceDefaults: () => ({ sampleRate: 16000, channels: 1 }),
    listeners: [events.listener], logger: silentLogger, now: () => new Date('1970-01-01T00:00:07.000Z'),
  });
  t.after(() => restarted.shutdown());
  assert.equal(await restarted.recordInterrupted(), 2);
  assert.deepEqual(['left-open', 'older'].map((id) => [repo.records.get(id)?.startTime, repo.records.get(id)?.endTime]),
    [['2026-12-03T19:00:00.000Z', '2026-12-03T19:00:00.000Z'], ['1969-12-31T23:59:59.000Z', '1970-01-01T00:00:07.000Z']]);
  assert.deepEqual(events.ofType('ended').map((e) => [e.sessionId, e.at.toISOString()]),
    [['left-open', '2026-12-03T19:00:00.000Z'], ['older', '1970-01-01T00:00:07.000Z']]);
});

test('sessions a crash left open are recorded as ended with one write of the database, not one each', async (t) => {
  const dir = await scratchDir();
  const store = await openStore({ dataDir: dir.path, flushIntervalMs: 60_000, logger: silentLogger });
  // Closed before its folder goes: a close after would find the file gone and try to write it again.
  t.after(async () => {
    await store.close();
    await dir.cleanup();
  });
  for (let n = 0; n < 50; n++) await store.sessions.save(storedSession(`left-open-${n}`, { deviceId: `dev-${n}`, state: n % 2 === 0 ? 'Active' : 'Starting' }));
  await store.flush();
  const events = new RecordingEvents();
  const restarted = new VoiceSessionService({
    config: { serverUrl: 'ws://127.0.0.1:9', apiKey: '', connectTimeoutMs: 100, sessionIdleTimeoutMs: 0, deviceReconnectGraceMs: 30_000, enableVoice: () => true, budgets: testBudgets() },
    sessions: store.sessions, deviceGeneration: () => 1, voiceDefaults: () => ({ sampleRate: 16000, channels: 1 }),
    listeners: [events.listener], logger: silentLogger, now: () => new Date('2030-01-02T03:04:05Z'),
  });
  const writesBefore = store.persistCount;
  assert.equal(await restarted.recordInterrupted(), 50);
  // Every save waits for the one write that started after it: at most two writes for the lot.
  assert.ok(store.persistCount - writesBefore <= 2, `${store.persistCount - writesBefore} writes of the database`);
  assert.deepEqual(store.sessions.listOpen(), []);
  assert.deepEqual(await onDisk(dir.path, (s) => s.sessions.listOpen()), []);
  assert.equal(store.sessions.get('left-open-7')?.endReason, 'service restarted');
  assert.deepEqual(events.ofType('ended').map((e) => e.sessionId).sort(), Array.from({ length: 25 }, (_, k) => `left-open-${k * 2}`).sort(), 'the Active ones');
});

test('upstream audio at another rate and channel count reconfigures the session decoder', async (t) => {
  // An upstream that always answers at 48 kHz stereo, whatever the session asked for.
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0 });
  await new Promise<void>((resolve) => wss.once('listening', resolve));
  t.after(() => new Promise<void>((resolve) => { for (const c of wss.clients) c.terminate(); wss.close(() => resolve()); }));
  wss.on('connection', (socket) => socket.on('message', (raw) => {
    const frame = JSON.parse(raw.toString()) as { type: string; data?: string };
    if (frame.type === 'audio') socket.send(JSON.stringify({ type: 'audio', data: frame.data, sampleRate: 48000, channels: 2 }));
  }));
  const { events, service } = await setup(t, { serverUrl: `ws://127.0.0.1:${(wss.address() as AddressInfo).port}` });
  const { id } = await start(service);
  const packets = speechPackets().slice(0, 3);
  for (const p of packets) service.sendAudio(id, p);
  const responses = await events.waitFor('AudioResponse', 3, id);
  for (const r of responses) assert.equal(Buffer.from(String(r.payload), 'base64').length, 960 * 2 * 2, '20 ms at 48 kHz stereo');
  const data = await events.waitFor('AudioData', 3, id);
  assert.deepEqual(data.map((d) => [(d.payload as { sampleRate: number }).sampleRate, (d.payload as { channels: number }).channels]), [[48000, 2], [48000, 2], [48000, 2]]);
});

/** A voice server that stops reading each connection once its `start` came: a session it holds waits out its close grace. */
async function upstreamPausedAfterStart(t: TestContext): Promise<string> {
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0 });
  await new Promise<void>((resolve) => wss.once('listening', resolve));
  t.after(() => new Promise<void>((resolve) => { for (const c of wss.clients) c.terminate(); wss.close(() => resolve()); }));
  wss.on('connection', (socket) => socket.on('message', (raw) => {
    if ((JSON.parse(raw.toString()) as { type: string }).type === 'start') socket.pause();
  }));
  return `ws://127.0.0.1:${(wss.address() as AddressInfo).port}`;
}

/**
 * An echo voice server whose handshakes after the first wait while `hold` is set, and are refused
 * (401) while `refuse` is: a second start for a device connects for as long as the test likes.
 */
async function gatedUpstream(t: TestContext): Promise<{ url: string; gate: { hold: boolean; refuse: boolean }; waiting: () => number; release: () => void; openHandshakes: () => number }> {
  const gate = { hold: false, refuse: false };
  let handshakes = 0;
  const held: Array<() => void> = [];
  const sockets = new Set<Socket>();
  const wss = new WebSocketServer({
    host: '127.0.0.1',
    port: 0,
    verifyClient: (info, done) => {
      const socket = info.req.socket;
      sockets.add(socket);
      socket.once('close', () => sockets.delete(socket));
      if (handshakes++ === 0) return done(true);
      if (gate.refuse) return done(false, 401);
      if (gate.hold) held.push(() => done(true));
      else done(true);
    },
  });
  await new Promise<void>((resolve) => wss.once('listening', resolve));
  t.after(() => new Promise<void>((resolve) => {
    held.splice(0).forEach((go) => go());
    wss.close(() => resolve());
    for (const c of wss.clients) c.terminate();
  }));
  return {
    url: `ws://127.0.0.1:${(wss.address() as AddressInfo).port}`,
    gate,
    waiting: () => held.length,
    release: () => held.splice(0).forEach((go) => go()),
    /** Connections open, the first session's included. */
    openHandshakes: () => sockets.size,
  };
}

/** A second start for dev-1, held mid-connect by the gated upstream; its refusal is asserted by the caller. */
async function heldSecondStart(upstream: Awaited<ReturnType<typeof gatedUpstream>>, service: VoiceSessionService): Promise<{ second: ReturnType<typeof start> }> {
  upstream.gate.hold = true;
  const second = start(service);
  second.catch(() => undefined); // refused while the test still ends the session: asserted by the caller
  await waitUntil(() => upstream.waiting() === 1, 'the second start to be connecting');
  // Wrapped: an async function returning the promise itself would wait for it to settle.
  return { second };
}

// A refused start changes nothing: the device's session is ended only once the new one's upstream
// connection is open. It used to be ended first ('replaced'), and a start the shutdown, the device's
// deletion or the upstream then refused had ended it for nothing.
test('a start the shutdown refuses while it connects leaves the device\'s session to the shutdown: 503, and it ends "service shutdown", not "replaced"', async (t) => {
  const upstream = await gatedUpstream(t);
  const { repo, events, service } = await setup(t, { serverUrl: upstream.url });
  const first = await start(service);
  const { second } = await heldSecondStart(upstream, service);
  assert.equal(service.get(first.id)?.state, 'Active', 'running while the new start connects');
  await service.shutdown();
  upstream.release();
  await assert.rejects(second, isError('unavailable', /^the service is shutting down$/));
  assert.deepEqual([repo.records.get(first.id)?.state, repo.records.get(first.id)?.endReason], ['Stopped', 'service shutdown']);
  assert.deepEqual(events.ofType('ended').map((e) => [e.sessionId, e.reason]), [[first.id, 'service shutdown']]);
  assert.deepEqual(service.list(), []);
});

test('a start refused by the upstream (502) or stopped while it connects (409) leaves the device\'s session running', async (t) => {
  const upstream = await gatedUpstream(t);
  const { events, service } = await setup(t, { serverUrl: upstream.url });
  const first = await start(service);
  upstream.gate.refuse = true;
  await assert.rejects(start(service), isError('upstream_unavailable', /^upstream voice server unreachable: /));
  upstream.gate.refuse = false;
  upstream.gate.hold = true;
  const stopped = start(service);
  await waitUntil(() => upstream.waiting() === 1, 'the start to be connecting');
  const connecting = service.list().find((s) => s.state === 'Starting')!;
  await service.stop(connecting.id, 'stopped by request');
  upstream.release();
  await assert.rejects(stopped, isError('conflict', new RegExp(`^session '${connecting.id}' ended before it started \\(stopped by request\\)$`)));
  assert.equal(service.get(first.id)?.state, 'Active');
  assert.deepEqual(service.list().map((s) => s.id), [first.id]);
  assert.deepEqual(events.ofType('ended'), []);
  // The session is the device's as before: a start that goes through replaces it.
  upstream.gate.hold = false;
  const third = await start(service);
  assert.deepEqual(events.ofType('ended').map((e) => [e.sessionId, e.reason]), [[first.id, 'replaced']]);
  assert.deepEqual(service.list().map((s) => s.id), [third.id]);
});

test('starts fired at once for one device connect one at a time: the latest wins, each earlier one still connecting is 409', async (t) => {
  // Each start waiting for its own upstream connection, a device firing starts held one connection and
  // one decoder per start until the connect timeout.
  const upstream = await gatedUpstream(t);
  const { service } = await setup(t, { serverUrl: upstream.url });
  const first = await start(service);
  upstream.gate.hold = true;
  const starts = Array.from({ length: 20 }, () => start(service));
  for (const s of starts) s.catch(() => undefined);
  const given = await Promise.allSettled(starts.slice(0, -1));
  for (const r of given) assert.ok(r.status === 'rejected' && isError('conflict', /^session '[0-9a-f-]{36}' ended before it started \(replaced\)$/)(r.reason), String(r.status === 'rejected' ? r.reason : 'started'));
  await waitUntil(() => upstream.openHandshakes() === 2, 'the given-up starts to close their connections: the first session\'s and the latest start\'s stay');
  assert.equal(service.get(first.id)?.state, 'Active', 'the device\'s session runs until the latest start has connected');
  upstream.release();
  const latest = await starts.at(-1)!;
  assert.deepEqual(service.list().map((s) => s.id), [latest.id]);
  assert.equal(service.get(first.id)?.endReason, 'replaced');
});

test('voice switched off while a start connects: 503 as a start a moment later, the device\'s session left running', async (t) => {
  const upstream = await gatedUpstream(t);
  const { repo, events, state, service } = await setup(t, { serverUrl: upstream.url });
  const first = await start(service);
  const { second } = await heldSecondStart(upstream, service);
  state.voice = false;
  upstream.release();
  await assert.rejects(second, isError('unavailable', /^voice features are disabled \(VoiceService.EnableVoice is false\)$/));
  // Switching voice off ends no session: the one the refused start would have replaced runs on.
  assert.deepEqual(service.list().map((s) => [s.id, s.state]), [[first.id, 'Active']]);
  const refused = [...repo.records.values()].find((r) => r.id !== first.id);
  assert.deepEqual([refused?.state, refused?.endReason], ['Stopped', 'voice features were disabled']);
  assert.deepEqual(events.ofType('ended'), [], 'no one heard of the refused session, so no one hears it end');
  await waitUntil(() => upstream.openHandshakes() === 1, "the refused start's upstream connection to close");
});

test('a device deleted while a start for it connects: 404, and its session ends "device deleted", not "replaced"', async (t) => {
  const upstream = await gatedUpstream(t);
  const { devices, events, service } = await setup(t, { serverUrl: upstream.url });
  const first = await start(service);
  const { second } = await heldSecondStart(upstream, service);
  devices.delete('dev-1');
  await service.stopAllForDevice('dev-1');
  upstream.release();
  await assert.rejects(second, isError('not_found', /^device 'dev-1' does not exist$/));
  assert.deepEqual(events.ofType('ended').map((e) => [e.sessionId, e.reason]), [[first.id, 'device deleted']]);
  assert.deepEqual(service.list(), []);
});

test('a device deleted and registered again while a start for it connects: the start is the old device\'s, 404', async (t) => {
  // That is another device (a new token generation), and a start its deleted predecessor made must
  // not open a session for it.
  const upstream = await gatedUpstream(t);
  const { devices, service } = await setup(t, { serverUrl: upstream.url });
  await start(service);
  const { second } = await heldSecondStart(upstream, service);
  // The registration needs only the row gone: it lands while the deletion still ends the sessions.
  devices.delete('dev-1');
  const ending = service.stopAllForDevice('dev-1');
  devices.set('dev-1', 2);
  await ending;
  upstream.release();
  await assert.rejects(second, isError('not_found', /^device 'dev-1' does not exist$/));
  assert.deepEqual(service.list(), []);
});

test('a device deleted after a start replaced its session, before the start was answered: 409 with the deletion as the reason', async (t) => {
  // An upstream that stops reading once a session started: the replaced session waits out its close
  // grace (1 s), in which the DELETE comes. The start had replaced the session: it is no start refused
  // (no 404), but one whose session ended before it was answered.
  const { devices, service } = await setup(t, { serverUrl: await upstreamPausedAfterStart(t) });
  const first = await start(service);
  // `start` reached the upstream on its own, before `stop` follows.
  await new Promise((resolve) => setTimeout(resolve, 100));
  let settled = false;
  const second = start(service).finally(() => (settled = true));
  await waitUntil(() => service.get(first.id)?.endReason === 'replaced', 'the first session to be replaced');
  const replacing = service.list().find((s) => s.id !== first.id);
  assert.equal(replacing?.state, 'Active');
  assert.equal(settled, false, 'the start still waits for the first session to close');
  devices.delete('dev-1');
  await service.stopAllForDevice('dev-1');
  await assert.rejects(second, isError('conflict', new RegExp(`^session '${replacing!.id}' ended before it started \\(device deleted\\)$`)));
  assert.deepEqual(service.list(), []);
});

test('a start its shutdown or its device deletion ends while it connects is answered as a start after them: 503 and 404, not 409', async (t) => {
  // An upstream that accepts TCP and never answers the handshake: the start waits in Starting.
  const sockets = new Set<Socket>();
  const closed = new Set<Socket>();
  const blackHole = createServer((s) => { sockets.add(s); s.resume(); s.on('close', () => closed.add(s)); s.on('error', () => undefined); });
  await new Promise<void>((resolve) => blackHole.listen(0, '127.0.0.1', resolve));
  t.after(() => { for (const s of sockets) s.destroy(); blackHole.close(); });
  const { devices, repo, service, events } = await setup(t, { serverUrl: `ws://127.0.0.1:${(blackHole.address() as AddressInfo).port}` });

  const deleted = start(service, 'dev-1');
  await waitUntil(() => sockets.size === 1, 'the first start to connect');
  devices.delete('dev-1');
  repo.removeDevice('dev-1');
  await service.stopAllForDevice('dev-1');
  await assert.rejects(deleted, isError('not_found', /^device 'dev-1' does not exist$/));
  await waitUntil(() => closed.size === 1, 'the deleted device\'s upstream socket to be closed');
  assert.deepEqual(service.list(), []);

  const interrupted = start(service, 'dev-2');
  await waitUntil(() => sockets.size === 2, 'the second start to connect');
  await service.shutdown();
  await assert.rejects(interrupted, isError('unavailable', /^the service is shutting down$/));

  // The deleted device's session went with it: its end is not written back.
  assert.deepEqual([...repo.records.values()].map((r) => [r.deviceId, r.state, r.endReason]), [['dev-2', 'Stopped', 'service shutdown']]);
  assert.deepEqual(events.ofType('ended'), [], 'neither had started');
});

test('a session whose device was deleted writes no record after the deletion: not its audio count, not its end', async (t) => {
  const { devices, repo, events, service } = await setup(t);
  const { id } = await start(service, 'dev-1');
  const other = await start(service, 'dev-2');
  const packets = speechPackets().slice(0, 2);
  service.sendAudio(id, packets[0]!);
  // The deletion as the store makes it: the device and its sessions' records gone in one write.
  devices.delete('dev-1');
  repo.removeDevice('dev-1');
  const saves = repo.saves.length;
  service.sendAudio(id, packets[1]!); // still running until the deletion's listeners end it
  await service.stopAllForDevice('dev-1');
  assert.deepEqual(events.ofType('ended').map((e) => [e.sessionId, e.reason]), [[id, 'device deleted']]);
  repo.flush();
  assert.deepEqual(repo.saves.slice(saves), []);
  assert.equal(repo.records.has(id), false);
  // Registered again: a device of its own, whose sessions are written as any.
  devices.set('dev-1', 2);
  const again = await start(service, 'dev-1');
  assert.equal(repo.records.get(again.id)?.state, 'Active');
  assert.equal(service.get(other.id)?.state, 'Active');
});
