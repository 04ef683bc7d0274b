// The system libopus through our addon (src/native/opus-decode.c, as the build ships it in dist/native/):
// inline and on the addon's threads, its PCM against libopus' own opus_decode and the wasm decoder, bad
// packets and formats answered with the wasm decoder's errors, a library that is missing or is not
// libopus refused with the reason, and a pool that stops with packets on its threads.
import assert from 'node:assert/strict';
import path from 'node:path';
import { test } from 'node:test';
import { DecoderPool, type AudioDecoder } from '../../src/voice/opus/decoder-pool.js';
import { SessionOpusDecoder } from '../../src/voice/opus/decoder.js';
import { loadNativeOpus, type NativeOpus } from '../../src/voice/opus/native-opus.js';
import type { OpusSampleRate } from '../../src/opus-format.js';
import { BUNDLE } from '../support/service.js';
import { waitUntil } from '../support/wait.js';
import { comparePcm, recordingLogger, referenceDecode, speechPackets, synthPackets } from './helpers.js';

const BUNDLE_DIR = path.dirname(BUNDLE);

function native(): NativeOpus {
  const loaded = loadNativeOpus('libopus.so.0', BUNDLE_DIR);
  if (loaded instanceof Error) throw new Error(`the native Opus decoder did not load (libopus0 installed? node build.mjs run?): ${loaded.message}`);
  return loaded;
}

type Outcome = { pcm: Buffer } | { error: string; kind: string };

/** Every packet through `decoder`, each outcome in the order decode() was called; waits for all of them. */
async function decodeAll(decoder: AudioDecoder, packets: readonly Uint8Array[]): Promise<Outcome[]> {
  const out: Outcome[] = [];
  for (const p of packets) {
    const accepted = decoder.decode(p, (error, pcm) => out.push(error ? { error: error.message, kind: error.constructor.name } : { pcm: pcm! }));
    assert.ok(accepted, 'the packet was accepted');
  }
  await waitUntil(() => out.length === packets.length, 'every packet answered');
  return out;
}

function pools(t: import('node:test').TestContext) {
  const { logger } = recordingLogger();
  const inline = new DecoderPool({ threads: 0, queuePerThread: 512, logger, native: native() });
  const threads = new DecoderPool({ threads: 2, queuePerThread: 512, logger, native: native() });
  t.after(() => Promise.all([inline.close(), threads.close()]));
  return { inline, threads };
}

const FORMATS: [OpusSampleRate, 1 | 2][] = [[16000, 1], [48000, 2], [8000, 1], [24000, 2], [48000, 1]];

test('native decoding, inline and on threads, equals libopus opus_decode and the wasm decoder sample for sample', async (t) => {
  const { inline, threads } = pools(t);
  for (const [rate, channels] of FORMATS) {
    for (const shape of ['sine-noise', 'square'] as const) {
      const packets = rate === 16000 && channels === 1 && shape === 'square' ? speechPackets() : synthPackets(rate, channels, 40, shape);
      const reference = referenceDecode(packets, rate, channels);
      // A fresh wasm state for each sequence, as the reference has: soft clipping carries from packet to packet.
      const fresh = new SessionOpusDecoder();
      await fresh.reconfigure(rate, channels);
      const fromWasm = packets.map((p) => fresh.decode(p));
      fresh.free();
      for (const pool of [inline, threads]) {
        const decoder = pool.create();
        t.after(() => decoder.free());
        await decoder.reconfigure(rate, channels);
        const got = await decodeAll(decoder, packets);
        const label = `${rate} Hz x ${channels}, ${shape}, ${pool === inline ? 'inline' : 'threads'}`;
        assert.deepEqual(got.map((o) => ('pcm' in o ? o.pcm.toString('hex') : o.error)), reference.map((r) => r.toString('hex')), `${label}: as opus_decode`);
        // The bundled wasm build of libopus (another build, no SIMD) rounds some float arithmetic a little
        // differently: the same audio within a few steps of 32,768 (measured: at most 4, SNR 85 dB and
        // more), in stereo and in mono at 48 kHz (CELT); mono SILK (8 and 16 kHz here) comes out identical.
        const pcm = Buffer.concat(got.map((o) => ('pcm' in o ? o.pcm : Buffer.alloc(0))));
        const diff = comparePcm(Buffer.concat(fromWasm), pcm);
        if (channels === 1 && rate <= 16000) assert.equal(diff.differing, 0, `${label}: as the wasm decoder`);
        else assert.ok(diff.maxDiff <= 8 && diff.snrDb > 70, `${label}: near the wasm decoder (${JSON.stringify(diff)})`);
      }
    }
  }
});

test('every decoder answers bad packets with the same errors, in order with good ones', async (t) => {
  const { inline, threads } = pools(t);
  const { logger } = recordingLogger();
  // The wasm decoder on a worker thread: a refused packet is answered through the thread there too.
  const wasmThreads = new DecoderPool({ threads: 1, queuePerThread: 512, logger });
  t.after(() => wasmThreads.close());
  const good = speechPackets()[0]!;
  const bad = [
    new Uint8Array(0),
    new Uint8Array(3841),
    // TOC code 3 (a frame count follows) with no count byte: libopus' OPUS_INVALID_PACKET.
    Uint8Array.of(0x03),
  ];
  const want = [
    { error: 'empty Opus packet', kind: 'DomainError' },
    { error: 'Opus packet of 3841 bytes exceeds 3840 bytes', kind: 'DomainError' },
    { error: 'corrupt Opus packet: libopus -4 OPUS_INVALID_PACKET: The compressed data passed is corrupted', kind: 'DomainError' },
  ];
  const wasm = new SessionOpusDecoder();
  await wasm.reconfigure(16000, 1);
  t.after(() => wasm.free());
  for (const [i, packet] of bad.entries()) {
    assert.throws(() => wasm.decode(packet), { message: want[i]!.error }, 'the wasm decoder says the same');
  }
  for (const pool of [inline, threads, wasmThreads]) {
    const decoder = pool.create();
    t.after(() => decoder.free());
    await decoder.reconfigure(16000, 1);
    const got = await decodeAll(decoder, [good, ...bad, good]);
    const pcm = referenceDecode([good], 16000, 1)[0]!;
    assert.equal(got.length, 5);
    assert.deepEqual(got[0], { pcm });
    assert.deepEqual(got.slice(1, 4), want);
    assert.equal('pcm' in got[4]! && got[4].pcm.length, 640, 'a good packet after the bad ones decodes');
  }
});

test('native decoders: a format change rebuilds the state, a freed decoder refuses, slots are reused', async (t) => {
  const { inline, threads } = pools(t);
  for (const pool of [inline, threads]) {
    const decoder = pool.create();
    await decoder.reconfigure(16000, 1);
    const mono = synthPackets(48000, 1, 3, 'sine-noise');
    await decoder.reconfigure(48000, 1);
    assert.ok(decoder.matches(48000, 1));
    const got = await decodeAll(decoder, mono);
    assert.deepEqual(got, referenceDecode(mono, 48000, 1).map((pcm) => ({ pcm })));
    decoder.free();
    decoder.free();
    assert.equal(decoder.state, 'Freed');
    await assert.rejects(decoder.reconfigure(16000, 1), { message: 'Opus decoder has been freed' });
    const out: string[] = [];
    decoder.decode(mono[0]!, (e) => out.push(e!.message));
    assert.deepEqual(out, ['Opus decoder is not ready (Freed)']);
    // The next session takes the freed slot: its state is a fresh one, not the old session's.
    const next = pool.create();
    t.after(() => next.free());
    await next.reconfigure(48000, 1);
    assert.deepEqual(await decodeAll(next, mono), referenceDecode(mono, 48000, 1).map((pcm) => ({ pcm })));
  }
});

test('native threads: 12 sessions on 2 threads, interleaved, each in order; a full queue refuses', async (t) => {
  const { logger } = recordingLogger();
  const pool = new DecoderPool({ threads: 2, queuePerThread: 4, logger, native: native() });
  t.after(() => pool.close());
  const packets = speechPackets();
  const expected = referenceDecode(packets, 16000, 1);
  const decoders = await Promise.all(Array.from({ length: 12 }, async () => {
    const d = pool.create();
    await d.reconfigure(16000, 1);
    return d;
  }));
  assert.equal(pool.stats.threads, 2);
  const got = decoders.map(() => [] as Buffer[]);
  let refused = 0;
  for (let i = 0; i < packets.length; i++) {
    decoders.forEach((d, s) => {
      if (!d.decode(packets[i]!, (e, pcm) => { assert.equal(e, undefined); got[s]!.push(pcm!); })) refused++;
    });
    // One turn at a time: the threads answer before the next packets go, as at 50 packets/s.
    await waitUntil(() => got.reduce((n, g) => n + g.length, 0) + refused === (i + 1) * decoders.length, `packet ${i}`);
  }
  // Six sessions per thread, a queue of four: two of every six packets are refused, each turn.
  assert.equal(refused, packets.length * 4);
  assert.equal(pool.stats.refused, refused);
  for (const g of got) for (const pcm of g) assert.ok(expected.some((e) => e.equals(pcm)));
  const sequential = new DecoderPool({ threads: 2, queuePerThread: 512, logger, native: native() });
  t.after(() => sequential.close());
  const a = sequential.create();
  const b = sequential.create();
  await a.reconfigure(16000, 1);
  await b.reconfigure(16000, 1);
  const outA: Buffer[] = [];
  const outB: Buffer[] = [];
  for (const p of packets) {
    a.decode(p, (_e, pcm) => outA.push(pcm!));
    b.decode(p, (_e, pcm) => outB.push(pcm!));
  }
  await waitUntil(() => outA.length === packets.length && outB.length === packets.length, 'both sessions');
  assert.deepEqual(outA, expected);
  assert.deepEqual(outB, expected);
});

test('closing a native pool fails what its threads held as lost; nothing new is accepted', async () => {
  const { logger } = recordingLogger();
  const pool = new DecoderPool({ threads: 1, queuePerThread: 512, logger, native: native() });
  const d = pool.create();
  await d.reconfigure(16000, 1);
  const out: string[] = [];
  for (const p of speechPackets().slice(0, 5)) d.decode(p, (e) => out.push(e ? `${e.constructor.name}: ${e.message}` : 'pcm'));
  await pool.close();
  assert.deepEqual(out, Array(5).fill('DecoderThreadError: the Opus decoders have been shut down'));
  assert.throws(() => pool.create(), { message: 'the Opus decoders have been shut down' });
  await pool.close();
});

test('an addon thread that cannot be started fails its jobs as lost, logged; the next batch tries again', async () => {
  // What the addon throws when uv_thread_create fails (the process at its limit of threads): before, the
  // exception left the end of the turn it was flushed in, and the service ended on it at its first session.
  const real = native();
  let refuse = true;
  const addon = { ...real.addon, submit: (...args: Parameters<NativeOpus['addon']['submit']>) => {
    if (refuse) throw new Error('opus-decode: cannot start a decoder thread');
    real.addon.submit(...args);
  } };
  const { logger, lines } = recordingLogger();
  const pool = new DecoderPool({ threads: 1, queuePerThread: 512, logger, native: { ...real, addon } });
  const d = pool.create();
  await assert.rejects(d.reconfigure(16000, 1), {
    name: 'DomainError', code: 'unavailable',
    message: 'Opus decoder could not be initialised: the decoder thread could not be started (opus-decode: cannot start a decoder thread)',
  });
  assert.deepEqual(lines, ['fail: App: Opus decoder thread 1 could not be started: opus-decode: cannot start a decoder thread']);
  refuse = false;
  await d.reconfigure(16000, 1);
  const packets = speechPackets().slice(0, 3);
  assert.deepEqual(await decodeAll(d, packets), referenceDecode(packets, 16000, 1).map((pcm) => ({ pcm })));
  refuse = true;
  const out: string[] = [];
  d.decode(packets[0]!, (e) => out.push(`${e!.constructor.name}: ${e!.message}`));
  await waitUntil(() => out.length === 1, 'the packet answered');
  assert.deepEqual(out, ['DecoderThreadError: the decoder thread could not be started (opus-decode: cannot start a decoder thread)']);
  d.free();
  await pool.close();
});

test('once libopus is loaded, the process keeps it: another library is refused, naming the loaded one', () => {
  // A missing library and one that is not libopus: test/e2e/opus-library.test.ts, each in a process of its own.
  native();
  const other = loadNativeOpus('/nonexistent/libopus.so.0', BUNDLE_DIR);
  assert.ok(other instanceof Error);
  assert.equal(other.message, 'libopus is already loaded from libopus.so.0 in this process');
});

test('the engine says which libopus decodes and where', (t) => {
  const { inline, threads } = pools(t);
  assert.match(inline.engine, /^libopus 1\.\d+[.\d]* \(system library, inline on the event loop\)$/);
  assert.match(threads.engine, /^libopus 1\.\d+[.\d]* \(system library, on up to 2 decoder threads\)$/);
  const { logger } = recordingLogger();
  assert.equal(new DecoderPool({ threads: 1, queuePerThread: 1, logger }).engine, 'the bundled wasm libopus (on up to 1 decoder thread)');
});
