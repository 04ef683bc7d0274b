// 7. Opus: the service's return-path work per packet (src/voice: decode, int16 PCM, Base64 for
// AudioResponse) as a realtime factor, both ways it decodes: the system libopus through our addon (the
// default, VoiceService.OpusLibrary) and the bundled wasm libopus (the fallback: decode, libopus' soft
// clip and int16 conversion in JS), against native libopus called directly (@evan/opus, opus_decode) on
// the same packets in the same run. Rounds alternate between them so that machine noise hits all; CPU
// time of this process is what is compared.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Decoder } from '@evan/opus';
import type { AudioDecoder } from '../../src/voice/opus/decoder-pool.js';
import { InlineNativeDecoder, InlineWasmDecoder } from '../../src/voice/opus/inline-decoders.js';
import { loadNativeOpus } from '../../src/voice/opus/native-opus.js';
import type { Section } from '../lib/context.js';
import { ROOT } from '../lib/proc.js';
import { percentile, type Row } from '../lib/report.js';

const TARGET_RATIO = 1.5;
const PACKET_MS = 20;

function cpuMs(fn: () => void): number {
  const t0 = process.cpuUsage();
  fn();
  const d = process.cpuUsage(t0);
  return (d.user + d.system) / 1000;
}

/** The PCM of one packet through an inline AudioDecoder (it answers within decode()). */
function decodeNow(decoder: AudioDecoder, packet: Uint8Array): Buffer {
  let out: Buffer | undefined;
  decoder.decode(packet, (error, pcm) => {
    if (error) throw error;
    out = pcm;
  });
  return out!;
}

export const opusSection: Section = {
  id: 'opus',
  number: '7',
  title: 'Opus decode path vs native libopus',
  async run(ctx) {
    const packets = (JSON.parse(readFileSync(path.join(ROOT, 'test/fixtures/speech-16k-mono.packets.json'), 'utf8')) as string[])
      .map((p) => Buffer.from(p, 'base64'));
    const addon = loadNativeOpus('libopus.so.0', path.join(ROOT, 'dist'));
    if (addon instanceof Error) throw new Error(`the native Opus path is not available (node build.mjs, libopus0): ${addon.message}`);
    const paths = { addon: () => new InlineNativeDecoder(addon), wasm: () => new InlineWasmDecoder() };
    const decoders: Record<keyof typeof paths, AudioDecoder> = { addon: paths.addon(), wasm: paths.wasm() };
    for (const d of Object.values(decoders)) await d.reconfigure(16000, 1);
    const native = new Decoder({ channels: 1, sample_rate: 16000 });

    // Same output first: the comparison is only fair if all produce the same PCM.
    const differing = { addon: 0, wasm: 0 };
    const check = new Decoder({ channels: 1, sample_rate: 16000 });
    const fresh = { addon: paths.addon(), wasm: paths.wasm() };
    for (const d of Object.values(fresh)) await d.reconfigure(16000, 1);
    for (const p of packets) {
      const want = Buffer.from(check.decode(p));
      for (const k of ['addon', 'wasm'] as const) {
        const got = decodeNow(fresh[k], p);
        for (let i = 0; i < want.length; i += 2) if (got.length !== want.length || got.readInt16LE(i) !== want.readInt16LE(i)) differing[k]++;
      }
    }
    for (const d of Object.values(fresh)) d.free();

    const repeat = 20; // 100 packets x 20 = 40 s of audio per round
    const rounds = ctx.quick ? 8 : 30;
    const timings = { addon: [] as number[], wasm: [] as number[], native: [] as number[], nativeBase64: [] as number[] };
    let sink = 0;
    for (let r = 0; r < rounds; r++) {
      for (const k of ['addon', 'wasm'] as const) {
        const d = decoders[k];
        timings[k].push(cpuMs(() => {
          for (let n = 0; n < repeat; n++) for (const p of packets) sink += decodeNow(d, p).toString('base64').length;
        }));
      }
      timings.native.push(cpuMs(() => {
        for (let k = 0; k < repeat; k++) for (const p of packets) sink += native.decode(p).length;
      }));
      timings.nativeBase64.push(cpuMs(() => {
        for (let k = 0; k < repeat; k++) for (const p of packets) {
          const pcm = native.decode(p);
          sink += Buffer.from(pcm.buffer, pcm.byteOffset, pcm.byteLength).toString('base64').length;
        }
      }));
    }
    for (const d of Object.values(decoders)) d.free();
    if (sink === 0) throw new Error('nothing decoded');
    // The first rounds include compiling; the median of the rest is what a long-running service sees.
    const steady = (xs: number[]): number => percentile(xs.slice(Math.floor(xs.length / 4)), 50);
    const audioMs = repeat * packets.length * PACKET_MS;
    const rtf = (ms: number): number => audioMs / ms;
    const nativeMs = steady(timings.native);
    const nativeB64Ms = steady(timings.nativeBase64);
    const perPacket = (ms: number): string => `${((ms * 1000) / (repeat * packets.length)).toFixed(1)} us/packet`;
    const row = (k: 'addon' | 'wasm', name: string): Row => {
      const ms = steady(timings[k]);
      return {
        section: '7', name, value: rtf(ms), unit: 'x realtime',
        baseline: { name: 'native libopus decode', value: rtf(nativeMs), unit: 'x realtime' },
        ratio: ms / nativeMs,
        target: { text: `time <= ${TARGET_RATIO}x native`, pass: ms / nativeMs <= TARGET_RATIO },
        detail: { timings: timings[k], native: timings.native, audioMs, differingSamples: differing[k] },
        note: `${perPacket(ms)}, native decode ${perPacket(nativeMs)}, native decode + Base64 ${perPacket(nativeB64Ms)} (this / that: ${(ms / nativeB64Ms).toFixed(2)}x); PCM identical to native: ${differing[k] === 0 ? 'yes' : `no, ${differing[k]} samples differ`}`,
      };
    };
    return [
      row('addon', `system ${addon.version} via our addon: decode + Base64 (realtime factor)`),
      row('wasm', 'bundled wasm libopus (fallback): decode + PCM + Base64'),
    ];
  },
};
