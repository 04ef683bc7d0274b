// An experiment (not part of `npm run bench`): the floor of section 4 (bench/servers/floor-server.ts with
// `decode`) with its upstream links and the decode moved to one worker thread
// (floor-upstream-worker.ts), to learn whether taking the upstream socket work off the event loop lets a
// 2-core machine serve 300 talking devices within 50 ms. The main thread keeps the devices (uWS), sends
// AudioProcessed, and hands the turn's packets to the worker as one message; the worker writes them
// upstream, decodes each answer and hands a turn's answers back (indices and PCM, transferred); the main
// thread then sends the precomputed AudioResponse and AudioData. Run by upstream-thread.ts.
// Usage: floor-threaded-server.ts <bundleDir> <upstream ws url>
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import type { WebSocket as UwsSocket } from 'uWebSockets.js';
import { jsonProtocol } from '../../src/hub/json-protocol.js';
import { createMessagePackProtocol } from '../../src/hub/msgpack-protocol.js';
import { completionWithResult, invocation, type HubProtocol } from '../../src/hub/messages.js';
import { loadNativeUws } from '../../src/http/uws-native.js';
import { SessionOpusDecoder } from '../../src/voice/opus/decoder.js';

const [bundleDir, upstreamUrl] = process.argv.slice(2);
const worker = new Worker(new URL('./floor-upstream-worker.mjs', import.meta.url), { workerData: { upstreamUrl } });
const opened = new Map<number, () => void>();
const byIndex: Session[] = [];
let outIdx: number[] = [];
let scheduled = false;
function flushAudio(): void {
  scheduled = false;
  const idx = Int32Array.from(outIdx);
  outIdx = [];
  worker.postMessage({ t: 'audio', idx }, [idx.buffer]);
}
worker.on('message', (m: { t: 'opened'; index: number } | { t: 'answers'; idx: Int32Array; pcm: ArrayBuffer }) => {
  if (m.t === 'opened') { opened.get(m.index)?.(); opened.delete(m.index); return; }
  const { idx } = m;
  for (let i = 0; i < idx.length; i += 3) {
    const session = byIndex[idx[i]!];
    if (!session) continue;
    const k = idx[i + 1]!;
    for (const mem of session.members) {
      const frames = framesFor(session, mem.ws.getUserData().protocol!);
      mem.ws.cork(() => {
        mem.ws.send(frames.response[k]!, mem.binary);
        mem.ws.send(frames.data[k]!, mem.binary);
      });
    }
  }
});
worker.on('error', (e) => { process.stderr.write(`worker: ${e.message}\n`); process.exit(1); });

const RATE = 16000;
const CHANNELS = 1;
const PACKET_MS = 20;
/** Sequence numbers of a long session (five digits), so upstream frames are as long as the service's. */
const FIRST_SEQUENCE = 10_000;
const RS = '\x1e';

const packets = (JSON.parse(readFileSync(path.join(import.meta.dirname, '../../test/fixtures/speech-16k-mono.packets.json'), 'utf8')) as string[])
  .map((p) => Buffer.from(p, 'base64'));

// The answers' PCM, decoded once: the echo returns the packets it was sent, in order.
const pcm: string[] = await (async () => {
  const decoder = new SessionOpusDecoder();
  await decoder.reconfigure(RATE, CHANNELS);
  const out = packets.map((p) => decoder.decode(p).toString('base64'));
  decoder.free();
  return out;
})();

const protocols: Record<string, HubProtocol> = { json: jsonProtocol, messagepack: createMessagePackProtocol(1024 * 1024) };

type Frame = string | Uint8Array;
interface Frames {
  processed: Frame[];
  response: Frame[];
  data: Frame[];
}

interface Member {
  ws: UwsSocket<Conn>;
  binary: boolean;
}

interface Session {
  id: string;
  index: number;
  members: Member[];
  frames: Map<string, Frames>;
  open: Promise<void>;
  sent: number;
}

interface Conn {
  protocol?: HubProtocol;
  /** Set once JoinSession has completed: from then on every frame is audio. */
  session?: Session;
  /** The session joined, from the JoinSession on (for the clean-up at close). */
  member?: Session;
  closed?: boolean;
}

const sessions = new Map<string, Session>();

function framesFor(session: Session, protocol: HubProtocol): Frames {
  let frames = session.frames.get(protocol.name);
  if (!frames) {
    const sessionId = session.id;
    frames = {
      processed: packets.map((p, i) => protocol.encode(invocation('AudioProcessed', [{ sessionId, sequence: FIRST_SEQUENCE + i, bytes: p.length, durationMs: PACKET_MS }]))),
      response: pcm.map((b64) => protocol.encode(invocation('AudioResponse', [b64]))),
      data: packets.map((p) => protocol.encode(invocation('AudioData', [{ sessionId, format: 'opus', sampleRate: RATE, channels: CHANNELS, data: p.toString('base64') }]))),
    };
    session.frames.set(protocol.name, frames);
  }
  return frames;
}

function openSession(id: string): Session {
  const index = byIndex.length;
  const session: Session = {
    id, index, members: [], frames: new Map(), sent: 0,
    open: new Promise((resolve) => opened.set(index, resolve)),
  };
  byIndex.push(session);
  worker.postMessage({ t: 'open', index, id });
  sessions.set(id, session);
  return session;
}

/** The forward path: to the worker at the turn's end, then AudioProcessed to every member. */
function audio(session: Session): void {
  outIdx.push(session.index);
  if (!scheduled) { scheduled = true; setImmediate(flushAudio); }
  const k = session.sent++ % packets.length;
  for (const m of session.members) {
    const frame = framesFor(session, m.ws.getUserData().protocol!).processed[k]!;
    m.ws.cork(() => m.ws.send(frame, m.binary));
  }
}

/** Set-up only: the handshake and JoinSession are parsed like any hub would. */
function setUp(ws: UwsSocket<Conn>, message: ArrayBuffer): void {
  const conn = ws.getUserData();
  const bytes = new Uint8Array(message);
  if (!conn.protocol) {
    const text = Buffer.from(bytes).toString('utf8');
    const request = JSON.parse(text.slice(0, text.indexOf(RS))) as { protocol: string };
    conn.protocol = protocols[request.protocol];
    ws.send(conn.protocol ? `{}${RS}` : `{"error":"unknown protocol"}${RS}`, false);
    return;
  }
  const read = conn.protocol.read(bytes, 0, 1024 * 1024);
  const m = read ? conn.protocol.decode(read.body) : null;
  if (!m || m.type !== 1 || m.target !== 'JoinSession') return;
  const sessionId = String(m.arguments[0]);
  const session = sessions.get(sessionId) ?? openSession(sessionId);
  session.members.push({ ws, binary: conn.protocol.binary });
  conn.member = session;
  framesFor(session, conn.protocol);
  const { protocol } = conn;
  const invocationId = m.invocationId;
  session.open.then(() => {
    if (conn.closed) return;
    conn.session = session;
    ws.cork(() => {
      ws.send(protocol.encode(invocation('SessionJoined', [sessionId])), protocol.binary);
      if (invocationId) ws.send(protocol.encode(completionWithResult(invocationId, null)), protocol.binary);
    });
  }, (e: unknown) => {
    if (!conn.closed) ws.end(1011, `upstream: ${e instanceof Error ? e.message : String(e)}`);
  });
}

const { uws } = loadNativeUws({ bundleDir });
const app = uws.App();
let nextId = 0;
app.post('/voice-hub/negotiate', (res) => {
  const id = `floor-${++nextId}`;
  res.writeHeader('Content-Type', 'application/json').end(JSON.stringify({
    negotiateVersion: 1, connectionId: id, connectionToken: id,
    availableTransports: [{ transport: 'WebSockets', transferFormats: ['Text', 'Binary'] }],
  }));
});
app.ws<Conn>('/voice-hub', {
  maxPayloadLength: 1024 * 1024,
  idleTimeout: 0,
  upgrade: (res, req, context) => {
    res.upgrade<Conn>({}, req.getHeader('sec-websocket-key'), req.getHeader('sec-websocket-protocol'), req.getHeader('sec-websocket-extensions'), context);
  },
  message: (ws, message) => {
    const session = ws.getUserData().session;
    if (session) audio(session);
    else setUp(ws, message);
  },
  close: (ws) => {
    const conn = ws.getUserData();
    conn.closed = true;
    const session = conn.member;
    if (!session) return;
    session.members = session.members.filter((m) => m.ws !== ws);
    if (session.members.length === 0) {
      sessions.delete(session.id);
    }
  },
});
app.any('/*', (res) => {
  res.writeStatus('404 Not Found').end();
});
app.listen('127.0.0.1', 0, (socket) => {
  if (!socket) {
    process.stderr.write('listen failed\n');
    process.exit(1);
  }
  process.stdout.write(`listening on http://127.0.0.1:${uws.us_socket_local_port(socket)}\n`);
});
process.on('SIGTERM', () => process.exit(0));
