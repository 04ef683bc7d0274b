// Sessions outlive their device's connections: DevicePresence on its own (who holds which session, the
// grace timer), then VoiceSessionService against the real echo voice server: a device that leaves and
// joins again within VoiceService.DeviceReconnectGracePeriod keeps the same session and upstream link;
// one that does not return ends the session with a reason that says so.
import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import { silentLogger } from '../../src/log/logger.js';
import { startEchoServer } from '../../src/upstream/echo-server.js';
import { DevicePresence } from '../../src/voice/device-presence.js';
import { VoiceSessionService } from '../../src/voice/sessions.js';
import { sleep, waitUntil } from '../support/wait.js';
import { MemorySessionRepository, RecordingEvents, recordingLogger, speechPackets, testBudgets } from './helpers.js';

type Call = [string, string, number];

function presence(graceMs: number, clock = { now: 1000 }): { p: DevicePresence; calls: Call[]; clock: { now: number } } {
  const calls: Call[] = [];
  const p = new DevicePresence(graceMs, {
    away: (id, ms) => calls.push(['away', id, ms]),
    returned: (id, ms) => calls.push(['returned', id, ms]),
    expired: (id, ms) => calls.push(['expired', id, ms]),
  }, () => clock.now);
  return { p, calls, clock };
}

describe('DevicePresence', () => {
  it('a session is away only when its last holder is gone, and back when any holder attaches', () => {
    const { p, calls, clock } = presence(60_000);
    p.attach('s1', 'c1');
    p.attach('s1', 'c1'); // a repeated JoinSession
    p.attach('s1', 'admin');
    p.release('c1');
    assert.deepEqual(calls, [], 'another holder still listens');
    p.release('admin');
    assert.deepEqual(calls, [['away', 's1', 60_000]]);
    assert.equal(p.isAway('s1'), true);
    p.release('admin'); // released twice: nothing more
    clock.now += 1500;
    p.attach('s1', 'c2');
    assert.deepEqual(calls, [['away', 's1', 60_000], ['returned', 's1', 1500]]);
    assert.equal(p.isAway('s1'), false);
    p.forget('s1');
    assert.equal(p.size, 0);
  });

  it('one holder across sessions: releasing it makes each of them away; unknown holders are ignored', () => {
    const { p, calls } = presence(60_000);
    p.release('never-attached');
    p.attach('s1', 'c1');
    p.attach('s2', 'c1');
    p.release('c1');
    assert.deepEqual(calls, [['away', 's1', 60_000], ['away', 's2', 60_000]]);
    p.forget('s1');
    p.forget('s2');
  });

  it('the grace period expires once for a session nobody rejoins; forgetting a session cancels its timer', async () => {
    const { p, calls } = presence(40);
    p.attach('s1', 'c1');
    p.attach('s2', 'c2');
    p.release('c1');
    p.release('c2');
    p.forget('s2'); // ended meanwhile
    await sleep(120);
    assert.deepEqual(calls, [['away', 's1', 40], ['away', 's2', 40], ['expired', 's1', 40]]);
    p.forget('s1');
    assert.equal(p.size, 0);
  });
});

/** Lets the session service look at a released connection (it does so a microtask later). */
const settle = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

async function setup(t: TestContext, graceMs: number, idleMs = 60_000) {
  const echo = await startEchoServer({ host: '127.0.0.1', port: 0, logger: silentLogger });
  t.after(() => echo.close());
  const repo = new MemorySessionRepository();
  const events = new RecordingEvents();
  const { logger, lines } = recordingLogger();
  const service = new VoiceSessionService({
    config: {
      serverUrl: `ws://127.0.0.1:${echo.port}/voice`,
      apiKey: 'k',
      connectTimeoutMs: 2000,
      sessionIdleTimeoutMs: idleMs,
      deviceReconnectGraceMs: graceMs,
      enableVoice: () => true,
      budgets: testBudgets(),
    },
    sessions: repo,
    deviceGeneration: () => 1,
    voiceDefaults: () => ({ sampleRate: 16000, channels: 1 }),
    listeners: [events.listener],
    logger,
  });
  t.after(() => service.shutdown());
  return { echo, repo, events, lines, service };
}

describe('VoiceSessionService: a session waits for its device', () => {
  it('a device that rejoins within the grace period resumes the same session on the same upstream link', async (t) => {
    const { echo, events, lines, service } = await setup(t, 5000);
    const packets = speechPackets();
    const { id } = await service.start({ deviceId: 'dev-1', userId: 'u' });
    assert.equal(service.attach(id, 'conn-1'), true);
    service.sendAudio(id, packets[0]!);
    await events.waitFor('AudioResponse', 1, id);

    service.release('conn-1'); // the device's connection dropped
    await settle();
    const [away] = events.ofType('deviceAway', id);
    assert.deepEqual({ ...away!, at: undefined }, { type: 'deviceAway', sessionId: id, deviceId: 'dev-1', graceMs: 5000, at: undefined });
    assert.equal(service.get(id)?.state, 'Active', 'the session goes on while the device is away');
    // Upstream answers that come meanwhile still flow as events (no one hears them on the hub).
    service.sendText(id, 'while away', 'text');
    await events.waitForType('text', 1, id);

    await sleep(50);
    assert.equal(service.attach(id, 'conn-2'), true, 'the device reconnected (a new connection) and joined again');
    const [back] = events.ofType('deviceReturned', id);
    assert.equal(back!.deviceId, 'dev-1');
    assert.ok(back!.awayMs >= 40 && back!.awayMs < 5000, String(back!.awayMs));
    assert.ok(lines.some((l) => l.includes(`session ${id}: device dev-1 lost its connection; the session waits 5 s for it to rejoin`)), lines.join('\n'));
    assert.ok(lines.some((l) => l.includes(`session ${id}: device dev-1 rejoined after `)));

    service.sendAudio(id, packets[1]!);
    await events.waitFor('AudioResponse', 2, id);
    const record = service.get(id)!;
    assert.equal(record.state, 'Active');
    assert.equal(record.audioPacketsSent, 2, 'the packet count goes on: same session');
    assert.equal(service.list().length, 1, 'one session for the device, not a second one');
    assert.equal(echo.connections(), 1, 'the same upstream connection');
    assert.deepEqual(events.ofType('ended', id), []);
  });

  it('a device that does not come back: the session ends after the grace period, with the reason, stored and logged', async (t) => {
    const { echo, repo, events, lines, service } = await setup(t, 150);
    const { id } = await service.start({ deviceId: 'dev-1', userId: 'u' });
    service.attach(id, 'conn-1');
    const t0 = Date.now();
    service.release('conn-1');
    const [ended] = await events.waitForType('ended', 1, id, 3000);
    const waited = Date.now() - t0;
    assert.ok(waited >= 140 && waited < 2000, `ended after ${waited} ms`);
    const reason = 'device did not rejoin within 150 ms of losing its connection';
    assert.equal(ended!.reason, reason);
    assert.equal(ended!.state, 'Stopped');
    assert.deepEqual(events.of('SessionEnded', id).map((e) => e.payload), [{ sessionId: id, reason }]);
    await waitUntil(() => repo.get(id)?.state === 'Stopped', 'the final record saved', 3000);
    assert.equal(repo.get(id)?.endReason, reason);
    assert.ok(lines.some((l) => l.includes(`session ${id} stopped: ${reason}`)), lines.join('\n'));
    assert.equal(service.attach(id, 'conn-2'), false, 'too late: the session has ended');
    await waitUntil(() => echo.connections() === 0, 'its upstream link closed', 3000);
  });

  it('grace period 0: the session ends as soon as its last connection is gone', async (t) => {
    const { events, service } = await setup(t, 0);
    const { id } = await service.start({ deviceId: 'dev-1', userId: 'u' });
    service.attach(id, 'a');
    service.attach(id, 'b');
    service.release('a');
    await sleep(30);
    assert.equal(service.get(id)?.state, 'Active', 'one connection still listens');
    service.release('b');
    const [ended] = await events.waitForType('ended', 1, id, 2000);
    assert.equal(ended!.reason, 'device did not rejoin within 0 ms of losing its connection');
  });

  it('a session nobody joined never waits for a device: connections closing elsewhere leave it alone', async (t) => {
    const { events, service } = await setup(t, 30);
    const { id } = await service.start({ deviceId: 'dev-1', userId: 'u' });
    const other = await service.start({ deviceId: 'dev-2', userId: 'u' });
    service.attach(other.id, 'conn-x');
    service.release('conn-x');
    service.release('conn-never');
    await events.waitForType('ended', 1, other.id, 2000);
    await sleep(80);
    assert.equal(service.get(id)?.state, 'Active');
    assert.deepEqual(events.ofType('deviceAway', id), []);
  });

  it('the idle timeout still counts while the device is away, and rejoining is not traffic', async (t) => {
    const { events, service } = await setup(t, 60_000, 300);
    const { id } = await service.start({ deviceId: 'dev-1', userId: 'u' });
    service.attach(id, 'conn-1');
    service.release('conn-1');
    await sleep(150);
    service.attach(id, 'conn-2');
    const [ended] = await events.waitForType('ended', 1, id, 3000);
    assert.equal(ended!.reason, 'idle timeout');
  });

  it('on shutdown, connections closed in the same turn are not devices to wait for', async (t) => {
    const { events, lines, service } = await setup(t, 60_000);
    const { id } = await service.start({ deviceId: 'dev-1', userId: 'u' });
    service.attach(id, 'conn-1');
    service.release('conn-1'); // the hub closes every connection first...
    const done = service.shutdown(); // ...and the sessions end right after
    await done;
    await settle();
    assert.deepEqual(events.ofType('deviceAway', id), []);
    assert.ok(!lines.some((l) => l.includes('lost its connection')), lines.join('\n'));
    assert.deepEqual(events.ofType('ended', id).map((e) => e.reason), ['service shutdown']);
  });

  it('a session stopped while its device is away ends once, with its own reason', async (t) => {
    const { events, service } = await setup(t, 100);
    const { id } = await service.start({ deviceId: 'dev-1', userId: 'u' });
    service.attach(id, 'conn-1');
    service.release('conn-1');
    await settle();
    await service.stop(id, 'stopped');
    await sleep(200);
    assert.deepEqual(events.ofType('ended', id).map((e) => e.reason), ['stopped']);
  });

  // A device with a token (which registration hands anyone, as shipped) can leave and rejoin its session as
  // fast as hub connections open: against the built service one such loop wrote 42 KB of Information lines a
  // second. As every line a client can cause at will (docs/operations.md, "Logging"), the first 20 of a
  // minute are written, the rest summed up in one line with their count and the last of them.
  it('a device leaving and rejoining in a loop: 20 lines a minute, then one sum with the count', async (t) => {
    const { events, lines, service } = await setup(t, 5000);
    const { id } = await service.start({ deviceId: 'dev-1', userId: 'u' });
    const rounds = 100;
    for (let i = 0; i < rounds; i++) {
      assert.equal(service.attach(id, `conn-${i}`), true);
      service.release(`conn-${i}`);
      await settle(); // a release is looked at a microtask later
    }
    assert.equal(events.ofType('deviceAway', id).length, rounds, 'every drop is still an event');
    assert.equal(events.ofType('deviceReturned', id).length, rounds - 1);
    const presence = (): string[] => lines.filter((l) => l.includes('lost its connection') || l.includes(' rejoined after '));
    assert.equal(presence().length, 20, presence().join('\n'));
    await service.shutdown();
    const sums = lines.filter((l) => l.includes('more line(s) about devices losing their hub connection'));
    assert.equal(sums.length, 1, lines.join('\n'));
    assert.match(sums[0]!, new RegExp(`^warn: \\w+: 179 more line\\(s\\) about devices losing their hub connection and rejoining left out in the last 60 s; the last: session ${id}: device dev-1 lost its connection; the session waits 5 s for it to rejoin$`));
  });
});
