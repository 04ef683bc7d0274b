// Hub load (issue 6, benchmark 3), run as its own process: two real hub connections per session,
// both joined; member A sends SendAudioData with 20 ms Opus packets, member B's AudioProcessed
// completes the round trip. `window` packets per session are kept in flight (1: one call in flight;
// more: saturating). Mode `listen` sends nothing and counts AudioResponse (the return path, fed by a
// talking upstream). Server CPU is read from /proc at the edges of the measured window.
import type { Session } from '../lib/api.js';
import { audioFrames, joinSession, RawHubClient, type Protocol } from '../lib/signalr-raw.js';
import { latencySummary } from '../lib/report.js';
import { count, cpuOf, diff, emit, fixturePackets, readInput, Samples, say, targetNeedle } from './common.js';

export interface HubLoadInput {
  url: string;
  protocol: Protocol;
  sessions: Session[];
  mode: 'roundtrip' | 'listen';
  window: number;
  warmupMs: number;
  durationMs: number;
  pids: Record<string, number>;
}

const input = readInput<HubLoadInput>();
const { protocol } = input;
const packets = fixturePackets();
const PROCESSED = targetNeedle(protocol, 'AudioProcessed');
const RESPONSE = targetNeedle(protocol, 'AudioResponse');
const ERROR = targetNeedle(protocol, 'Error');

interface Lane {
  a: RawHubClient;
  b: RawHubClient;
  /** SendAudioData frames, one per fixture packet, ready for the wire. */
  frames: Buffer[];
  next: number;
  /** Send times of packets not yet processed / not yet answered, oldest first. */
  awaitingProcessed: number[];
  awaitingResponse: number[];
}

let measuring = false;
let running = true;
let sent = 0;
let processed = 0;
let responsesA = 0;
let responsesB = 0;
let errors = 0;
let lastError = '';
const processedLatency = new Samples();
const responseLatency = new Samples();

function pump(lane: Lane): void {
  while (running && lane.awaitingProcessed.length < input.window) {
    const now = performance.now();
    lane.a.sendWire(lane.frames[lane.next++ % lane.frames.length]!);
    lane.awaitingProcessed.push(now);
    lane.awaitingResponse.push(now);
    sent++;
  }
}

async function connectLane(session: Session): Promise<Lane> {
  const a = await RawHubClient.connect(input.url, protocol);
  const b = await RawHubClient.connect(input.url, protocol);
  await joinSession(a, session.sessionId, session.token);
  await joinSession(b, session.sessionId, session.token);
  const frames = audioFrames(protocol, session.sessionId, packets);
  return { a, b, frames, next: 0, awaitingProcessed: [], awaitingResponse: [] };
}

function wire(lane: Lane): void {
  lane.a.onFrame = (data) => {
    if (measuring) responsesA += count(data, RESPONSE);
    if (count(data, ERROR) === 0) return;
    // A refused packet will never be processed: it leaves the window.
    lane.a.decodeFrame(data, (m) => {
      if (m.target !== 'Error') return;
      errors++;
      lastError = String(m.args?.[0]);
      lane.awaitingProcessed.shift();
      lane.awaitingResponse.shift();
    });
    pump(lane);
  };
  lane.b.onFrame = (data) => {
    const now = performance.now();
    const responses = count(data, RESPONSE);
    for (let i = 0; i < responses; i++) {
      const at = lane.awaitingResponse.shift();
      if (measuring) {
        responsesB++;
        if (at !== undefined) responseLatency.push(now - at);
      }
    }
    const done = count(data, PROCESSED);
    if (done === 0) return;
    for (let i = 0; i < done; i++) {
      const at = lane.awaitingProcessed.shift();
      if (measuring) {
        processed++;
        if (at !== undefined) processedLatency.push(now - at);
      }
    }
    if (input.mode === 'roundtrip') pump(lane);
  };
}

async function main(): Promise<void> {
  const lanes: Lane[] = [];
  // A few at a time: set-up is not what is measured.
  for (let i = 0; i < input.sessions.length; i += 10) {
    lanes.push(...(await Promise.all(input.sessions.slice(i, i + 10).map(connectLane))));
  }
  for (const lane of lanes) wire(lane);
  say(`hub load: ${lanes.length} sessions x 2 members connected (${protocol}, ${input.mode}, window ${input.window})`);
  if (input.mode === 'roundtrip') for (const lane of lanes) pump(lane);
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

  // Stop sending, let what is in flight land, then count what never came back.
  running = false;
  const deadline = performance.now() + 5000;
  while (performance.now() < deadline && lanes.some((l) => l.awaitingProcessed.length > 0)) {
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  const lost = lanes.reduce((n, l) => n + l.awaitingProcessed.length, 0);
  for (const lane of lanes) {
    lane.a.close();
    lane.b.close();
  }
  emit({
    wall,
    cpu,
    loadCpu: (own.user + own.system) / 1e6,
    sent,
    processed,
    responsesA,
    responsesB,
    errors,
    lastError,
    lost,
    processedLatency: latencySummary(processedLatency.values()),
    responseLatency: latencySummary(responseLatency.values()),
  });
}

main().then(
  () => process.exit(0),
  (e: unknown) => {
    say(`hub load failed: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`);
    process.exit(1);
  },
);
