// The bench's own upstream voice servers, speaking the upstream protocol of src/upstream/protocol.ts:
// `sink` takes audio and never answers (the hub's forward path alone), `talk` sends audio to every
// session at a fixed rate from its `start` on (the return path alone: decode -> AudioResponse).
// Usage: upstream.ts sink|talk <packets per second per session>; prints "listening on ws://...".
import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { WebSocketServer, type WebSocket } from 'ws';
import { encodeUpstreamAudio, parseServiceFrame } from '../../src/upstream/protocol.js';

const mode = process.argv[2];
const rate = Number(process.argv[3] ?? 0);
if (mode !== 'sink' && mode !== 'talk') throw new Error('usage: upstream.ts sink|talk <rate>');

const packets = JSON.parse(
  readFileSync(path.join(import.meta.dirname, '../../test/fixtures/speech-16k-mono.packets.json'), 'utf8'),
) as string[];
const frames = packets.map((p) => encodeUpstreamAudio(p, 16000, 1));

interface Talker {
  socket: WebSocket;
  startedAt: number;
  sent: number;
}
const talkers = new Set<Talker>();

const wss = new WebSocketServer({ host: '127.0.0.1', port: 0, perMessageDeflate: false, maxPayload: 1024 * 1024 });
wss.on('listening', () => process.stdout.write(`listening on ws://127.0.0.1:${(wss.address() as AddressInfo).port}/voice\n`));
wss.on('connection', (socket) => {
  let talker: Talker | undefined;
  socket.on('error', () => {});
  socket.on('close', () => talker && talkers.delete(talker));
  socket.on('message', (data, isBinary) => {
    if (isBinary) return;
    const text = data.toString();
    // Audio is the bulk: only `start` and `stop` need parsing.
    if (text.startsWith('{"type":"audio"')) return;
    const frame = parseServiceFrame(text);
    if ('kind' in frame) return;
    if (frame.type === 'start' && mode === 'talk') talkers.add((talker = { socket, startedAt: performance.now(), sent: 0 }));
    if (frame.type === 'stop') socket.close(1000, 'stopped');
  });
});

if (mode === 'talk') {
  // One clock for all sessions: each gets what is due since its start, so the rate holds on average.
  setInterval(() => {
    const now = performance.now();
    for (const t of talkers) {
      const due = Math.floor(((now - t.startedAt) / 1000) * rate);
      // Never pile up behind a slow reader: that is back-pressure, not a rate.
      while (t.sent < due && t.socket.bufferedAmount < 256 * 1024) t.socket.send(frames[t.sent++ % frames.length]!);
      t.sent = Math.max(t.sent, due);
    }
  }, 5);
}
process.on('SIGTERM', () => process.exit(0));
