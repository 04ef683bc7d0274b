// Fuzzing what the upstream voice server sends to a live session (fast-check): the test is the
// upstream (VoiceService.ServerUrl points at a `ws` server here) and sends audio, text and error
// frames with wrong types in every field, corrupt Opus, garbage, binary frames, frames over the 1 MiB
// limit, and closes or cuts the socket. Two hub clients (JSON and MessagePack) sit in the session's
// group. Properties, checked after every run with a marker text frame (upstream frames are handled
// in order): the process never exits or logs an error; the session stays Active (reconnecting after
// each close); every valid audio frame reaches both clients as AudioResponse and AudioData, every
// valid text frame as TextResponse, invalid frames are dropped; every hub frame parses; RSS returns.
//
// The per-session budgets are lifted here (every format change may rebuild the decoder, every close is
// reconnected): this test is about what each frame does; abuse-upstream.test.ts tests the budgets.
//
// Memory margin: +10 MiB over the RSS after a warm-up of the same generators, both read after a full
// GC forced through the daemon's inspector; a leak per frame (several thousand) would pass it.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import { OPUS_CHANNEL_COUNTS, OPUS_SAMPLE_RATES } from '../../src/opus-format.js';
import { call } from '../support/http.js';
import { waitUntil } from '../support/wait.js';
import {
  assertHealthyProcess, assertMemoryReturns, settledRss, speechPackets, type Daemon, type StartedSession,
} from './daemon.js';
import { startUpstreamRig, type FakeUpstream, type UpstreamRig } from './fake-upstream.js';
import { wrongType } from './http-arbitraries.js';
import { HubWire } from './hub-wire.js';
import { checkProperty } from './property.js';

const MARGIN_MB = 10;
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

let upstream: FakeUpstream;
let daemon: Daemon;
let session: StartedSession;
let observers: HubWire[];
const packets = speechPackets();

let rig: UpstreamRig | undefined;

before(async () => {
  rig = await startUpstreamRig({}, {
    VoiceService: { DecoderRebuildsPerSecond: 1000, ReconnectAttempts: 1000, ReconnectStableAfter: '00:00:00.0010000' },
  });
  ({ upstream, daemon, session } = rig);
  observers = [await HubWire.connect(daemon.url, 'json'), await HubWire.connect(daemon.url, 'messagepack')];
  for (const o of observers) await o.join(session.sessionId, session.token);
});

after(async () => {
  for (const o of observers ?? []) o.close();
  await rig?.stop();
});

/** What a frame should cause at the hub clients. */
type Effect = 'audio' | 'maybe-audio' | 'text' | 'error' | 'none';
type Action =
  | { kind: 'frame'; text: string; effect: Effect }
  | { kind: 'binary'; bytes: Uint8Array }
  | { kind: 'huge' }
  | { kind: 'close'; code: number }
  | { kind: 'cut' };

const json = (v: unknown): string => JSON.stringify(v);
/** An optional property of an upstream frame: absent, `null` (read as absent, as a .NET server sends it) or a value. */
const optOrNull = <T>(arb: fc.Arbitrary<T>): fc.Arbitrary<T | null | undefined> => fc.oneof(fc.constant(undefined), fc.constant(null), arb);
const b64 = (b: Uint8Array): string => Buffer.from(b).toString('base64');

const act = (text: string, effect: Effect): Action => ({ kind: 'frame', text, effect });

const frame: fc.Arbitrary<Action> = fc.oneof(
  { weight: 6, arbitrary: fc.record({ i: fc.nat({ max: packets.length - 1 }), sampleRate: optOrNull(fc.constantFrom(...OPUS_SAMPLE_RATES)), channels: optOrNull(fc.constantFrom(...OPUS_CHANNEL_COUNTS)) })
    .map(({ i, sampleRate, channels }) => act(json({ type: 'audio', data: b64(packets[i]!), sampleRate, channels }), 'audio')) },
  { weight: 2, arbitrary: fc.uint8Array({ minLength: 1, maxLength: 300 })
    .map((b) => act(json({ type: 'audio', data: b64(b) }), 'maybe-audio')) },
  { weight: 2, arbitrary: fc.record({
    data: fc.oneof(wrongType, fc.constantFrom('', 'abc!', 'AAA', '====')),
    sampleRate: fc.oneof(fc.constant(16000), fc.constantFrom(44100, 0, -1, '16000')),
  }).filter((o) => typeof o.data !== 'string' || !BASE64.test(o.data) || o.data === '')
    .map((o) => act(json({ type: 'audio', ...o }), 'none')) },
  { weight: 2, arbitrary: fc.record({ i: fc.nat({ max: 5 }), sampleRate: fc.constantFrom(44100, 0, 1e9, '8000'), channels: fc.constantFrom(0, 3, 1.5) })
    .map(({ i, sampleRate, channels }) => act(json({ type: 'audio', data: b64(packets[i]!), sampleRate, channels }), 'none')) },
  { weight: 3, arbitrary: fc.record({ text: fc.string({ maxLength: 200 }), final: optOrNull(fc.boolean()) })
    .map((o) => act(json({ type: 'text', ...o }), 'text')) },
  { weight: 1, arbitrary: fc.record({ text: wrongType, final: fc.constantFrom('yes', 1) })
    .map((o) => act(json({ type: 'text', ...o }), 'none')) },
  { weight: 2, arbitrary: fc.record({ message: fc.string({ maxLength: 200 }), code: optOrNull(fc.oneof(fc.string({ maxLength: 10 }), fc.integer())) })
    .map((o) => act(json({ type: 'error', ...o }), 'error')) },
  { weight: 1, arbitrary: fc.record({ message: wrongType, code: fc.constantFrom({}, [], true) })
    .map((o) => act(json({ type: 'error', ...o }), 'none')) },
  { weight: 2, arbitrary: fc.oneof(
    fc.string({ maxLength: 100 }),
    fc.jsonValue({ maxDepth: 3 }).map((v) => json(v) ?? 'null'),
    fc.record({ type: fc.oneof(fc.string({ maxLength: 10 }), wrongType) }).map(json),
    fc.integer({ min: 1, max: 50_000 }).map((n) => '['.repeat(n) + ']'.repeat(n)),
    fc.constantFrom('', '{', 'null', '{"type":"audio"', `{"type":"${'x'.repeat(100_000)}"}`),
  ).map((text) => act(text, 'none')) },
  { weight: 1, arbitrary: fc.uint8Array({ maxLength: 300 }).map((bytes) => ({ kind: 'binary', bytes }) as Action) },
);

const control: fc.Arbitrary<Action> = fc.oneof(
  fc.constant({ kind: 'huge' } as const),
  fc.constantFrom(1000, 1001, 1011, 4000, 4999).map((code) => ({ kind: 'close', code }) as const),
  fc.constant({ kind: 'cut' } as const),
);

const actions = fc.array(fc.oneof({ weight: 12, arbitrary: frame }, { weight: 1, arbitrary: control }), { minLength: 1, maxLength: 20 });

const count = (target: string): number[] => observers.map((o) => o.of(target).length);
let marker = 0;

async function runActions(list: Action[]): Promise<void> {
  const before = { audio: count('AudioResponse'), data: count('AudioData'), text: count('TextResponse') };
  // Lower bounds count only frames after the last cut: a cut socket may drop what it had not delivered.
  let sure = { audio: 0, text: 0 };
  let maybe = { audio: 0, text: 0 };
  let socket = upstream.socketFor(session.sessionId);
  assert.ok(socket, 'no upstream socket for the session');
  for (const a of list) {
    if (a.kind === 'frame') {
      socket.send(a.text);
      if (a.effect === 'audio') sure.audio++;
      if (a.effect === 'maybe-audio') maybe.audio++;
      if (a.effect === 'text') sure.text++;
    } else if (a.kind === 'binary') {
      socket.send(a.bytes, { binary: true });
    } else {
      const connections = upstream.connections;
      if (a.kind === 'huge') socket.send('x'.repeat(1024 * 1024 + 10));
      else if (a.kind === 'close') socket.close(a.code);
      else {
        socket.terminate();
        maybe = { audio: maybe.audio + sure.audio, text: maybe.text + sure.text };
        sure = { audio: 0, text: 0 };
      }
      socket = await upstream.reconnected(session.sessionId, connections);
    }
  }
  const text = `marker-${++marker}`;
  socket.send(json({ type: 'text', text, final: true }));
  for (const o of observers) await o.waitFor((m) => m.target === 'TextResponse' && (m.arguments?.[0] as { text?: string })?.text === text, 5000, text);
  assert.ok(daemon.alive(), daemon.death());
  const after = { audio: count('AudioResponse'), data: count('AudioData'), text: count('TextResponse') };
  observers.forEach((o, i) => {
    assert.deepEqual(o.errors, [], `${o.protocol} observer got frames that do not parse`);
    const audio = after.audio[i]! - before.audio[i]!;
    assert.ok(audio >= sure.audio && audio <= sure.audio + maybe.audio, `${o.protocol}: ${audio} AudioResponse for ${sure.audio} valid (+${maybe.audio} doubtful) audio frames`);
    assert.equal(after.data[i]! - before.data[i]!, audio, `${o.protocol}: AudioData and AudioResponse pair up`);
    const texts = after.text[i]! - before.text[i]! - 1;
    assert.ok(texts >= sure.text && texts <= sure.text + maybe.text, `${o.protocol}: ${texts} TextResponse for ${sure.text} valid text frames`);
    assert.equal(o.of('SessionEnded').length, 0, `${o.protocol}: the session ended`);
  });
}

async function fuzz(numRuns: number): Promise<void> {
  await checkProperty(fc.asyncProperty(actions, runActions), numRuns);
}

describe('upstream frame fuzzing against a live session of the built bundle', () => {
  let baseline = 0;

  it('warms up with the same generators, then measures the RSS baseline', async () => {
    await fuzz(15);
    assertHealthyProcess(daemon);
    baseline = await settledRss(daemon);
  });

  it('random frames, closes and cuts from upstream', async () => {
    await fuzz(80);
    assertHealthyProcess(daemon);
  });

  it(`the session still works end to end, nothing was logged as an error, RSS within ${MARGIN_MB} MiB of the baseline`, async (t) => {
    const res = await call(daemon.url, 'POST', '/api/voice/message', { token: session.token, body: { sessionId: session.sessionId, text: 'still there?' } });
    assert.equal(res.status, 200, res.text);
    // Frames to upstream leave at the end of the event-loop turn (one write per turn), which may be after the 200.
    await waitUntil(() => upstream.of('text', session.sessionId).some((f) => f.text === 'still there?'), 'the text reached upstream', 2000);
    assertHealthyProcess(daemon);
    const rss = await assertMemoryReturns(daemon, baseline, MARGIN_MB);
    t.diagnostic(`RSS baseline ${baseline.toFixed(1)} MiB, after ${rss.toFixed(1)} MiB`);
  });

  it('stops cleanly on SIGTERM', async () => {
    assert.equal(await daemon.stop(), 0, daemon.svc.output().slice(-2000));
  });
});
