// A misbehaving upstream voice server against the built bundle (issue 12, classes 6 and 7), with the
// shipped budgets except a longer first reconnect back-off (so an outage is long enough to send into):
// (a) audio whose sampleRate/channels change on every packet, 50+ packets a second for seconds: the decoder
//     is rebuilt at most VoiceService.DecoderRebuildsPerSecond times a second, every packet is either
//     delivered or dropped and counted (none waits in an unbounded queue: a frame sent after the burst
//     arrives at once), the group gets one Error per burst, RSS comes back, and the session stays up;
//     one legitimate format change still delivers every packet;
// (b) an upstream that accepts and drops every connection after 1.5 s: the session ends with SessionEnded
//     and a reason once VoiceService.ReconnectAttempts reconnects failed, stored as Failed, and the log
//     numbers each attempt "k of N";
// (c) one ordinary drop: the session reconnects (attempt 1 of 3) and goes on; devices sending meanwhile
//     are refused with an Error and the log says how many packets the outage cost.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { call } from '../support/http.js';
import { assertHealthyProcess, assertMemoryReturns, settledRss, speechPackets, startSession, type Daemon, type StartedSession } from './daemon.js';
import { startUpstreamRig, type FakeUpstream, type UpstreamRig } from './fake-upstream.js';
import { HubWire } from './hub-wire.js';
import { sleep, waitUntil } from '../support/wait.js';

const REBUILDS_PER_SECOND = 4; // the shipped VoiceService.DecoderRebuildsPerSecond
const ATTEMPTS = 3; // the shipped VoiceService.ReconnectAttempts
const FORMATS = [[8000, 1], [16000, 2], [24000, 1], [48000, 2], [12000, 1], [48000, 1], [16000, 1], [24000, 2]] as const;
const MARGIN_MB = 10;
const packets = speechPackets();

let rig: UpstreamRig | undefined;
let upstream: FakeUpstream;
let daemon: Daemon;
let session: StartedSession;
let observer: HubWire;

before(async () => {
  rig = await startUpstreamRig({}, {
    Logging: { LogLevel: { Upstream: 'Debug' } },
    VoiceService: { ReconnectDelay: '00:00:00.5000000' },
  });
  ({ upstream, daemon, session } = rig);
  observer = await HubWire.connect(daemon.url, 'json');
  await observer.join(session.sessionId, session.token);
});

after(async () => {
  observer?.close();
  await rig?.stop();
});

const audioFrame = (i: number, sampleRate: number, channels: number): string =>
  JSON.stringify({ type: 'audio', data: packets[i % packets.length]!.toString('base64'), sampleRate, channels });

type AudioData = { sampleRate: number; channels: number };
const audioData = (): AudioData[] => observer.of('AudioData').map(([d]) => d as AudioData);
const logLines = (pattern: RegExp): string[] => daemon.svc.output().split('\n').filter((l) => pattern.test(l));

/** Sends a text frame and waits for its TextResponse: every upstream frame before it has been handled. */
let markers = 0;
async function marker(socket: NonNullable<ReturnType<FakeUpstream['socketFor']>>, withinMs: number): Promise<number> {
  const text = `marker-${++markers}`;
  const sent = Date.now();
  socket.send(JSON.stringify({ type: 'text', text, final: true }));
  await observer.waitFor((m) => m.target === 'TextResponse' && (m.arguments?.[0] as { text?: string }).text === text, withinMs, text);
  return Date.now() - sent;
}

/** Format changes on every packet, two packets every 10 ms, for `ms`; returns what was sent and how fast. */
async function flipFormats(ms: number): Promise<{ sent: number; seconds: number }> {
  const socket = upstream.socketFor(session.sessionId)!;
  const began = Date.now();
  let sent = 0;
  while (Date.now() - began < ms) {
    for (let i = 0; i < 2; i++, sent++) {
      const [rate, channels] = FORMATS[sent % FORMATS.length]!;
      socket.send(audioFrame(sent, rate, channels));
    }
    await sleep(10);
  }
  return { sent, seconds: (Date.now() - began) / 1000 };
}

/** Decoder rebuilds as the group sees them: changes of format between consecutive AudioData. */
function formatChanges(list: AudioData[]): number {
  let changes = 0;
  for (let i = 1; i < list.length; i++) {
    if (list[i]!.sampleRate !== list[i - 1]!.sampleRate || list[i]!.channels !== list[i - 1]!.channels) changes++;
  }
  return changes;
}

const burstSummaries = (): string[] => logLines(new RegExp(`session ${session.sessionId}: upstream drop burst over: \\d+ frames`));

/** The dropped-frame count of the next burst the daemon logs as over, after `seen` earlier ones. */
async function burstDropped(seen: number): Promise<number> {
  await waitUntil(() => burstSummaries().length > seen, 'the burst summary', 5000);
  return Number(/burst over: (\d+) frames/.exec(burstSummaries()[seen]!)![1]);
}

describe('(a) upstream audio changing format on every packet', () => {
  let baseline = 0;

  it('one legitimate format change: every packet is delivered in the new format, nothing dropped', async () => {
    const socket = upstream.socketFor(session.sessionId)!;
    for (let i = 0; i < 20; i++) socket.send(audioFrame(i, 48000, 2));
    await marker(socket, 5000);
    const data = audioData();
    assert.equal(data.length, 20, 'every packet reached the group');
    assert.ok(data.every((d) => d.sampleRate === 48000 && d.channels === 2));
    const pcm = observer.of('AudioResponse').map(([b64]) => Buffer.from(String(b64), 'base64').length);
    assert.ok(pcm.every((n) => n === 960 * 2 * 2), '20 ms of 48 kHz stereo PCM each');
    assert.deepEqual(observer.of('Error'), []);
    baseline = await settledRss(daemon);
  });

  it(`4 s at 50+ packets/s: at most ${REBUILDS_PER_SECOND} rebuilds a second, each packet delivered or counted, one Error, no backlog`, async (t) => {
    const before = audioData().length;
    const bursts = burstSummaries().length;
    const rebuildsBefore = logLines(/Opus decoder rebuilt/).length;
    const { sent, seconds } = await flipFormats(4000);
    assert.ok(sent / seconds >= 50, `the test sent only ${(sent / seconds).toFixed(0)} packets/s`);
    // Whatever was not dropped has been handled by the time a frame sent after the burst arrives.
    const lagMs = await marker(upstream.socketFor(session.sessionId)!, 2000);
    const delivered = audioData().slice(before);
    const bound = REBUILDS_PER_SECOND * Math.ceil(seconds) + 1;
    const changes = formatChanges(delivered);
    const rebuilds = logLines(/Opus decoder rebuilt/).length - rebuildsBefore;
    t.diagnostic(`${sent} packets in ${seconds.toFixed(1)} s: ${delivered.length} delivered, ${changes} format changes, ${rebuilds} rebuilds logged, marker after ${lagMs} ms`);
    assert.ok(changes <= bound, `${changes} format changes reached the group in ${seconds.toFixed(1)} s (bound ${bound})`);
    assert.ok(rebuilds <= bound, `${rebuilds} decoder rebuilds in ${seconds.toFixed(1)} s (bound ${bound})`);
    assert.ok(delivered.length > 0, 'some audio still got through');
    const errors = observer.of('Error').map(([m]) => String(m));
    assert.equal(errors.length, 1, `one Error for the burst, got ${JSON.stringify(errors.slice(0, 5))} (${errors.length})`);
    assert.match(errors[0]!, new RegExp(`^upstream audio dropped: its format changed more than ${REBUILDS_PER_SECOND} times within a second`));
    assert.equal(delivered.length + (await burstDropped(bursts)), sent, 'every packet was delivered or counted as dropped');
    assert.equal(observer.of('SessionEnded').length, 0);
  });

  it('a second burst after a quiet second is a new burst: exactly one more Error', async () => {
    await sleep(1500);
    const before = audioData().length;
    const bursts = burstSummaries().length;
    const { sent } = await flipFormats(1500);
    await marker(upstream.socketFor(session.sessionId)!, 2000);
    assert.equal(observer.of('Error').length, 2);
    assert.equal(audioData().length - before + (await burstDropped(bursts)), sent);
  });

  it(`the session goes on at its own format, and RSS is back within ${MARGIN_MB} MiB`, async (t) => {
    await sleep(1100); // a full rebuild window: the next format change is allowed
    const socket = upstream.socketFor(session.sessionId)!;
    const before = audioData().length;
    for (let i = 0; i < 10; i++) socket.send(audioFrame(i, 16000, 1));
    await marker(socket, 5000);
    assert.deepEqual(audioData().slice(before), packets.slice(0, 10).map((p) => ({
      sessionId: session.sessionId, format: 'opus', sampleRate: 16000, channels: 1, data: p.toString('base64'),
    })));
    assert.equal(observer.of('Error').length, 2, 'no further Error');
    const res = await call(daemon.url, 'POST', '/api/voice/message', { token: session.token, body: { sessionId: session.sessionId, text: 'still there?' } });
    assert.equal(res.status, 200, res.text);
    assertHealthyProcess(daemon);
    const rss = await assertMemoryReturns(daemon, baseline, MARGIN_MB);
    t.diagnostic(`RSS baseline ${baseline.toFixed(1)} MiB, after ${rss.toFixed(1)} MiB`);
  });
});

describe('(c) one ordinary upstream drop', () => {
  it('reconnects (attempt 1 of 3) and goes on; audio sent meanwhile is refused with an Error and counted in the log', async () => {
    const device = await HubWire.connect(daemon.url, 'messagepack');
    try {
      await device.join(session.sessionId, session.token);
      const connections = upstream.connections;
      upstream.socketFor(session.sessionId)!.terminate();
      // Send while the link is down (its back-off is at least 250 ms) until the refusal shows.
      const deadline = Date.now() + 3000;
      let i = 0;
      while (device.of('Error').length < 3 && Date.now() < deadline) {
        device.send('SendAudioData', [session.sessionId, packets[i++ % packets.length]!]);
        await sleep(20);
      }
      const socket = await upstream.reconnected(session.sessionId, connections);
      const refused = device.of('Error').map(([m]) => String(m));
      assert.ok(refused.length >= 3, `${refused.length} refusals`);
      for (const m of refused) assert.match(m, /^upstream connection is (reconnecting|closing): audio dropped$/);
      await waitUntil(() => logLines(new RegExp(`session ${session.sessionId}: upstream reconnected \\(attempt 1 of ${ATTEMPTS}\\); \\d+ audio packets from devices were refused meanwhile`)).length === 1, 'the reconnect log line');
      assert.equal(logLines(new RegExp(`session ${session.sessionId}: reconnect attempt 1 of ${ATTEMPTS} in \\d+ ms`)).length, 1);

      // Both directions work again.
      const upstreamAudio = upstream.of('audio', session.sessionId).length;
      await device.invoke('SendAudioData', [session.sessionId, packets[0]!]);
      await waitUntil(() => upstream.of('audio', session.sessionId).length === upstreamAudio + 1, 'the audio upstream');
      await marker(socket, 5000);
      assert.equal(observer.of('SessionEnded').length, 0);
      assertHealthyProcess(daemon);
    } finally {
      device.close();
    }
  });
});

describe('(b) an upstream that accepts and drops every connection after 1.5 s', () => {
  it(`ends the session after ${ATTEMPTS} failed reconnects: SessionEnded with the reason, stored as Failed, "attempt k of ${ATTEMPTS}" logged`, async (t) => {
    const cuts: NodeJS.Timeout[] = [];
    upstream.onConnection = (socket) => { cuts.push(setTimeout(() => socket.terminate(), 1500)); };
    try {
      const flapping = await startSession(daemon.url);
      const connections = upstream.connections;
      const wire = await HubWire.connect(daemon.url, 'json');
      try {
        await wire.join(flapping.sessionId, flapping.token);
        const began = Date.now();
        const ended = await wire.waitFor((m) => m.target === 'SessionEnded', 20_000, 'SessionEnded');
        const { sessionId, reason } = ended.arguments![0] as { sessionId: string; reason: string };
        t.diagnostic(`ended after ${Date.now() - began} ms and ${upstream.connections - connections + 1} connections: ${reason}`);
        assert.equal(sessionId, flapping.sessionId);
        assert.match(reason, new RegExp(`^upstream connection lost \\(closed with 1006\\); ${ATTEMPTS} reconnect attempts failed: ` +
          // Up about 1.5 s, written with up to two decimals (durationText): `1.5 s`, `1.51 s`.
          'the reconnected connection closed with 1006 after 1(?:\\.\\d{1,2})? s, before it had been up 10 s'));
        assert.equal(upstream.connections - connections + 1, 1 + ATTEMPTS, 'the first connection and one per attempt');
        const attempts = logLines(new RegExp(`session ${flapping.sessionId}: upstream reconnected \\(attempt \\d of ${ATTEMPTS}\\)`));
        assert.deepEqual(attempts.map((l) => /attempt (\d) of/.exec(l)![1]), ['1', '2', '3']);
        assert.equal(logLines(new RegExp(`session ${flapping.sessionId} failed: .*\\(3 reconnects, 3 failed\\)$`)).length, 1, 'the counters in the last line');
        const stopped = await call(daemon.url, 'POST', '/api/voice/stop', { token: flapping.token, body: { sessionId: flapping.sessionId } });
        assert.equal(stopped.status, 200, stopped.text);
        assert.equal(stopped.json.state, 'Failed');
        assert.equal(stopped.json.endReason, reason);
        assert.equal(wire.of('SessionEnded').length, 1);
      } finally {
        wire.close();
      }
      // The other session never saw the flapping connections.
      assert.equal(observer.of('SessionEnded').length, 0);
      assertHealthyProcess(daemon);
    } finally {
      upstream.onConnection = undefined;
      for (const cut of cuts) clearTimeout(cut);
    }
  });
});
