// The Opus decoder threads (decoder-pool.ts) with real worker threads and the real decoder, seen through
// UpstreamInbound as a session sees them: per-session order against interleaved text, PCM equal to the
// inline decoder's, a full thread queue dropping and counting, a failed thread replaced without taking
// the sessions down, shutdown, and threads = 0 decoding on the event loop.
import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import { Worker } from 'node:worker_threads';
import { hubEventOf } from '../../src/api/hub-session-bridge.js';
import { decoderThreads } from '../../src/voice/budgets.js';
import { startDecodeThread } from '../../src/voice/opus/decode-thread.js';
import { DecoderPool, type AudioDecoder, type DecoderPoolOptions } from '../../src/voice/opus/decoder-pool.js';
import { BACKLOG_PAUSE, UpstreamInbound } from '../../src/voice/upstream-inbound.js';
import type { UpstreamMessage } from '../../src/upstream/protocol.js';
import { recordingLogger, speechPackets, wasmTrapPackets } from './helpers.js';
import { waitUntil } from '../support/wait.js';

const packets = speechPackets();

function pool(t: TestContext, options: Partial<DecoderPoolOptions> = {}) {
  const { logger, lines } = recordingLogger();
  const started: Worker[] = [];
  const decoders = new DecoderPool({
    threads: 2,
    queuePerThread: 512,
    logger,
    startThread: () => {
      const worker = startDecodeThread();
      started.push(worker);
      return worker;
    },
    ...options,
  });
  t.after(() => decoders.close());
  return { decoders, lines, started };
}

/** A session's inbound side on `decoder`, recording what its group would be sent. */
async function session(t: TestContext, decoder: AudioDecoder, inFlightFrames = 2048, format = { sampleRate: 16000, channels: 1 }) {
  await decoder.reconfigure(format.sampleRate, format.channels);
  const events: { target: string; payload: unknown }[] = [];
  const backlog: boolean[] = [];
  const { logger, lines } = recordingLogger();
  const pipe = new UpstreamInbound({
    sessionId: 's',
    decoder,
    format,
    budget: { queuePackets: 32, queueBytes: 256 * 1024, rebuildsPerSecond: 4, inFlightFrames },
    emit: (event) => {
      const out = hubEventOf(event);
      if (out) events.push({ target: out.target, payload: out.payload });
    },
    isActive: () => true,
    onBacklog: (behind) => backlog.push(behind),
    logger,
  });
  t.after(() => { pipe.close(); decoder.free(); });
  const of = (target: string) => events.filter((e) => e.target === target).map((e) => e.payload);
  return { pipe, events, of, lines, backlog };
}

const audio = (i: number): UpstreamMessage => {
  const packet = packets[i % packets.length]!;
  return { kind: 'audio', data: packet.toString('base64'), packet };
};
const text = (t: string): UpstreamMessage => ({ kind: 'text', text: t, final: true });

/** What the inline decoder makes of packets 0..n-1, as Base64 AudioResponse payloads. */
async function inlinePcm(t: TestContext, n: number): Promise<string[]> {
  const { decoders } = pool(t, { threads: 0 });
  const s = await session(t, decoders.create());
  for (let i = 0; i < n; i++) s.pipe.push(audio(i));
  return s.of('AudioResponse') as string[];
}

test('threads: each session keeps its order, text behind audio waits for it, PCM equals the inline decoder', async (t) => {
  const n = 60;
  const expected = await inlinePcm(t, n);
  const { decoders } = pool(t, { threads: 2 });
  const sessions = await Promise.all([0, 1, 2].map(async () => session(t, decoders.create())));
  for (let i = 0; i < n; i++) {
    for (const s of sessions) {
      s.pipe.push(audio(i));
      if (i % 10 === 9) s.pipe.push(text(`after ${i}`));
    }
  }
  for (const s of sessions) assert.equal(s.events.length, 0, 'nothing is decoded before the turn ends');
  await waitUntil(() => sessions.every((s) => s.of('AudioResponse').length === n), 'every packet of every session');
  for (const s of sessions) {
    assert.deepEqual(s.of('AudioResponse'), expected, 'bit for bit the inline PCM, in order');
    const order = s.events.map((e) => (e.target === 'TextResponse' ? `T${(e.payload as { text: string }).text}` : e.target[5]));
    const want: string[] = [];
    for (let i = 0; i < n; i++) {
      want.push('R', 'D');
      if (i % 10 === 9) want.push(`Tafter ${i}`);
    }
    assert.deepEqual(order, want);
    assert.equal(s.pipe.drops.totalDropped, 0);
  }
  assert.equal(decoders.stats.threads, 2, 'three sessions share two threads');
});

test('a full thread queue refuses packets: dropped and counted, one Error per burst, later packets decode', async (t) => {
  const { decoders } = pool(t, { threads: 1, queuePerThread: 4 });
  const s = await session(t, decoders.create());
  for (let i = 0; i < 50; i++) s.pipe.push(audio(i));
  assert.equal(s.pipe.drops.total.queue, 46);
  assert.equal(decoders.stats.refused, 46);
  await waitUntil(() => s.of('AudioResponse').length === 4, 'the four accepted packets');
  assert.deepEqual(s.of('AudioData').map((d) => (d as { data: string }).data), [0, 1, 2, 3].map((i) => packets[i]!.toString('base64')));
  assert.deepEqual(s.of('Error'), ['upstream audio dropped: the decoder threads are behind (their queues are full)']);
  assert.equal(s.lines.filter((l) => l.includes('decoder threads are behind')).length, 1, 'logged once for the burst');
  s.pipe.push(audio(4));
  await waitUntil(() => s.of('AudioResponse').length === 5, 'a packet after the queue drained');
});

test('a burst far larger than the rebuild queue (DecodeQueuePackets 32) goes through whole', async (t) => {
  const { decoders } = pool(t, { threads: 1 });
  const s = await session(t, decoders.create());
  for (let i = 0; i < 300; i++) s.pipe.push(audio(i));
  assert.deepEqual(s.backlog, [true], `reading upstream paused at ${BACKLOG_PAUSE} frames waiting`);
  await waitUntil(() => s.of('AudioResponse').length === 300, 'all 300 packets');
  assert.equal(s.pipe.drops.totalDropped, 0);
  assert.deepEqual(s.of('Error'), []);
  assert.deepEqual(s.backlog, [true, false], 'and resumed once the decoder caught up');
});

test('large frames behind a packet on a thread pause reading at queueBytes, long before BACKLOG_PAUSE frames', async (t) => {
  const { decoders } = pool(t, { threads: 1 });
  const s = await session(t, decoders.create());
  const big = 'x'.repeat(40 * 1024);
  s.pipe.push(audio(0));
  // Each text counts 80 KiB (UTF-16): the fourth passes the 256 KiB of the session's budget.
  const pausedAt: number[] = [];
  for (let i = 1; i <= 6; i++) {
    s.pipe.push(text(`${i}${big}`));
    if (s.backlog.length > 0 && pausedAt.length === 0) pausedAt.push(i);
  }
  assert.deepEqual(pausedAt, [4], 'paused at the frame that passed 256 KiB');
  assert.deepEqual(s.backlog, [true]);
  await waitUntil(() => s.of('TextResponse').length === 6, 'the six texts, after the packet ahead of them');
  assert.deepEqual(s.backlog, [true, false], 'and resumed once they went out');
  assert.equal(s.of('AudioResponse').length, 1);
  assert.equal(s.pipe.drops.totalDropped, 0);
});

test('a session holds at most inFlightFrames frames behind its packets on a thread; more are dropped and counted', async (t) => {
  const { decoders } = pool(t, { threads: 1 });
  const s = await session(t, decoders.create(), 8);
  for (let i = 0; i < 20; i++) s.pipe.push(audio(i));
  s.pipe.push(text('late'));
  assert.equal(s.pipe.drops.total.queue, 13);
  await waitUntil(() => s.of('AudioResponse').length === 8, 'the eight that fit');
  assert.match(String(s.of('Error')[0]), /^upstream audio dropped: the decoder is behind \(8 frames, \d+ bytes waiting for it\)$/);
  assert.deepEqual(s.of('TextResponse'), []);
});

test('a thread that fails is replaced: its packets are counted lost, one Error, and the session decodes again', async (t) => {
  const { decoders, lines, started } = pool(t, { threads: 1 });
  const s = await session(t, decoders.create());
  s.pipe.push(audio(0));
  await waitUntil(() => s.of('AudioResponse').length === 1, 'the first packet');
  for (let i = 1; i <= 5; i++) s.pipe.push(audio(i));
  // A message the thread cannot handle throws inside it, as a bug there would: the thread dies.
  started[0]!.postMessage({ jobs: null });
  await waitUntil(() => s.pipe.drops.total.thread + s.of('AudioResponse').length === 6, 'the five packets answered or lost');
  await waitUntil(() => decoders.stats.threadFailures === 1, 'the failure counted');
  assert.equal(started.length, 1, 'a new thread starts with the next packet, not before');
  assert.ok(lines.some((l) => /Opus decoder thread 1 failed: TypeError/.test(l)), lines.join('\n'));
  assert.ok(lines.some((l) => l.includes('Opus decoder thread 1 stopped with exit code 1; a new one starts with the next packet for it (its 1 sessions rebuild their decoders)')));
  const lost = s.pipe.drops.total.thread;
  assert.ok(lost >= 1, 'packets the thread held were lost');
  assert.deepEqual(s.of('Error'), ['upstream audio lost: the decoder thread stopped (exit code 1)']);
  // The next packet finds the decoder gone with the thread, rebuilds it on the new one and is decoded.
  s.pipe.push(audio(6));
  await waitUntil(() => s.of('AudioResponse').length === 6 - lost + 1, 'a packet after the failure');
  assert.equal(s.pipe.stats.decoderRebuilds, 1);
  assert.equal(started.length, 2, 'a new thread was started');
});

test('a thread that cannot start fails its jobs as lost and is tried again with the next packet: no exception, no restart loop', async (t) => {
  // How the next thread starts: as usual, refused as Node refuses a thread past the process' limit, or dying at once.
  let mode: 'start' | 'EAGAIN' | 'die' = 'EAGAIN';
  const { decoders, lines, started } = pool(t, {
    threads: 1,
    startThread: () => {
      if (mode === 'EAGAIN') throw Object.assign(new Error('EAGAIN'), { code: 'EAGAIN' });
      const worker = mode === 'die' ? new Worker('throw new Error("cannot start")', { eval: true }) : startDecodeThread();
      started.push(worker);
      return worker;
    },
  });
  // At the first session the decoder cannot be made: a 503 for its start (it was a 500, an unhandled error).
  await assert.rejects(decoders.create().reconfigure(16000, 1), {
    name: 'DomainError', code: 'unavailable', message: 'Opus decoder could not be initialised: the decoder thread could not be started (EAGAIN)',
  });
  assert.deepEqual(lines, ['fail: App: Opus decoder thread 1 could not be started: EAGAIN']);
  mode = 'start';
  const s = await session(t, decoders.create());
  s.pipe.push(audio(0));
  await waitUntil(() => s.of('AudioResponse').length === 1, 'the first packet');
  // The thread dies and its replacement cannot start: before, that exception escaped the exit event and ended the process.
  mode = 'EAGAIN';
  started.at(-1)!.postMessage({ jobs: null });
  await waitUntil(() => decoders.stats.threadFailures === 1, 'the thread died');
  s.pipe.push(audio(1));
  await waitUntil(() => s.pipe.drops.totalDropped === 1, 'the packet dropped');
  assert.deepEqual(s.of('Error'), ['upstream audio could not be decoded: Opus decoder could not be initialised: the decoder thread could not be started (EAGAIN)']);
  // A thread that dies as it starts is started again for work only: it used to be restarted at once, again and
  // again (about 40 times and 80 log lines a second here), for as long as the service ran.
  mode = 'die';
  s.pipe.push(audio(2));
  await waitUntil(() => decoders.stats.threadFailures === 2, 'the new thread died');
  await new Promise((resolve) => setTimeout(resolve, 500));
  assert.equal(started.length, 2, 'one thread for the session, one for its packet');
  assert.equal(decoders.stats.threadFailures, 2);
  mode = 'start';
  s.pipe.push(audio(3));
  await waitUntil(() => s.of('AudioResponse').length === 2, 'a packet once threads start again');
  assert.equal(s.pipe.drops.totalDropped, 2);
});

/** The packets that make the wasm libopus trap, for a session at 48 kHz stereo. */
const trapFrames = (): UpstreamMessage[] => wasmTrapPackets().map((packet) => ({ kind: 'audio', data: packet.toString('base64'), packet }));
const STEREO_48K = { sampleRate: 48000, channels: 2 };
const TRAP_ERROR = 'upstream audio could not be decoded: the wasm Opus decoder failed (its stack overflowed); its decoders are rebuilt';

test('a packet that makes the wasm decoder trap on a thread: the thread makes every decoder anew, nothing of the others is lost', async (t) => {
  const { decoders, started } = pool(t, { threads: 1 });
  const victim = await session(t, decoders.create());
  const hostile = await session(t, decoders.create(), 2048, STEREO_48K);
  victim.pipe.push(audio(0));
  await waitUntil(() => victim.of('AudioResponse').length === 1, 'the first packet');
  // One batch: the victim's packets wait on the thread behind the one that traps.
  for (const frame of trapFrames()) hostile.pipe.push(frame);
  for (let i = 1; i <= 5; i++) victim.pipe.push(audio(i));
  await waitUntil(() => victim.of('AudioResponse').length === 6, 'every packet of the victim');
  assert.deepEqual(victim.of('Error'), []);
  assert.deepEqual(hostile.of('Error'), [TRAP_ERROR]);
  assert.equal(hostile.of('AudioResponse').length, 2, 'the packets before and after it were decoded');
  assert.ok(hostile.lines.some((l) => l.includes(`session s: ${TRAP_ERROR}; further drops are counted`)), hostile.lines.join('\n'));
  // Its PCM from packet 1 on is a fresh decoder's (its state went with the instance), and its own.
  const fresh = await session(t, pool(t, { threads: 0 }).decoders.create());
  for (let i = 1; i <= 5; i++) fresh.pipe.push(audio(i));
  assert.deepEqual(victim.of('AudioResponse').slice(1), fresh.of('AudioResponse'));
  // Before, the thread's one wasm instance stayed broken: every packet of every session on it failed with
  // that error, and so did every session opened on it afterwards.
  const late = await session(t, decoders.create());
  late.pipe.push(audio(0));
  hostile.pipe.push(trapFrames()[0]!);
  await waitUntil(() => late.of('AudioResponse').length === 1 && hostile.of('AudioResponse').length === 3, 'a new session and the hostile one decode');
  assert.equal(started.length, 1, 'the thread went on');
  assert.equal(decoders.stats.threadFailures, 0);
});

test('inline (threads = 0), a trap rebuilds every session\'s decoder before its next packet: nothing of theirs is lost', async (t) => {
  const { decoders } = pool(t, { threads: 0 });
  const victim = await session(t, decoders.create());
  const hostile = await session(t, decoders.create(), 2048, STEREO_48K);
  victim.pipe.push(audio(0));
  for (const frame of trapFrames()) hostile.pipe.push(frame);
  assert.deepEqual(hostile.of('Error'), [TRAP_ERROR]);
  for (let i = 1; i <= 5; i++) victim.pipe.push(audio(i));
  await waitUntil(() => victim.of('AudioResponse').length === 6, 'every packet of the victim');
  assert.deepEqual(victim.of('Error'), []);
  assert.equal(victim.pipe.stats.decoderRebuilds, 1);
  const late = await session(t, decoders.create());
  late.pipe.push(audio(0));
  assert.equal(late.of('AudioResponse').length, 1, 'a session opened afterwards decodes');
});

test('close() stops the threads; what they held is lost, nothing new is accepted', async (t) => {
  const { decoders, started } = pool(t, { threads: 2 });
  const a = await session(t, decoders.create());
  const exits = started.map((w) => new Promise<number>((resolve) => w.once('exit', resolve)));
  for (let i = 0; i < 5; i++) a.pipe.push(audio(i));
  await decoders.close();
  assert.deepEqual(await Promise.all(exits), started.map(() => 1));
  assert.equal(a.pipe.drops.total.thread, 5);
  assert.throws(() => decoders.create(), { message: 'the Opus decoders have been shut down' });
  await decoders.close(); // idempotent
});

test('threads = 0 decodes on the event loop: the events go out within push()', async (t) => {
  const { decoders, started } = pool(t, { threads: 0 });
  const s = await session(t, decoders.create());
  s.pipe.push(audio(0));
  s.pipe.push(text('x'));
  assert.deepEqual(s.events.map((e) => e.target), ['AudioResponse', 'AudioData', 'TextResponse']);
  assert.equal(started.length, 0);
});

test('DecoderThreads -1 is one thread per core beyond the first; other values are taken as they are', () => {
  assert.deepEqual([1, 2, 4, 8].map((cores) => decoderThreads(-1, cores)), [0, 1, 3, 7]);
  assert.deepEqual([0, 1, 3].map((n) => decoderThreads(n, 4)), [0, 1, 3]);
});

test('no thread starts before the first session, and an unused pool closes at once', async (t) => {
  const { decoders, started } = pool(t, { threads: 2 });
  assert.equal(started.length, 0);
  await decoders.close();
});
