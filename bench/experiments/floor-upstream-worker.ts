// The worker thread of floor-threaded-server.ts: one `ws` upstream connection per session, the same frames
// as the floor's, each answer decoded with native libopus; a turn's answers go back in one message.
// Started through floor-upstream-worker.mjs, which registers tsx in this thread.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parentPort, workerData } from 'node:worker_threads';
import { Decoder } from '@evan/opus';
import WebSocket from 'ws';
import { encodeAudio, encodeStart } from '../../src/upstream/protocol.js';

const { upstreamUrl } = workerData as { upstreamUrl: string };
const RATE = 16000;
const FIRST_SEQUENCE = 10_000;
const packets = (JSON.parse(readFileSync(path.join(import.meta.dirname, '../../test/fixtures/speech-16k-mono.packets.json'), 'utf8')) as string[])
  .map((p) => Buffer.from(p, 'base64'));

interface Link { ws: WebSocket; frames: string[]; decoder: Decoder; sent: number; answered: number }
const links: Link[] = [];
const port = parentPort!;

// The answers of a turn, posted once at its end: [index, k, pcmLength] triples and the PCM bytes.
let outIdx: number[] = [];
let outPcm: Buffer[] = [];
let outBytes = 0;
let scheduled = false;
function flush(): void {
  scheduled = false;
  const idx = Int32Array.from(outIdx);
  const pcm = Buffer.concat(outPcm, outBytes);
  const ab = pcm.buffer.slice(pcm.byteOffset, pcm.byteOffset + pcm.byteLength);
  port.postMessage({ t: 'answers', idx, pcm: ab }, [idx.buffer, ab]);
  outIdx = [];
  outPcm = [];
  outBytes = 0;
}

port.on('message', (m: { t: 'open'; index: number; id: string } | { t: 'audio'; idx: Int32Array }) => {
  if (m.t === 'open') {
    const ws = new WebSocket(upstreamUrl, { perMessageDeflate: false, maxPayload: 1024 * 1024 });
    const link: Link = { ws, frames: packets.map((p, i) => encodeAudio(m.id, FIRST_SEQUENCE + i, p, RATE, 1)), decoder: new Decoder({ channels: 1, sample_rate: RATE }), sent: 0, answered: 0 };
    links[m.index] = link;
    ws.once('open', () => {
      ws.send(encodeStart({ sessionId: m.id, deviceId: m.id, userId: 'bench', audioFormat: 'opus', sampleRate: RATE, channels: 1, autoMode: false }));
      port.postMessage({ t: 'opened', index: m.index });
    });
    ws.on('error', (e) => process.stderr.write(`upstream ${m.id}: ${e.message}\n`));
    ws.on('message', () => {
      const k = link.answered++ % packets.length;
      const pcm = link.decoder.decode(packets[k]!);
      outIdx.push(m.index, k, pcm.length);
      outPcm.push(Buffer.from(pcm.buffer, pcm.byteOffset, pcm.byteLength));
      outBytes += pcm.byteLength;
      if (!scheduled) {
        scheduled = true;
        setImmediate(flush);
      }
    });
    return;
  }
  for (const index of m.idx) {
    const link = links[index]!;
    link.ws.send(link.frames[link.sent++ % packets.length]!);
  }
});
