import { OpusDecoder } from 'opus-decoder';
import { synthPackets, referenceDecode, comparePcm, speechPackets } from './test/voice/helpers.js';
import { SessionOpusDecoder } from './src/voice/opus/decoder.js';
const scenario = process.argv[2];
const packets = synthPackets(48000, 2, 100, 'sine-noise');
const refs = referenceDecode(packets, 48000, 2);
const [sp] = speechPackets();
for (const [rate, ch] of scenario === 'a' ? [[16000, 1], [8000, 1], [48000, 2], [24000, 2]] : scenario === 'b' ? [[24000, 2]] : scenario === 'c' ? [[48000, 2]] : scenario === 'd' ? [[16000,1]] : []) {
  const d = new SessionOpusDecoder(); await d.reconfigure(rate!, ch!); if (process.argv[3] !== 'nodecode') d.decode(sp!); d.free();
}
const ours = new SessionOpusDecoder(); await ours.reconfigure(48000, 2);
const outs = packets.map((p) => ours.decode(p));
let bad = 0; outs.forEach((o, k) => { const c = comparePcm(refs[k]!, o); if (c.maxDiff > 8) bad++; });
console.log(scenario, process.argv[3] ?? '', 'bad packets', bad);
