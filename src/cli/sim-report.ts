// The summary of a `voice-hub simulate` run: the devices' tallies (sim-tally.ts defines every counter)
// added up, and the table the CLI prints.
import { oneLine } from '../log/logger.js';
import type { SimProtocol } from './sim-client.js';
import { SHIPPED_MAX_DEVICES } from './sim-defaults.js';
import type { SimDevice } from './sim-device.js';
import type { PacketCounts, ResponseCounts } from './sim-tally.js';

const MAX_DEVICES_SHIPPED = `DeviceManagement.MaxDevices (${SHIPPED_MAX_DEVICES} as shipped)`;

export interface SimulationReport {
  url: string;
  protocol: SimProtocol;
  devices: number;
  seconds: number;
  /** The drop schedule, when there was one. */
  drops: { everySeconds: number; forMs: number; count: number } | undefined;
  statefulReconnect: boolean;
  lateMs: number;
  /** Devices that could not register, start, connect or join, or broke while streaming: id -> reason. */
  failures: { deviceId: string; reason: string }[];
  packets: PacketCounts;
  responses: ResponseCounts;
  /** AudioResponse events (the decoded PCM of each answer; one per AudioData). */
  audioResponse: number;
  /** Reconnects the devices' clients went through (not counting stateful ones, which they do not see). */
  reconnects: number;
  /** Sum of the final session records' `audioPacketsSent` (undefined when no session could be stopped). */
  serverPackets: number | undefined;
  p50Ms: number | undefined;
  p99Ms: number | undefined;
  maxMs: number | undefined;
  /** Distinct Error event texts with their counts. */
  errors: { message: string; count: number }[];
  /** Registered simulated devices that are still registered after the run, and why. */
  leftRegistered: LeftDevice[];
  /** Devices the run deleted (with --admin-token). */
  deleted: number;
  deletionSkipped: boolean;
  interrupted: Interruption | undefined;
  /**
   * Nothing lost, duplicated or failed, not interrupted, and with --admin-token nothing left registered
   * (the devices would count against DeviceManagement.MaxDevices): the CLI exits 0.
   */
  ok: boolean;
}

/** A simulated device the run leaves registered: its id, and why it was not deleted. */
export interface LeftDevice {
  deviceId: string;
  reason: string;
}

/** A run ended early (simulate's `stop`): why, and how long it had streamed (undefined: it had not begun). */
export interface Interruption {
  reason: string;
  streamedSeconds: number | undefined;
}

export interface RunFacts {
  url: string;
  protocol: SimProtocol;
  seconds: number;
  drops: SimulationReport['drops'];
  statefulReconnect: boolean;
  lateMs: number;
  leftRegistered: LeftDevice[];
  deleted: number;
  deletionSkipped: boolean;
  interrupted: Interruption | undefined;
}

/** Nearest-rank percentile of ascending `sorted` values. */
export function percentile(sorted: readonly number[], p: number): number | undefined {
  if (sorted.length === 0) return undefined;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1];
}

function add<T extends object>(rows: T[], zero: T): T {
  const out = { ...zero } as Record<string, number>;
  for (const row of rows) for (const [k, v] of Object.entries(row)) out[k] = (out[k] ?? 0) + (v as number);
  return out as T;
}

export function summarise(facts: RunFacts, devices: SimDevice[]): SimulationReport {
  const tallies = devices.map((d) => d.tally.summary(d.serverPackets));
  const latencies = tallies.flatMap((t) => t.latenciesMs).sort((a, b) => a - b);
  const errors = new Map<string, number>();
  for (const d of devices) for (const [m, n] of d.errorTexts) errors.set(m, (errors.get(m) ?? 0) + n);
  const stopped = devices.filter((d) => d.serverPackets !== undefined);
  const failures = devices.filter((d) => d.failure).map((d) => ({ deviceId: d.deviceId, reason: d.failure! }));
  const packets = add(tallies.map((t) => t.packets), { due: 0, heldBack: 0, processed: 0, refused: 0, lost: 0, duplicated: 0, late: 0 });
  const responses = add(tallies.map((t) => t.responses), { expected: 0, received: 0, answered: 0, lost: 0, duplicated: 0, late: 0 });
  const clean = packets.lost + packets.duplicated + responses.lost + responses.duplicated === 0;
  return {
    ...facts,
    devices: devices.length,
    failures,
    packets,
    responses,
    audioResponse: devices.reduce((n, d) => n + d.audioResponses, 0),
    reconnects: devices.reduce((n, d) => n + d.reconnects, 0),
    serverPackets: stopped.length > 0 ? stopped.reduce((n, d) => n + d.serverPackets!, 0) : undefined,
    p50Ms: percentile(latencies, 50),
    p99Ms: percentile(latencies, 99),
    maxMs: latencies.at(-1),
    errors: [...errors].map(([message, count]) => ({ message, count })).sort((a, b) => b.count - a.count),
    ok: clean && failures.length === 0 && packets.due > 0 && !facts.interrupted && (facts.deletionSkipped || facts.leftRegistered.length === 0),
  };
}

const ms = (v: number | undefined): string => (v === undefined ? '-' : v.toFixed(1));

function table(header: string[], rows: string[][]): string[] {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]): string => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
  return [line(header), ...rows.map(line)];
}

/** The report as the CLI prints it: what ran, a table of packets and responses, then notes. */
export function formatSimulationReport(r: SimulationReport): string {
  const drops = r.drops ? `, every connection dropped every ${r.drops.everySeconds} s for ${r.drops.forMs} ms (${r.drops.count} drops)` : '';
  const stateful = r.statefulReconnect ? ', stateful reconnect asked for' : '';
  const { packets: p, responses: q } = r;
  const out = [
    `voice-hub simulate: ${r.devices} device(s) x ${r.seconds} s against ${r.url} (${r.protocol} protocol${drops}${stateful})`,
    ...(r.interrupted ? [interruptionText(r.interrupted)] : []),
    '',
    ...table(['', 'expected', 'arrived', 'lost', 'duplicated', 'late'], [
      ['packets', String(p.due), String(p.processed), String(p.lost), String(p.duplicated), String(p.late)],
      ['responses', String(q.expected), String(q.answered), String(q.lost), String(q.duplicated), String(q.late)],
    ]),
    '',
    `packets: expected = due (one per 20 ms), arrived = AudioProcessed came; responses: expected = forwarded upstream by the service, arrived = matched echo answers; late = over ${r.lateMs} ms after the send`,
  ];
  if (p.heldBack > 0 || r.reconnects > 0) out.push(`${r.reconnects} reconnect(s); ${p.heldBack} packet(s) held back while a device was not in its session (counted lost)`);
  if (p.refused > 0) out.push(`${p.refused} packet(s) refused by the service with an Error`);
  if (r.maxMs !== undefined) {
    out.push(`round trip (SendAudioData sent -> its echo answer back, upstream and Opus decode included): p50 ${ms(r.p50Ms)} ms, p99 ${ms(r.p99Ms)} ms, max ${ms(r.maxMs)} ms`);
  }
  if (r.serverPackets !== undefined) out.push(`the service counted ${r.serverPackets} packet(s) forwarded upstream (audioPacketsSent)`);
  for (const e of r.errors.slice(0, 5)) out.push(`Error event x${e.count}: ${e.message}`);
  for (const f of r.failures.slice(0, 10)) out.push(`device ${f.deviceId} failed: ${f.reason}`);
  if (r.failures.length > 10) out.push(`... and ${r.failures.length - 10} more failed device(s)`);
  if (r.failures.some((f) => /HTTP 409/.test(f.reason))) {
    out.push(`registrations count against ${MAX_DEVICES_SHIPPED}: raise it (--DeviceManagement.MaxDevices 100) or delete old devices`);
  }
  const deleteByHand = 'delete them with DELETE /api/device/<id> and an admin token (voice-hub token admin)';
  if (r.deletionSkipped && r.leftRegistered.length > 0) {
    out.push(
      `no --admin-token: the ${r.leftRegistered.length} simulated device(s) (${r.leftRegistered[0]!.deviceId}...) stay registered and count against ` +
        `${MAX_DEVICES_SHIPPED}; ${deleteByHand}`,
    );
  } else if (!r.deletionSkipped) {
    if (r.deleted > 0) out.push(`${r.deleted} simulated device(s) deleted`);
    // One line per reason (401 for every device is one line), naming the devices.
    const byReason = new Map<string, string[]>();
    for (const left of r.leftRegistered) byReason.set(left.reason, [...(byReason.get(left.reason) ?? []), left.deviceId]);
    for (const [reason, ids] of byReason) out.push(`could not delete ${ids.length} simulated device(s) (${ids.join(', ')}): ${reason}`);
    if (r.leftRegistered.length > 0) {
      out.push(`${r.leftRegistered.length} simulated device(s) stay registered and count against ${MAX_DEVICES_SHIPPED}; ${deleteByHand}`);
    } else if (r.deleted === 0) {
      out.push('no simulated device was registered: nothing to delete');
    }
  }
  const lost = p.lost + q.lost;
  const duplicated = p.duplicated + q.duplicated;
  const left = r.deletionSkipped || r.leftRegistered.length === 0 ? '' : `, ${r.leftRegistered.length} device(s) left registered`;
  const counts = `${lost} lost, ${duplicated} duplicated, ${r.failures.length} device(s) failed${left}`;
  out.push(r.ok ? 'result: OK (nothing lost or duplicated)' : r.interrupted ? `result: INTERRUPTED (${counts})` : `result: FAILED (${counts})`);
  // Failures and Error events quote what the service at --url answered, which may be anything.
  return out.map(oneLine).join('\n') + '\n';
}

function interruptionText(i: Interruption): string {
  return i.streamedSeconds === undefined
    ? `interrupted (${i.reason}) while setting up: nothing was streamed`
    : `interrupted (${i.reason}) after ${i.streamedSeconds.toFixed(1)} s of streaming: the counts cover what was due until then`;
}
