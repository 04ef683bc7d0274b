// `voice-hub simulate`: N devices stream real-time Opus through a running service and its upstream voice
// server (normally the built-in echo server), and the run ends with a table of packets sent, AudioProcessed
// and AudioResponse received, losses and round-trip percentiles. Bounded: set-up steps time out, streaming
// lasts `seconds`, and answers still missing after a drain grace count as lost.
import { randomBytes } from 'node:crypto';
import { errorText } from '../errors.js';
import type { SimProtocol } from './sim-client.js';
import { SimDevice, type SimApi } from './sim-device.js';
import { SIM_PACKET_MS, simPackets } from './sim-packets.js';

export interface SimulateOptions {
  /** The service's base address, e.g. http://127.0.0.1:5000. */
  url: string;
  devices: number;
  seconds: number;
  protocol?: SimProtocol;
  /** `X-API-Key` for services with `ApiKeys` set. */
  apiKey?: string;
  /** Admin token: the simulated devices are deleted at the end; without it they stay registered. */
  adminToken?: string;
  /** How long to wait for answers after the last packet (default 2000 ms). */
  drainMs?: number;
  /** Timeout of each HTTP request and hub step (default 10000 ms). */
  stepTimeoutMs?: number;
  /** Progress and warnings, one line each (the CLI sends them to stderr). */
  log?: (line: string) => void;
}

export interface SimulationReport {
  url: string;
  protocol: SimProtocol;
  devices: number;
  seconds: number;
  /** Devices that could not register, start, connect or join, or broke while streaming: id -> reason. */
  failures: { deviceId: string; reason: string }[];
  packetsSent: number;
  audioProcessed: number;
  audioResponse: number;
  /** packetsSent - audioResponse. */
  lost: number;
  /** Sum of the final session records' `audioPacketsSent` (undefined when no session could be stopped). */
  serverPackets: number | undefined;
  p50Ms: number | undefined;
  p99Ms: number | undefined;
  maxMs: number | undefined;
  /** Distinct Error event texts with their counts. */
  errors: { message: string; count: number }[];
  /** Registered simulated devices that are still registered after the run. */
  leftRegistered: string[];
  deletionSkipped: boolean;
  /** Nothing lost and no device failed: the CLI exits 0. */
  ok: boolean;
}

const DEFAULT_DRAIN_MS = 2000;
const DEFAULT_STEP_TIMEOUT_MS = 10_000;

/** Nearest-rank percentile of ascending `sorted` values. */
export function percentile(sorted: readonly number[], p: number): number | undefined {
  if (sorted.length === 0) return undefined;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1];
}

export async function runSimulation(options: SimulateOptions): Promise<SimulationReport> {
  const { devices: count, seconds } = options;
  if (!Number.isInteger(count) || count < 1) throw new Error('--devices must be a whole number of at least 1');
  if (!(seconds > 0)) throw new Error('--seconds must be more than 0');
  const protocol = options.protocol ?? 'json';
  const log = options.log ?? (() => {});
  const api: SimApi = {
    baseUrl: options.url.endsWith('/') ? options.url : `${options.url}/`,
    timeoutMs: options.stepTimeoutMs ?? DEFAULT_STEP_TIMEOUT_MS,
    ...(options.apiKey ? { apiKey: options.apiKey } : {}),
  };
  const run = randomBytes(3).toString('hex');
  const devices = Array.from({ length: count }, (_, n) => new SimDevice(`sim-${run}-${n + 1}`, api, protocol, log));

  log(`setting up ${count} device(s) against ${options.url} (${protocol})`);
  const setUp = await Promise.allSettled(devices.map((d) => d.setUp()));
  const ready = devices.filter((_, i) => setUp[i]!.status === 'fulfilled');
  for (const d of devices) if (d.failure) log(`fail: ${d.deviceId}: ${d.failure}`);

  if (ready.length > 0) {
    const total = Math.max(1, Math.round((seconds * 1000) / SIM_PACKET_MS));
    log(`${ready.length} device(s) streaming ${total} packets each (${SIM_PACKET_MS} ms per packet, real time)`);
    const packets = simPackets();
    const t0 = performance.now() + 50;
    // Devices are not in step in real life: spread their packet clocks over one packet interval.
    await Promise.all(ready.map((d, i) => d.stream(packets, total, t0 + (i * SIM_PACKET_MS) / ready.length)));
    const drainUntil = Date.now() + (options.drainMs ?? DEFAULT_DRAIN_MS);
    while (Date.now() < drainUntil && !ready.every((d) => d.settled || d.failure)) await new Promise((r) => setTimeout(r, 20));
  }

  // All of them: a device that failed after its start still has a session to end.
  await Promise.all(devices.map((d) => d.stop()));
  const registered = devices.filter((d) => d.registered);
  let leftRegistered = registered.map((d) => d.deviceId);
  if (options.adminToken && registered.length > 0) {
    const deleted = await Promise.all(registered.map((d) => d.delete(options.adminToken!)));
    leftRegistered = registered.filter((_, i) => !deleted[i]).map((d) => d.deviceId);
  }
  return summarise(options, protocol, devices, leftRegistered);
}

function summarise(options: SimulateOptions, protocol: SimProtocol, devices: SimDevice[], leftRegistered: string[]): SimulationReport {
  const sum = (f: (d: SimDevice) => number): number => devices.reduce((n, d) => n + f(d), 0);
  const latencies = devices.flatMap((d) => d.counts.latenciesMs).sort((a, b) => a - b);
  const errors = new Map<string, number>();
  for (const d of devices) for (const [m, n] of d.errorTexts) errors.set(m, (errors.get(m) ?? 0) + n);
  const stopped = devices.filter((d) => d.counts.serverPackets !== undefined);
  const packetsSent = sum((d) => d.counts.sent);
  const audioResponse = sum((d) => d.counts.responses);
  const failures = devices.filter((d) => d.failure).map((d) => ({ deviceId: d.deviceId, reason: d.failure! }));
  const lost = packetsSent - audioResponse;
  return {
    url: options.url,
    protocol,
    devices: devices.length,
    seconds: options.seconds,
    failures,
    packetsSent,
    audioProcessed: sum((d) => d.counts.processed),
    audioResponse,
    lost,
    serverPackets: stopped.length > 0 ? stopped.reduce((n, d) => n + d.counts.serverPackets!, 0) : undefined,
    p50Ms: percentile(latencies, 50),
    p99Ms: percentile(latencies, 99),
    maxMs: latencies.at(-1),
    errors: [...errors].map(([message, count]) => ({ message, count })).sort((a, b) => b.count - a.count),
    leftRegistered,
    deletionSkipped: !options.adminToken,
    ok: lost === 0 && failures.length === 0 && packetsSent > 0,
  };
}

const ms = (v: number | undefined): string => (v === undefined ? '-' : v.toFixed(1));

/** The report as the CLI prints it: a table, then notes. */
export function formatSimulationReport(r: SimulationReport): string {
  const header = ['devices', 'seconds', 'packets sent', 'AudioProcessed', 'AudioResponse', 'lost', 'p50 ms', 'p99 ms'];
  const row = [r.devices, r.seconds, r.packetsSent, r.audioProcessed, r.audioResponse, r.lost, ms(r.p50Ms), ms(r.p99Ms)].map(String);
  const widths = header.map((h, i) => Math.max(h.length, row[i]!.length));
  const line = (cells: string[]): string => cells.map((c, i) => c.padStart(widths[i]!)).join('  ');
  const out = [
    `voice-hub simulate: ${r.devices} device(s) x ${r.seconds} s against ${r.url} (${r.protocol} protocol)`,
    '',
    line(header),
    line(row),
    '',
  ];
  if (r.maxMs !== undefined) {
    out.push(`round trip = SendAudioData sent (fire-and-forget) -> its AudioResponse back (upstream and Opus decode included); max ${ms(r.maxMs)} ms`);
  }
  if (r.serverPackets !== undefined) out.push(`the service counted ${r.serverPackets} packet(s) forwarded upstream (audioPacketsSent)`);
  for (const e of r.errors.slice(0, 5)) out.push(`Error event x${e.count}: ${e.message}`);
  for (const f of r.failures.slice(0, 10)) out.push(`device ${f.deviceId} failed: ${f.reason}`);
  if (r.failures.length > 10) out.push(`... and ${r.failures.length - 10} more failed device(s)`);
  if (r.failures.some((f) => /HTTP 409/.test(f.reason))) {
    out.push('registrations count against DeviceManagement.MaxDevices (10 as shipped): raise it (--DeviceManagement.MaxDevices 100) or delete old devices');
  }
  if (r.deletionSkipped && r.leftRegistered.length > 0) {
    out.push(
      `no --admin-token: the ${r.leftRegistered.length} simulated device(s) (${r.leftRegistered[0]}...) stay registered and count against ` +
        'DeviceManagement.MaxDevices (10 as shipped); delete them with DELETE /api/device/<id> and an admin token (voice-hub token admin)',
    );
  } else if (r.leftRegistered.length > 0) {
    out.push(`could not delete ${r.leftRegistered.length} simulated device(s): ${r.leftRegistered.join(', ')}`);
  } else if (!r.deletionSkipped) {
    out.push('simulated devices deleted');
  }
  out.push(r.ok ? 'result: OK (nothing lost)' : `result: FAILED (${r.lost} lost, ${r.failures.length} device(s) failed)`);
  return out.join('\n') + '\n';
}

/** Runs, then renders; errors before streaming (bad options) are rethrown with a plain message. */
export async function simulateCommand(options: SimulateOptions): Promise<{ code: number; text: string }> {
  try {
    const report = await runSimulation(options);
    return { code: report.ok ? 0 : 1, text: formatSimulationReport(report) };
  } catch (e) {
    return { code: 2, text: `voice-hub simulate: ${errorText(e)}\n` };
  }
}
