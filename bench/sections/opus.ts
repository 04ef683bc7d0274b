// 7. Opus: the service's return-path work per packet (src/voice: opus-decoder wasm decode, libopus'
// soft clip and int16 conversion, Base64 for AudioResponse) as a realtime factor, against native
// libopus (@evan/opus, opus_decode) on the same packets in the same run. Rounds alternate between the
// two so that machine noise hits both; CPU time of this process is what is compared.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Decoder } from '@evan/opus';
import { SessionOpusDecoder } from '../../src/voice/opus/decoder.js';
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

export const opusSection: Section = {
  id: 'opus',
  number: '7',
  title: 'Opus decode path vs native libopus',
  async run(ctx) {
    const packets = (JSON.parse(readFileSync(path.join(ROOT, 'test/fixtures/speech-16k-mono.packets.json'), 'utf8')) as string[])
      .map((p) => Buffer.from(p, 'base64'));
    const ours = new SessionOpusDecoder();
    await ours.reconfigure(16000, 1);
    const native = new Decoder({ channels: 1, sample_rate: 16000 });

    // Same output first: the comparison is only fair if both produce the same PCM.
    let differing = 0;
    const check = new Decoder({ channels: 1, sample_rate: 16000 });
    const fresh = new SessionOpusDecoder();
    await fresh.reconfigure(16000, 1);
    for (const p of packets) {
      const a = fresh.decode(p);
      const b = Buffer.from(check.decode(p));
      for (let i = 0; i < a.length; i += 2) if (a.readInt16LE(i) !== b.readInt16LE(i)) differing++;
    }
    fresh.free();

    const repeat = 20; // 100 packets x 20 = 40 s of audio per round
    const rounds = ctx.quick ? 8 : 30;
    const timings = { ours: [] as number[], native: [] as number[], nativeBase64: [] as number[] };
    let sink = 0;
    for (let r = 0; r < rounds; r++) {
      timings.ours.push(cpuMs(() => {
        for (let k = 0; k < repeat; k++) for (const p of packets) sink += ours.decode(p).toString('base64').length;
      }));
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
    ours.free();
    if (sink === 0) throw new Error('nothing decoded');
    // The first rounds include compiling; the median of the rest is what a long-running service sees.
    const steady = (xs: number[]): number => percentile(xs.slice(Math.floor(xs.length / 4)), 50);
    const audioMs = repeat * packets.length * PACKET_MS;
    const rtf = (ms: number): number => audioMs / ms;
    const oursMs = steady(timings.ours);
    const nativeMs = steady(timings.native);
    const nativeB64Ms = steady(timings.nativeBase64);
    const perPacket = (ms: number): string => `${((ms * 1000) / (repeat * packets.length)).toFixed(1)} us/packet`;
    const rows: Row[] = [
      {
        section: '7', name: 'src/voice decode + PCM + Base64 (realtime factor)', value: rtf(oursMs), unit: 'x realtime',
        baseline: { name: 'native libopus decode', value: rtf(nativeMs), unit: 'x realtime' },
        ratio: oursMs / nativeMs,
        target: { text: `time <= ${TARGET_RATIO}x native`, pass: oursMs / nativeMs <= TARGET_RATIO },
        detail: { timings, audioMs, differingSamples: differing },
        note: `ours ${perPacket(oursMs)}, native decode ${perPacket(nativeMs)}, native decode + Base64 ${perPacket(nativeB64Ms)} (ours / that: ${(oursMs / nativeB64Ms).toFixed(2)}x); PCM identical to native: ${differing === 0 ? 'yes' : `no, ${differing} samples differ`}`,
      },
    ];
    return rows;
  },
};
