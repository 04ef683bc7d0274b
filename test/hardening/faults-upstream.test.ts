// The upstream voice server (the echo server, a child process) killed with SIGKILL while 20 sessions
// stream audio through the built bundle (an
// upstream drop is retried 3 times with backoff, then the session is Failed and its group gets
// SessionEnded). Killed and restarted at once, each session either resumes or ends, none is left
// hanging; killed for good, every session ends as Failed, new starts are 502 and /health is Unhealthy;
// once the echo server is back, /health recovers and 20 new sessions stream. The service never exits.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { call } from '../support/http.js';
import { assertHealthyProcess, speechPackets, startDaemon, startSession, type Daemon, type StartedSession } from './daemon.js';
import { EchoChild } from './echo-child.js';
import { HubWire } from './hub-wire.js';
import { waitUntil } from '../support/wait.js';
import { freePort } from '../support/ports.js';

const SESSIONS = 20;
/** Faster than nothing, slower than real time: 20 streams on a shared 2-core machine. */
const PACKET_INTERVAL_MS = 40;
const packets = speechPackets();

interface Stream {
  session: StartedSession;
  wire: HubWire;
  timer: NodeJS.Timeout | undefined;
}

let echo: EchoChild;
let daemon: Daemon;
let streams: Stream[] = [];

before(async () => {
  echo = new EchoChild(await freePort());
  await echo.start();
  daemon = await startDaemon({ settings: { VoiceService: { ServerUrl: echo.url } } });
});

after(async () => {
  for (const s of streams) stopStreaming(s);
  for (const s of streams) s.wire.close();
  await daemon?.stop();
  await echo?.kill();
});

async function startStreaming(session: StartedSession, index: number): Promise<Stream> {
  const wire = await HubWire.connect(daemon.url, index % 2 === 0 ? 'json' : 'messagepack');
  await wire.join(session.sessionId, session.token);
  let n = index;
  const timer = setInterval(() => {
    const packet = packets[n++ % packets.length]!;
    wire.send('SendAudioData', [session.sessionId, wire.protocol === 'json' ? packet.toString('base64') : packet]);
  }, PACKET_INTERVAL_MS);
  return { session, wire, timer };
}

function stopStreaming(s: Stream): void {
  clearInterval(s.timer);
  s.timer = undefined;
}

const responses = (s: Stream): number => s.wire.of('AudioResponse').length;
const ended = (s: Stream): boolean => s.wire.of('SessionEnded').length > 0;

describe('upstream killed and restarted under 20 streaming sessions', () => {
  it(`${SESSIONS} sessions stream through the echo server`, async () => {
    for (let i = 0; i < SESSIONS; i++) streams.push(await startStreaming(await startSession(daemon.url), i));
    await waitUntil(() => streams.every((s) => responses(s) >= 3), 'audio back on every session', 15_000);
  });

  it('killed and restarted at once: every session resumes or ends, none is left hanging', async (t) => {
    await echo.kill();
    await echo.start();
    const atRestart = streams.map(responses);
    await waitUntil(() => streams.every((s, i) => responses(s) > atRestart[i]! + 2 || ended(s)), 'each session to resume or end', 20_000);
    const resumed = streams.filter((s) => !ended(s));
    t.diagnostic(`${resumed.length} of ${SESSIONS} sessions reconnected and resumed, ${SESSIONS - resumed.length} ended`);
    // Packets sent while the link was down were refused to their sender, not lost silently.
    const refused = streams.flatMap((s) => s.wire.of('Error')).filter(([m]) => /upstream connection is (reconnecting|failed)|is not active/.test(String(m)));
    assert.ok(refused.length > 0, 'no sender was told its audio was refused during the outage');
    for (const s of streams.filter(ended)) {
      stopStreaming(s);
      const res = await call(daemon.url, 'POST', '/api/voice/stop', { token: s.session.token, body: { sessionId: s.session.sessionId } });
      assert.equal(res.json?.state, 'Failed', res.text);
    }
    streams = streams.filter((s) => !ended(s));
    assertHealthyProcess(daemon);
  });

  it('killed for good: every session ends as Failed with SessionEnded, new starts are 502, /health is 503', async () => {
    await echo.kill();
    await waitUntil(() => streams.every(ended), 'SessionEnded on every session', 20_000);
    for (const s of streams) {
      stopStreaming(s);
      const [payload] = s.wire.of('SessionEnded')[0]! as [{ sessionId: string; reason: string }];
      assert.equal(payload.sessionId, s.session.sessionId);
      assert.match(payload.reason, /^upstream connection lost .*3 reconnect attempts failed/);
      const res = await call(daemon.url, 'POST', '/api/voice/stop', { token: s.session.token, body: { sessionId: s.session.sessionId } });
      assert.equal(res.status, 200, res.text);
      assert.equal(res.json.state, 'Failed');
      assert.equal(res.json.endReason, payload.reason);
      s.wire.close();
    }
    const device = streams[0]!.session;
    const start = await call(daemon.url, 'POST', '/api/voice/start', { token: device.token, body: { deviceId: device.deviceId, userId: 'anna' } });
    assert.equal(start.status, 502, start.text);
    assert.equal(start.json.title, 'Bad Gateway');
    const health = await call(daemon.url, 'GET', '/health');
    assert.equal(health.status, 503);
    assert.equal(health.json.entries['voice-service'].status, 'Unhealthy');
    assertHealthyProcess(daemon);
  });

  it(`back again: /health recovers and ${SESSIONS} new sessions stream`, async () => {
    await echo.start();
    await waitUntil(async () => (await call(daemon.url, 'GET', '/health')).status === 200, '/health 200', 15_000, 250);
    streams = [];
    for (let i = 0; i < SESSIONS; i++) streams.push(await startStreaming(await startSession(daemon.url), i));
    await waitUntil(() => streams.every((s) => responses(s) >= 3), 'audio back on every new session', 15_000);
    for (const s of streams) stopStreaming(s);
    assertHealthyProcess(daemon);
  });
});
