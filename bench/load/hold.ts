// Connections that stay open while the orchestrator reads the server's memory (issue 6, benchmark 5),
// run as its own process. `ws`: plain WebSockets to the bare uWS echo; `hub`: hub connections after
// negotiate and handshake; `sessions`: one hub connection per session, joined, after `packets`
// packets each (decoders and upstream links warmed). Prints READY, then holds until stdin closes.
import WebSocket from 'ws';
import type { Session } from '../lib/api.js';
import { invocationFrame, joinSession, RawHubClient } from '../lib/signalr-raw.js';
import { count, emit, fixturePackets, readInput, say, targetNeedle } from './common.js';

interface HoldInput {
  kind: 'ws' | 'hub' | 'sessions';
  url: string;
  connections: number;
  sessions?: Session[];
  packets?: number;
}

const input = readInput<HoldInput>();
const open: Array<{ close(): void }> = [];

async function plain(url: string): Promise<void> {
  const ws = new WebSocket(url, { perMessageDeflate: false });
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  open.push({ close: () => ws.terminate() });
}

async function hub(): Promise<void> {
  open.push(await RawHubClient.connect(input.url, 'json'));
}

async function session(s: Session): Promise<void> {
  const client = await RawHubClient.connect(input.url, 'json');
  open.push(client);
  await joinSession(client, s.sessionId, s.token);
  const packets = fixturePackets().slice(0, input.packets ?? 0);
  const needle = targetNeedle('json', 'AudioResponse');
  let answered = 0;
  await new Promise<void>((resolve, reject) => {
    if (packets.length === 0) return resolve();
    const timer = setTimeout(() => reject(new Error(`only ${answered} of ${packets.length} AudioResponse`)), 30_000);
    client.onFrame = (data) => {
      answered += count(data, needle);
      if (answered >= packets.length) {
        clearTimeout(timer);
        resolve();
      }
    };
    // Real time, as a device would send them.
    let i = 0;
    const clock = setInterval(() => {
      client.send(invocationFrame('json', 'SendAudioData', [s.sessionId, packets[i++]!]));
      if (i === packets.length) clearInterval(clock);
    }, 20);
  });
  client.onFrame = () => {};
}

async function main(): Promise<void> {
  const jobs: Array<() => Promise<void>> =
    input.kind === 'ws' ? Array.from({ length: input.connections }, () => () => plain(input.url))
    : input.kind === 'hub' ? Array.from({ length: input.connections }, () => hub)
    : (input.sessions ?? []).map((s) => () => session(s));
  for (let i = 0; i < jobs.length; i += 50) await Promise.all(jobs.slice(i, i + 50).map((j) => j()));
  say(`hold: ${open.length} connections open`);
  emit({ open: open.length });
  process.stdout.write('READY\n');
  process.stdin.resume();
  process.stdin.on('end', () => {
    for (const c of open) c.close();
    process.exit(0);
  });
}

main().catch((e: unknown) => {
  say(`hold failed: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`);
  process.exit(1);
});
