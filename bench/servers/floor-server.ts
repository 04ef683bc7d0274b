// The floor of the hub path (issue 16): the socket work of one voice round trip and nothing else, so that
// section 3 can say how much more voice-hub spends per round trip. Devices on uWebSockets.js (the
// addon the service loads), one upstream `ws` connection per session to the same echo server, and
// the same frames, sizes and fan-out as voice-hub's hub path: SendAudioData in, AudioProcessed to both
// members, the upstream `audio` frame out, the echo back, AudioResponse + AudioData to both members.
// Every payload is built before serving (PCM decoded once at start, frames encoded once per session
// and packet with the service's own encoders), so per round trip it only moves bytes: no decode, no
// JSON or MessagePack encoding, no parsing after JoinSession. Sends to a member are corked, the least
// a uWS server can do. It trusts its client (bench/load/hub.ts): after JoinSession every frame a
// connection sends is a SendAudioData carrying the fixture's next packet, in order.
// With `decode`, each answer is also decoded (native libopus through @evan/opus, one decoder per session,
// on the event loop) before its precomputed frames go out: the floor of the streaming rows (section 4),
// whose latency includes the decode the service must do.
// Usage: floor-server.ts <bundleDir> <upstream ws url> [decode]; prints "listening on http://127.0.0.1:<port>".
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Decoder } from '@evan/opus';
import WebSocket from 'ws';
import type { WebSocket as UwsSocket } from 'uWebSockets.js';
import { jsonProtocol } from '../../src/hub/json-protocol.js';
import { createMessagePackProtocol } from '../../src/hub/msgpack-protocol.js';
import { completionWithResult, invocation, MessageType, type HubProtocol } from '../../src/hub/messages.js';
import { loadNativeUws } from '../../src/http/uws-native.js';
import { encodeAudio, encodeStart } from '../../src/upstream/protocol.js';
import { SessionOpusDecoder } from '../../src/voice/opus/decoder.js';

const [bundleDir, upstreamUrl, mode] = process.argv.slice(2);
if (!bundleDir || !upstreamUrl || (mode !== undefined && mode !== 'decode')) throw new Error('usage: floor-server.ts <bundleDir> <upstream ws url> [decode]');
const decodeAnswers = mode === 'decode';

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
/** A Ping in either protocol, as the wire has it: the load's devices ping while they await the last answers. */
const PINGS = Object.values(protocols).map((p) => Buffer.from(p.encode({ type: MessageType.Ping })));
const isPing = (message: ArrayBuffer): boolean => PINGS.some((ping) => message.byteLength === ping.length && ping.equals(Buffer.from(message)));

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
  members: Member[];
  /** Per protocol in use, one frame per fixture packet. */
  frames: Map<string, Frames>;
  upstreamFrames: string[];
  upstream: WebSocket;
  /** With `decode`: this session's decoder, fed the answers in order. */
  decoder?: Decoder;
  /** Resolves once the upstream link is open and `start` has gone out: JoinSession completes then, as with the service, whose link opens at session start. */
  open: Promise<void>;
  sent: number;
  answered: number;
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
  const upstream = new WebSocket(upstreamUrl!, { perMessageDeflate: false, maxPayload: 1024 * 1024 });
  const session: Session = {
    id,
    members: [],
    frames: new Map(),
    upstreamFrames: packets.map((p, i) => encodeAudio(id, FIRST_SEQUENCE + i, p, RATE, CHANNELS)),
    upstream,
    decoder: decodeAnswers ? new Decoder({ channels: CHANNELS, sample_rate: RATE }) : undefined,
    open: new Promise((resolve, reject) => {
      upstream.once('open', () => {
        upstream.send(encodeStart({ sessionId: id, deviceId: id, userId: 'bench', audioFormat: 'opus', sampleRate: RATE, channels: CHANNELS, autoMode: false }));
        resolve();
      });
      upstream.once('error', reject);
    }),
    sent: 0,
    answered: 0,
  };
  upstream.on('error', (e) => process.stderr.write(`upstream ${id}: ${e.message}\n`));
  // The return path: the k-th answer is the k-th packet sent.
  upstream.on('message', () => {
    const k = session.answered++ % packets.length;
    session.decoder?.decode(packets[k]!);
    for (const m of session.members) {
      const frames = framesFor(session, m.ws.getUserData().protocol!);
      m.ws.cork(() => {
        m.ws.send(frames.response[k]!, m.binary);
        m.ws.send(frames.data[k]!, m.binary);
      });
    }
  });
  sessions.set(id, session);
  return session;
}

/** The forward path: upstream first, then AudioProcessed to every member (the sender's sends are corked by uWS). */
function audio(session: Session): void {
  const k = session.sent++ % packets.length;
  session.upstream.send(session.upstreamFrames[k]!);
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
    if (!session) setUp(ws, message);
    else if (!isPing(message)) audio(session);
  },
  close: (ws) => {
    const conn = ws.getUserData();
    conn.closed = true;
    const session = conn.member;
    if (!session) return;
    session.members = session.members.filter((m) => m.ws !== ws);
    if (session.members.length === 0) {
      session.upstream.close();
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
