// UpstreamInbound with the real Opus decoder: frames stay in order behind a decoder rebuild, the queue
// behind it is bounded in frames and bytes, rebuilds are rate-limited, and drops reach the group as one
// Error per burst while every one is counted.
import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import { hubEventOf } from '../../src/api/hub-session-bridge.js';
import { DecoderPool } from '../../src/voice/opus/decoder-pool.js';
import { BURST_QUIET_MS } from '../../src/voice/upstream-drops.js';
import { UpstreamInbound, type DecodeBudget } from '../../src/voice/upstream-inbound.js';
import type { UpstreamMessage } from '../../src/upstream/protocol.js';
import { recordingLogger, speechPackets } from './helpers.js';
import { waitUntil } from '../support/wait.js';

const packets = speechPackets();

async function inbound(t: TestContext, budget: Partial<DecodeBudget> = {}) {
  const { logger, lines } = recordingLogger();
  // Inline decoding: the decoder threads have their own tests (decoder-pool.test.ts).
  const decoder = new DecoderPool({ threads: 0, queuePerThread: 1, logger }).create();
  await decoder.reconfigure(16000, 1);
  const events: { target: string; payload: unknown }[] = [];
  const state = { active: true };
  const pipe = new UpstreamInbound({
    sessionId: 's1',
    decoder,
    format: { sampleRate: 16000, channels: 1 },
    budget: { queuePackets: 32, queueBytes: 1024 * 1024, rebuildsPerSecond: 4, inFlightFrames: 2048, ...budget },
    // Recorded as the hub sends them to the group: the bridge's mapping of each session event.
    emit: (event) => {
      const out = hubEventOf(event);
      if (out) events.push({ target: out.target, payload: out.payload });
    },
    isActive: () => state.active,
    logger,
  });
  t.after(() => { pipe.close(); decoder.free(); });
  const of = (target: string) => events.filter((e) => e.target === target).map((e) => e.payload);
  return { pipe, events, of, lines, state, decoder };
}

const audio = (i: number, sampleRate?: number, channels?: number): UpstreamMessage => {
  const packet = packets[i % packets.length]!;
  return { kind: 'audio', data: packet.toString('base64'), packet, ...(sampleRate ? { sampleRate } : {}), ...(channels ? { channels } : {}) };
};
const text = (t: string): UpstreamMessage => ({ kind: 'text', text: t, final: true });
const targets = (events: { target: string }[]) => events.map((e) => e.target);

test('audio in the session format is delivered at once; a format change keeps the order of what follows it', async (t) => {
  const { pipe, events, of } = await inbound(t);
  pipe.push(audio(0));
  assert.deepEqual(targets(events), ['AudioResponse', 'AudioData'], 'decoded synchronously');
  pipe.push(audio(1, 48000, 2)); // starts a rebuild
  pipe.push(text('after the change'));
  pipe.push(audio(2, 48000, 2));
  assert.equal(events.length, 2, 'the rest waits for the rebuild');
  await waitUntil(() => events.length === 7, 'the queued frames');
  assert.deepEqual(targets(events).slice(2), ['AudioResponse', 'AudioData', 'TextResponse', 'AudioResponse', 'AudioData']);
  assert.deepEqual(of('AudioData').map((d) => [(d as { sampleRate: number }).sampleRate, (d as { channels: number }).channels]), [[16000, 1], [48000, 2], [48000, 2]]);
  assert.equal(Buffer.from(String(of('AudioResponse')[1]), 'base64').length, 960 * 2 * 2);
  assert.equal(pipe.stats.decoderRebuilds, 1);
  assert.equal(pipe.drops.totalDropped, 0);
});

test('the queue behind a rebuild holds at most queuePackets frames; the rest are dropped, counted, one Error', async (t) => {
  const { pipe, events, of, lines } = await inbound(t, { queuePackets: 5 });
  pipe.push(audio(0, 48000, 1));
  for (let i = 1; i <= 20; i++) pipe.push(audio(i, 48000, 1));
  assert.equal(pipe.drops.total.queue, 15);
  await waitUntil(() => of('AudioResponse').length === 6, 'the rebuilt packet and the 5 queued ones');
  assert.deepEqual(of('AudioData').map((d) => (d as { data: string }).data), [0, 1, 2, 3, 4, 5].map((i) => packets[i]!.toString('base64')));
  assert.deepEqual(of('Error'), ['upstream audio dropped: the decode queue is full (5 frames, ' + `${[1, 2, 3, 4, 5].reduce((n, i) => n + packets[i]!.length + packets[i]!.toString('base64').length, 0)} bytes waiting for the decoder)`]);
  assert.equal(pipe.stats.queuePeak, 5);
  assert.equal(lines.filter((l) => l.includes('decode queue is full')).length, 1, 'logged once for the burst');
  assert.equal(events.filter((e) => e.target === 'Error').length, 1);
});

test('the queue is bounded in bytes too', async (t) => {
  const { pipe, of } = await inbound(t, { queueBytes: 1024 });
  pipe.push(audio(0, 24000, 1));
  for (let i = 0; i < 10; i++) pipe.push(text('x'.repeat(200))); // 400 bytes each as UTF-16
  assert.equal(pipe.drops.total.queue, 8);
  await waitUntil(() => of('TextResponse').length === 2, 'the two texts that fit');
  assert.match(String(of('Error')[0]), /^upstream text dropped: the decode queue is full \(2 frames, 800 bytes waiting/);
});

test('format changes beyond rebuildsPerSecond are dropped until the second has passed; one Error per burst', async (t) => {
  const { pipe, of, lines } = await inbound(t, { rebuildsPerSecond: 2 });
  const formats = [[48000, 2], [8000, 1], [24000, 2], [12000, 1]] as const;
  let sent = 0;
  // Each format in turn, waiting for each packet to be handled: only the rebuild budget can drop.
  for (let round = 0; round < 3; round++) {
    for (const [rate, channels] of formats) {
      const before = of('AudioResponse').length + pipe.drops.totalDropped;
      pipe.push(audio(sent++, rate, channels));
      await waitUntil(() => of('AudioResponse').length + pipe.drops.totalDropped > before, 'the packet handled');
    }
  }
  assert.equal(pipe.stats.decoderRebuilds, 2, 'two rebuilds within the first second');
  // Delivered: the two packets that rebuilt (48 kHz stereo, then 8 kHz mono) and the later 8 kHz mono ones.
  assert.equal(of('AudioResponse').length, 4);
  assert.equal(pipe.drops.total.format, sent - 4);
  assert.deepEqual(of('Error'), ['upstream audio dropped: its format changed more than 2 times within a second (now 24000 Hz, 2 channels)']);

  // A quiet spell ends the burst (logged with its totals); the next second allows rebuilds again.
  await waitUntil(() => lines.some((l) => l.includes('upstream drop burst over: 8 frames dropped')), 'the burst summary', BURST_QUIET_MS + 2000);
  pipe.push(audio(0, 16000, 1));
  await waitUntil(() => of('AudioResponse').length === 5, 'the packet after the quiet second');
  pipe.push(audio(1, 8000, 2));
  await waitUntil(() => of('AudioResponse').length === 6, 'a second change');
  pipe.push(audio(2, 48000, 1));
  assert.equal(pipe.drops.total.format, sent - 4 + 1);
  assert.equal(of('Error').length, 2, 'a new burst, a new Error');
});

test('corrupt upstream packets are counted drops: one Error per burst, not one per packet', async (t) => {
  const { pipe, of } = await inbound(t);
  const corrupt = Buffer.from([0xfb, 0x02, 1, 2, 3]);
  for (let i = 0; i < 50; i++) pipe.push({ kind: 'audio', data: corrupt.toString('base64'), packet: corrupt });
  pipe.push(audio(0));
  assert.equal(pipe.drops.total.corrupt, 50);
  assert.equal(of('AudioResponse').length, 1, 'the decoder keeps working');
  assert.equal(of('Error').length, 1);
  assert.match(String(of('Error')[0]), /^upstream audio could not be decoded: corrupt Opus packet: libopus -4/);
});

test('nothing is delivered once the session has ended; close() lets the queue go', async (t) => {
  const { pipe, events, state } = await inbound(t);
  pipe.push(audio(0, 48000, 2));
  pipe.push(audio(1, 48000, 2));
  state.active = false;
  pipe.close();
  await new Promise((r) => setTimeout(r, 100));
  assert.deepEqual(events, []);
  pipe.push(text('late'));
  assert.deepEqual(events, []);
});

test('a decoder rebuild that fails after the session ended reports nothing: no Error, no drop counted', async (t) => {
  const { pipe, events, state, decoder } = await inbound(t);
  let fail!: (e: Error) => void;
  // A rebuild cannot be made to fail from outside: its failure is what the decoder's set-up would throw.
  decoder.reconfigure = () => new Promise<void>((_resolve, reject) => (fail = reject));
  pipe.push(audio(0, 48000, 2));
  state.active = false;
  fail(new Error('decoder set-up failed'));
  await new Promise((resolve) => setImmediate(resolve));
  assert.deepEqual(targets(events), []);
  assert.equal(pipe.drops.totalDropped, 0);
});
