// Hostile hub clients (issue 12), run as their own process: N connections, each in a loop for the
// duration: open a WebSocket to the hub, send one frame packed with tiny valid hub messages, wait
// until the service ends the connection, open the next. The frames cycle through 5 million
// MessagePack pings (15 MB) and 1.5 million JSON `{"type":6}` records (16.5 MB) after the
// handshake, a frame of pings just under the frame limit after the handshake, and one before it.
// Reports how many of each were sent and how the connections ended (WebSocket close codes).
import WebSocket from 'ws';
import { emit, readInput, say } from './common.js';

interface HostileInput {
  url: string;
  connections: number;
  durationMs: number;
  /** Hub.MaximumFrameSize of the service: the "just under the limit" frames are sized from it. */
  frameLimit: number;
}

const input = readInput<HostileInput>();
const RS = '\x1e';
const repeat = (unit: Buffer, bytes: number): Buffer => Buffer.alloc(Math.floor(bytes / unit.length) * unit.length, unit);
const MSGPACK_PING = Buffer.from([0x02, 0x91, 0x06]);
const JSON_PING = Buffer.from(`{"type":6}${RS}`);

interface Kind {
  name: string;
  protocol: 'json' | 'messagepack';
  handshake: boolean;
  frame: Buffer;
}

const KINDS: Kind[] = [
  { name: 'msgpack 5M pings', protocol: 'messagepack', handshake: true, frame: repeat(MSGPACK_PING, 5_000_000 * 3) },
  { name: 'json 1.5M pings', protocol: 'json', handshake: true, frame: repeat(JSON_PING, 1_500_000 * 11) },
  { name: 'msgpack pings under the frame limit', protocol: 'messagepack', handshake: true, frame: repeat(MSGPACK_PING, input.frameLimit - 64) },
  { name: 'json pings before the handshake', protocol: 'json', handshake: false, frame: repeat(JSON_PING, input.frameLimit - 64) },
];

const sent: Record<string, number> = Object.fromEntries(KINDS.map((k) => [k.name, 0]));
const endings: Record<string, number> = {};
let failures = 0;
let lastFailure = '';

/** One connection's life: open, (handshake,) one hostile frame, until the server ends it. */
async function once(kind: Kind): Promise<void> {
  // A zero mask: the client need not XOR 15 MB per frame, so the load costs this process little CPU.
  const ws = new WebSocket(`${input.url.replace(/^http/, 'ws')}/voice-hub`, { perMessageDeflate: false, generateMask: (mask) => mask.fill(0) });
  ws.on('error', () => {});
  const closed = new Promise<number>((resolve) => ws.on('close', (code) => resolve(code)));
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('close', () => reject(new Error('closed before open')));
  });
  if (kind.handshake) {
    const answer = new Promise<string>((resolve) => ws.once('message', (d: Buffer) => resolve(d.toString())));
    ws.send(`{"protocol":"${kind.protocol}","version":1}${RS}`);
    const text = await Promise.race([answer, closed.then(() => 'closed')]);
    if (text !== `{}${RS}`) throw new Error(`handshake: ${text}`);
  }
  ws.send(kind.frame, { binary: kind.protocol === 'messagepack' });
  sent[kind.name]!++;
  const timeout = setTimeout(() => ws.terminate(), 10_000);
  const code = await closed;
  clearTimeout(timeout);
  const key = `${kind.name}: ${code}`;
  endings[key] = (endings[key] ?? 0) + 1;
}

async function main(): Promise<void> {
  const stopAt = performance.now() + input.durationMs;
  let next = 0;
  await Promise.all(Array.from({ length: input.connections }, async () => {
    while (performance.now() < stopAt) {
      try {
        await once(KINDS[next++ % KINDS.length]!);
      } catch (e) {
        failures++;
        lastFailure = e instanceof Error ? e.message : String(e);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    }
  }));
  say(`hostile load: ${Object.values(sent).reduce((a, b) => a + b, 0)} frames sent`);
  emit({ sent, endings, failures, lastFailure });
}

main().then(
  () => process.exit(0),
  (e: unknown) => {
    say(`hostile load failed: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`);
    process.exit(1);
  },
);
