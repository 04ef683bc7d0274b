// Real-time streaming load (issue 6, benchmark 4), run as its own process: N devices, each one hub
// connection joined to its own session, each sending a 20 ms Opus packet every 20 ms (50 packets/s,
// phases spread over the 20 ms) for the duration. A packet is lost unless its AudioResponse (the
// echo, decoded) comes back, however late; latency is from the send to AudioProcessed and to AudioResponse.
import type { Session } from '../lib/api.js';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { machineCpu, machineShare, memory, threadCpuMs } from '../lib/proc.js';
import { audioFrames, joinSession, pingFrame, RawHubClient, type Protocol, wireFrame } from '../lib/signalr-raw.js';
import { latencySummary } from '../lib/report.js';
import { count, cpuOf, diff, emit, fixturePackets, readInput, Samples, say, targetNeedle } from './common.js';

interface StreamInput {
  url: string;
  protocol: Protocol;
  sessions: Session[];
  warmupMs: number;
  durationMs: number;
  pids: Record<string, number>;
  serverPid: number;
}

const PACKET_MS = 20;
/**
 * After the last send, answers are awaited while they keep coming: until none came for this long...
 * An overloaded service's answers can pause for seconds while it works through what came in: at 500
 * devices on a slow day none came for 3 s right after the last send, then they came for 46 s more.
 */
const DRAIN_QUIET_MS = 10_000;
/** ...or this long in all (the caller's timeout for the whole load allows for it). */
const DRAIN_MAX_MS = 60_000;
/**
 * While awaiting answers the devices send nothing, so each pings at this interval, as SignalR clients
 * do (KeepAliveInterval, 15 s): the hub closes a connection that sent nothing for its client timeout
 * (30 s), and at 500 devices all 500 were closed 30 s after the last send, with 200,027 answers owed.
 */
const PING_MS = 15_000;
const input = readInput<StreamInput>();
const packets = fixturePackets();
const PROCESSED = targetNeedle(input.protocol, 'AudioProcessed');
const RESPONSE = targetNeedle(input.protocol, 'AudioResponse');
const ERROR = targetNeedle(input.protocol, 'Error');

interface Device {
  client: RawHubClient;
  /** SendAudioData frames, one per fixture packet, ready for the wire. */
  frames: Buffer[];
  /** When this device's packet 0 is due. */
  origin: number;
  sent: number;
  /** Send time and whether it was inside the measured window, oldest first. */
  awaitingProcessed: number[];
  awaitingResponse: number[];
  /** When the service closed this device's connection (one too slow to read its answers, or silent past the client timeout). */
  closedAt?: number;
}

let windowStart = Infinity;
let windowEnd = Infinity;
let sentInWindow = 0;
let errors = 0;
let lastError = '';
let lateSends = 0;
const processedLatency = new Samples();
const responseLatency = new Samples();
const inWindow = (t: number): boolean => t >= windowStart && t < windowEnd;
const LOOP_DELAY_RESOLUTION_MS = 5;
const lateness = (intervalNs: number): number => Math.max(0, intervalNs / 1e6 - LOOP_DELAY_RESOLUTION_MS);

async function connect(session: Session): Promise<Device> {
  const client = await RawHubClient.connect(input.url, input.protocol);
  await joinSession(client, session.sessionId, session.token);
  const frames = audioFrames(input.protocol, session.sessionId, packets);
  const device: Device = { client, frames, origin: 0, sent: 0, awaitingProcessed: [], awaitingResponse: [] };
  client.ws.onClose = () => (device.closedAt ??= performance.now());
  client.onFrame = (data) => {
    const now = performance.now();
    for (let i = count(data, PROCESSED); i > 0; i--) {
      const at = device.awaitingProcessed.shift();
      if (at !== undefined && inWindow(at)) processedLatency.push(now - at);
    }
    for (let i = count(data, RESPONSE); i > 0; i--) {
      const at = device.awaitingResponse.shift();
      if (at !== undefined && inWindow(at)) responseLatency.push(now - at);
    }
    if (count(data, ERROR) > 0) {
      client.decodeFrame(data, (m) => {
        if (m.target !== 'Error') return;
        errors++;
        lastError = String(m.args?.[0]);
      });
    }
  };
  return device;
}

async function main(): Promise<void> {
  const devices: Device[] = [];
  for (let i = 0; i < input.sessions.length; i += 20) {
    devices.push(...(await Promise.all(input.sessions.slice(i, i + 20).map(connect))));
  }
  say(`stream load: ${devices.length} devices connected and joined`);

  const start = performance.now() + 50;
  devices.forEach((d, i) => (d.origin = start + (i * PACKET_MS) / devices.length));
  const stopAt = start + input.warmupMs + input.durationMs;
  let sending = true;
  // One clock for every device: each sends what is due, so the rate holds even when a tick is late.
  const clock = setInterval(() => {
    const now = performance.now();
    for (const d of devices) {
      const due = Math.floor((Math.min(now, stopAt) - d.origin) / PACKET_MS) + 1;
      if (due - d.sent > 1) lateSends += due - d.sent - 1;
      while (d.sent < due) {
        const at = d.origin + d.sent * PACKET_MS;
        d.client.sendWire(d.frames[d.sent++ % d.frames.length]!);
        d.awaitingProcessed.push(at);
        d.awaitingResponse.push(at);
        if (inWindow(at)) sentInWindow++;
      }
    }
    if (now >= stopAt) sending = false;
  }, 2);

  await new Promise((resolve) => setTimeout(resolve, start + input.warmupMs - performance.now()));
  windowStart = performance.now();
  windowEnd = windowStart + input.durationMs;
  const cpu0 = cpuOf(input.pids);
  const main0 = threadCpuMs(input.serverPid);
  const machine0 = machineCpu();
  const own0 = process.cpuUsage();
  const loopDelay = monitorEventLoopDelay({ resolution: LOOP_DELAY_RESOLUTION_MS });
  loopDelay.enable();
  let peakRss = 0;
  const sampler = setInterval(() => (peakRss = Math.max(peakRss, memory(input.serverPid).rss)), 250);
  await new Promise((resolve) => setTimeout(resolve, input.durationMs));
  const wall = (performance.now() - windowStart) / 1000;
  const cpu = diff(cpu0, cpuOf(input.pids));
  const main1 = threadCpuMs(input.serverPid);
  const machine = machineShare(machine0, machineCpu());
  const own = process.cpuUsage(own0);
  loopDelay.disable();
  clearInterval(sampler);
  peakRss = Math.max(peakRss, memory(input.serverPid).rss);

  // Let the last packets come back before counting what never did: for as long as answers keep coming.
  // An overloaded service answers seconds late; counting its queue as lost said it dropped packets it
  // had only not answered yet (and left the latest answers out of the latency).
  while (sending) await new Promise((resolve) => setTimeout(resolve, 10));
  clearInterval(clock);
  const awaiting = (): number => devices.reduce((n, d) => n + d.awaitingResponse.length, 0);
  const drainStart = performance.now();
  let pending = awaiting();
  let progressAt = drainStart;
  const ping = wireFrame(pingFrame(input.protocol));
  let pingedAt = drainStart;
  while (pending > 0 && performance.now() - progressAt < DRAIN_QUIET_MS && performance.now() - drainStart < DRAIN_MAX_MS) {
    await new Promise((resolve) => setTimeout(resolve, 20));
    if (performance.now() - pingedAt >= PING_MS) {
      for (const d of devices) d.client.sendWire(ping);
      pingedAt = performance.now();
    }
    const now = awaiting();
    if (now < pending) progressAt = performance.now();
    pending = now;
  }
  const drainMs = performance.now() - drainStart;
  const sent = devices.reduce((n, d) => n + d.sent, 0);
  const lostResponses = awaiting();
  const lostProcessed = devices.reduce((n, d) => n + d.awaitingProcessed.length, 0);
  // Packets owed on connections the service closed are lost with them: say how many, and when the first closed.
  const closed = devices.filter((d) => d.closedAt !== undefined);
  const lostOnClosed = closed.reduce((n, d) => n + d.awaitingResponse.length, 0);
  const firstClosedS = closed.length > 0 ? (Math.min(...closed.map((d) => d.closedAt!)) - windowStart) / 1000 : undefined;
  for (const d of devices) d.client.close();
  emit({
    devices: devices.length, wall, cpu,
    serverMain: { cpu: (main1.main - main0.main) / 1000, waiting: (main1.mainWaiting - main0.mainWaiting) / 1000 },
    machine,
    loadCpu: (own.user + own.system) / 1e6, peakRss, sent, sentInWindow,
    lostResponses, lostProcessed, errors, lastError, lateSends, drainMs, closedByService: closed.length, lostOnClosed, firstClosedS,
    // The histogram holds whole intervals of its 5 ms timer: the delay is what each took beyond that.
    loopDelayMs: { p50: lateness(loopDelay.percentile(50)), p99: lateness(loopDelay.percentile(99)), max: lateness(loopDelay.max) },
    processedLatency: latencySummary(processedLatency.values()),
    responseLatency: latencySummary(responseLatency.values()),
  });
}

main().then(
  () => process.exit(0),
  (e: unknown) => {
    say(`stream load failed: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`);
    process.exit(1);
  },
);
