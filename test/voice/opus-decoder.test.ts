// SessionOpusDecoder: the opus-decoder traps, and PCM equal to native libopus' own int16 output.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';
import { DomainError } from '../../src/errors.js';
import { SessionOpusDecoder } from '../../src/voice/opus/decoder.js';
import { comparePcm, referenceDecode, speechPackets, synthPackets } from './helpers.js';

const isCode = (code: string, text?: RegExp) => (e: unknown): boolean =>
  e instanceof DomainError && e.code === code && (!text || text.test(e.message));

async function decoderAt(rate: number, channels: number): Promise<SessionOpusDecoder> {
  const decoder = new SessionOpusDecoder();
  await decoder.reconfigure(rate, channels);
  return decoder;
}

/** A packet that passes the TOC checks but that libopus rejects: CBR code 3, 2 frames, 3 bytes left. */
const CORRUPT = Uint8Array.from([0xfb, 0x02, 1, 2, 3]);

test('decodes at the configured rate and channels, not opus-decoder\'s 48 kHz stereo default', async () => {
  const [packet] = speechPackets();
  for (const [rate, channels] of [[16000, 1], [8000, 1], [48000, 2], [24000, 2]] as const) {
    const decoder = await decoderAt(rate, channels);
    const pcm = decoder.decode(packet!);
    assert.equal(pcm.length, (rate / 50) * channels * 2, `${rate} Hz x ${channels}`);
    decoder.free();
  }
});

test('an empty packet is refused instead of concealing 120 ms', async () => {
  const decoder = await decoderAt(16000, 1);
  assert.throws(() => decoder.decode(new Uint8Array(0)), isCode('invalid_argument', /empty Opus packet/));
  decoder.free();
});

test('packets over 3,840 bytes per channel are refused before decoding', async () => {
  const mono = await decoderAt(16000, 1);
  assert.throws(() => mono.decode(new Uint8Array(3841).fill(0xf8)), isCode('invalid_argument', /3841 bytes exceeds 3840/));
  const stereo = await decoderAt(16000, 2);
  assert.throws(() => stereo.decode(new Uint8Array(7681).fill(0xf8)), isCode('invalid_argument', /exceeds 7680/));
  mono.free();
  stereo.free();
});

test('a corrupt packet is a DomainError and the decoder keeps working', async () => {
  const decoder = await decoderAt(16000, 1);
  assert.throws(() => decoder.decode(CORRUPT), isCode('invalid_argument', /^corrupt Opus packet: libopus -4 OPUS_INVALID_PACKET/));
  assert.equal(decoder.decode(speechPackets()[0]!).length, 640);
  decoder.free();
});

test('a corrupt packet writes nothing to stderr', () => {
  const child = fileURLToPath(new URL('./decode-corrupt-child.ts', import.meta.url));
  const run = spawnSync(process.execPath, ['--import', 'tsx', child], { encoding: 'utf8', timeout: 30_000 });
  assert.equal(run.status, 0, run.stderr);
  assert.equal(run.stdout.match(/corrupt Opus packet: libopus -4/g)?.length, 2, run.stdout);
  assert.equal(run.stderr, '');
});

test('never used after free(); free() is idempotent', async () => {
  const decoder = await decoderAt(16000, 1);
  decoder.free();
  decoder.free();
  assert.equal(decoder.state, 'Freed');
  assert.throws(() => decoder.decode(speechPackets()[0]!), isCode('unavailable', /not ready \(Freed\)/));
  await assert.rejects(decoder.reconfigure(16000, 1), isCode('unavailable', /freed/));
});

test('free() during initialisation leaves nothing usable behind', async () => {
  const decoder = new SessionOpusDecoder();
  const pending = decoder.reconfigure(16000, 1);
  decoder.free();
  await pending;
  assert.equal(decoder.state, 'Freed');
  assert.throws(() => decoder.decode(speechPackets()[0]!), isCode('unavailable'));
});

test('reconfigure switches rate and channels; unsupported formats are refused', async () => {
  const decoder = await decoderAt(16000, 1);
  const packet = speechPackets()[5]!;
  assert.equal(decoder.decode(packet).length, 320 * 2);
  await decoder.reconfigure(48000, 2);
  assert.ok(decoder.matches(48000, 2));
  assert.equal(decoder.decode(packet).length, 960 * 2 * 2);
  await assert.rejects(decoder.reconfigure(44100, 1), isCode('invalid_argument', /sample rate 44100/));
  await assert.rejects(decoder.reconfigure(16000, 3), isCode('invalid_argument', /channel count 3/));
  assert.ok(decoder.matches(48000, 2), 'a refused reconfigure keeps the working decoder');
  decoder.free();
});

test('decoding before configuration is refused', () => {
  assert.throws(() => new SessionOpusDecoder().decode(CORRUPT), isCode('unavailable', /Unconfigured/));
});

// Equality with native libopus (@evan/opus calls opus_decode, which soft-clips and converts to int16).
async function compareWithNative(packets: Buffer[], rate: 16000 | 48000, channels: 1 | 2) {
  const reference = Buffer.concat(referenceDecode(packets, rate, channels));
  const decoder = await decoderAt(rate, channels);
  const ours = Buffer.concat(packets.map((p) => decoder.decode(p)));
  decoder.free();
  return comparePcm(reference, ours);
}

test('real speech at 16 kHz mono is sample-exact with native libopus', async () => {
  const result = await compareWithNative(speechPackets(), 16000, 1);
  assert.equal(result.samples, 100 * 320);
  assert.equal(result.differing, 0, JSON.stringify(result));
});

test('synthetic tone and noise at 16 kHz mono is sample-exact with native libopus', async () => {
  const result = await compareWithNative(synthPackets(16000, 1, 100, 'sine-noise'), 16000, 1);
  assert.equal(result.samples, 100 * 320);
  assert.equal(result.differing, 0, JSON.stringify(result));
});

// At 48 kHz stereo the wasm build (a newer libopus) and the native one (1.3.1) differ by a few LSB in
// their float output itself (pcm.test.ts shows the conversion is exact); measured SNR is about 80 dB.
test('synthetic tone and noise at 48 kHz stereo is within 70 dB SNR of native libopus', async () => {
  const result = await compareWithNative(synthPackets(48000, 2, 100, 'sine-noise'), 48000, 2);
  assert.equal(result.samples, 100 * 960 * 2);
  assert.ok(result.snrDb >= 70, JSON.stringify(result));
  assert.ok(result.maxDiff <= 8, JSON.stringify(result));
});
