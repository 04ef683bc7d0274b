// Many sessions' decoder states in one libopus wasm instance per decoding context (opus-wasm.ts): each
// session decodes exactly as it would alone in an instance of its own (opus-decoder's OpusDecoder, the
// way every session used to decode), states are freed whole, an instance that is full hands the next
// session to another, 300 sessions share one decoder thread, and an instance that traps is left for a
// new one without taking the other sessions' decoding, or the next session's start, with it.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { OpusDecoder } from 'opus-decoder';
import { SessionOpusDecoder } from '../../src/voice/opus/decoder.js';
import { DecoderPool } from '../../src/voice/opus/decoder-pool.js';
import { startDecodeThread } from '../../src/voice/opus/decode-thread.js';
import { OpusInstance, opusInstanceCount, OpusTrapError, statesPerInstance } from '../../src/voice/opus/opus-wasm.js';
import { newSoftClipMemory, toInt16Pcm } from '../../src/voice/opus/pcm.js';
import { recordingLogger, speechPackets, synthPackets, wasmTrapPackets } from './helpers.js';
import { waitUntil } from '../support/wait.js';

type Format = readonly [rate: 8000 | 16000 | 24000 | 48000, channels: 1 | 2];

/** The packets decoded in a wasm instance of their own, with the same int16 conversion. */
async function alone(packets: readonly Buffer[], [rate, channels]: Format): Promise<Buffer[]> {
  const own = new OpusDecoder({ sampleRate: rate, channels });
  await own.ready;
  const clip = newSoftClipMemory();
  const out = packets.map((p) => {
    const { channelData, samplesDecoded } = own.decodeFrame(p);
    return Buffer.from(toInt16Pcm(channelData, samplesDecoded, clip));
  });
  own.free();
  return out;
}

async function opened([rate, channels]: Format): Promise<SessionOpusDecoder> {
  const decoder = new SessionOpusDecoder();
  await decoder.reconfigure(rate, channels);
  return decoder;
}

test('sessions interleaved in one instance decode exactly as each alone, whatever was opened and closed before', async () => {
  // Stereo and mono states created, used and freed first: what they leave in the instance must not
  // reach the sessions below (a stereo state once left the shared channel mapping at [0, 0]).
  for (const format of [[48000, 2], [16000, 1], [24000, 2]] as const) {
    const d = await opened(format);
    d.decode(synthPackets(format[0], format[1], 1, 'sine-noise')[0]!);
    d.free();
  }
  const streams = [
    { format: [48000, 2] as const, packets: synthPackets(48000, 2, 60, 'sine-noise') },
    { format: [16000, 1] as const, packets: speechPackets().slice(0, 60) },
    { format: [48000, 2] as const, packets: synthPackets(48000, 2, 60, 'sine-noise').reverse() },
    { format: [8000, 1] as const, packets: synthPackets(8000, 1, 60, 'sine-noise') },
  ];
  const decoders = await Promise.all(streams.map((s) => opened(s.format)));
  const got: Buffer[][] = streams.map(() => []);
  for (let i = 0; i < 60; i++) {
    streams.forEach((s, k) => got[k]!.push(Buffer.from(decoders[k]!.decode(s.packets[i]!))));
  }
  for (const [k, s] of streams.entries()) {
    const expected = await alone(s.packets, s.format);
    assert.equal(got[k]!.length, expected.length);
    got[k]!.forEach((pcm, i) => assert.ok(pcm.equals(expected[i]!), `session ${k} (${s.format.join(' Hz x ')}) packet ${i}`));
  }
  decoders.forEach((d) => d.free());
  assert.equal(opusInstanceCount(), 1);
});

test('a freed state gives back all its memory: 3,000 sessions opened and closed, then a full instance still fits', async () => {
  // 3,000 states of 18-27 KiB are far more than one instance's fixed 28 MiB could hold if any part of
  // them leaked (the per-state scratch buffer once did: the destroy export leaves it allocated).
  for (let i = 0; i < 3000; i++) (await opened(i % 2 ? [48000, 2] : [16000, 1])).free();
  const held = await Promise.all(Array.from({ length: statesPerInstance(2) }, () => opened([48000, 2])));
  assert.equal(opusInstanceCount(), 1);
  const [packet] = synthPackets(48000, 2, 1, 'sine-noise');
  const [expected] = await alone([packet!], [48000, 2]);
  assert.ok(held.at(-1)!.decode(packet!).equals(expected!));
  held.forEach((d) => d.free());
});

test('a full instance hands the next sessions to another, dropped again once it holds none', async () => {
  const perInstance = statesPerInstance(2);
  const count = perInstance + 40;
  const held = await Promise.all(Array.from({ length: count }, () => opened([48000, 2])));
  assert.equal(opusInstanceCount(), 2);
  const packets = synthPackets(48000, 2, 3, 'sine-noise');
  const expected = await alone(packets, [48000, 2]);
  for (const d of [held[0]!, held[perInstance - 1]!, held[perInstance]!, held.at(-1)!]) {
    packets.forEach((p, i) => assert.ok(d.decode(p).equals(expected[i]!), `packet ${i}`));
  }
  held.slice(perInstance).forEach((d) => d.free());
  assert.equal(opusInstanceCount(), 1);
  held.slice(0, perInstance).forEach((d) => d.free());
  assert.equal(opusInstanceCount(), 1, 'the first instance stays for the life of the context');
});

test('300 sessions on one decoder thread each decode their packets in order, as alone', async (t) => {
  const { logger, lines } = recordingLogger();
  const pool = new DecoderPool({ threads: 1, queuePerThread: 32768, logger, startThread: startDecodeThread });
  t.after(() => pool.close());
  const sessions = 300;
  assert.ok(statesPerInstance(1) >= sessions, 'one instance holds them all');
  const perSession = 5;
  const packets = speechPackets();
  const decoders = Array.from({ length: sessions }, () => pool.create());
  await Promise.all(decoders.map((d) => d.reconfigure(16000, 1)));
  // Session k starts at packet k % 20, so neighbours on the thread decode different audio at once.
  const expected = await Promise.all(Array.from({ length: 20 }, (_, k) => alone(packets.slice(k, k + perSession), [16000, 1])));
  const got: Buffer[][] = decoders.map(() => []);
  for (let i = 0; i < perSession; i++) {
    decoders.forEach((d, k) => assert.ok(d.decode(packets[(k % 20) + i]!, (error, pcm) => {
      assert.equal(error, undefined);
      got[k]!.push(Buffer.from(pcm!));
    })));
  }
  await waitUntil(() => got.every((g) => g.length === perSession), 'every session decoded', 30_000);
  got.forEach((g, k) => g.forEach((pcm, i) => assert.ok(pcm.equals(expected[k % 20]![i]!), `session ${k} packet ${i}`)));
  decoders.forEach((d) => d.free());
  assert.deepEqual(lines, []);
});

test('a packet that overflows the wasm stack breaks only its instance: every session rebuilds on a new one and decodes as alone', async () => {
  const speech = speechPackets().slice(0, 5);
  const expected = await alone(speech, [16000, 1]);
  const victim = await opened([16000, 1]);
  assert.ok(victim.decode(speech[0]!).equals(expected[0]!));
  const hostile = await opened([48000, 2]);
  const [a, b] = wasmTrapPackets();
  hostile.decode(a!);
  // The second runs the stack past its end, over libopus' tables: it used to return, and the next
  // decode of any session in the instance trapped (or failed, or decoded with corrupt tables).
  assert.throws(() => hostile.decode(b!), (e: unknown) => {
    assert.ok(e instanceof OpusTrapError);
    assert.equal(e.code, 'unavailable');
    assert.equal(e.message, 'the wasm Opus decoder failed (its stack overflowed); its decoders are rebuilt');
    return true;
  });
  // The instance is gone: its sessions' states with it, which they say, and nothing calls into it again.
  assert.equal(opusInstanceCount(), 0);
  for (const d of [hostile, victim]) {
    assert.equal(d.state, 'Unconfigured');
    assert.equal(d.matches(d === hostile ? 48000 : 16000, d === hostile ? 2 : 1), false);
  }
  assert.throws(() => victim.decode(speech[1]!), { message: 'Opus decoder is not ready (Unconfigured)' });
  // A new session opens (on a new instance), and the victim rebuilds there and decodes as a fresh decoder would.
  const next = await opened([16000, 1]);
  assert.equal(opusInstanceCount(), 1);
  await victim.reconfigure(16000, 1);
  assert.equal(victim.state, 'Ready');
  speech.forEach((p, i) => {
    assert.ok(next.decode(p).equals(expected[i]!), `the new session, packet ${i}`);
    assert.ok(victim.decode(p).equals(expected[i]!), `the rebuilt session, packet ${i}`);
  });
  await hostile.reconfigure(48000, 2);
  hostile.decode(a!);
  for (const d of [hostile, victim, next]) d.free();
  assert.equal(opusInstanceCount(), 1);
});

test('a trap while a state is freed breaks its instance but does not fail the free: a session ending goes on', () => {
  // A stand-in for the wasm exports whose destroy traps, as a broken instance's every call does.
  const heap = new ArrayBuffer(1 << 20);
  let next = 96 * 1024;
  const instance = new OpusInstance({
    HEAP: heap,
    malloc: (bytes: number) => { const ptr = next; next += (bytes + 15) & ~7; return ptr; },
    free: () => {},
    opus_frame_decoder_create: (_rate: number, channels: number) => {
      const ptr = next;
      next += 64;
      new Int32Array(heap, ptr, 8).set([0, channels, 0, 0, 0, 16]);
      return ptr;
    },
    opus_frame_decode_float_deinterleaved: () => 0,
    opus_frame_decoder_destroy: () => { throw new RangeError('memory access out of bounds'); },
  } as unknown as ConstructorParameters<typeof OpusInstance>[0]);
  const ptr = instance.create(16000, 1);
  assert.notEqual(ptr, 0);
  instance.destroy(ptr);
  assert.equal(instance.broken, true);
  assert.equal(instance.states, 0);
  assert.equal(instance.hasRoom(1), false, 'nothing is created in it again');
});
