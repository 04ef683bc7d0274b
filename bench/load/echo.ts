// Ceiling load (issue 6, benchmark 1), run as its own process: WebSocket round trips against the bare
// uWS echo server, with the same frame as a JSON SendAudioData and the same number of connections as
// the hub benchmark's senders, `window` messages in flight per connection.
import WebSocket from 'ws';
import { invocationFrame } from '../lib/signalr-raw.js';
import { latencySummary } from '../lib/report.js';
import { cpuOf, diff, emit, fixturePackets, readInput, Samples, say } from './common.js';

interface EchoInput {
  url: string;
  connections: number;
  window: number;
  warmupMs: number;
  durationMs: number;
  pids: Record<string, number>;
}

const input = readInput<EchoInput>();
const frames = fixturePackets().map((p) => invocationFrame('json', 'SendAudioData', ['00000000-0000-0000-0000-000000000000', p]) as string);
let measuring = false;
let running = true;
let roundTrips = 0;
const latency = new Samples();

interface Lane {
  ws: WebSocket;
  next: number;
  inFlight: number[];
}

function pump(lane: Lane): void {
  while (running && lane.inFlight.length < input.window) {
    lane.inFlight.push(performance.now());
    lane.ws.send(frames[lane.next++ % frames.length]!);
  }
}

async function open(): Promise<Lane> {
  const ws = new WebSocket(input.url, { perMessageDeflate: false });
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  const lane: Lane = { ws, next: 0, inFlight: [] };
  ws.on('message', () => {
    const at = lane.inFlight.shift()!;
    if (measuring) {
      roundTrips++;
      latency.push(performance.now() - at);
    }
    pump(lane);
  });
  return lane;
}

async function main(): Promise<void> {
  const lanes = await Promise.all(Array.from({ length: input.connections }, open));
  say(`echo load: ${lanes.length} connections, window ${input.window}`);
  for (const lane of lanes) pump(lane);
  await new Promise((resolve) => setTimeout(resolve, input.warmupMs));
  const cpu0 = cpuOf(input.pids);
  const own0 = process.cpuUsage();
  const t0 = performance.now();
  measuring = true;
  await new Promise((resolve) => setTimeout(resolve, input.durationMs));
  measuring = false;
  const wall = (performance.now() - t0) / 1000;
  const cpu = diff(cpu0, cpuOf(input.pids));
  const own = process.cpuUsage(own0);
  running = false;
  for (const lane of lanes) lane.ws.terminate();
  emit({ wall, cpu, loadCpu: (own.user + own.system) / 1e6, roundTrips, latency: latencySummary(latency.values()) });
}

main().then(
  () => process.exit(0),
  (e: unknown) => {
    say(`echo load failed: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`);
    process.exit(1);
  },
);
