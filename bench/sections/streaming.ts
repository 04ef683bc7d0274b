// 4. Real-time streaming: N devices (10, 100, 300, 500), each a session with one hub connection sending 50
// packets/s through the echo server, for 30 s (--quick: 5 s). Server CPU as % of one core (all its
// threads: above 100 % when it uses both cores), RSS, lost packets, p99. The baseline is what bare uWS
// spends echoing the same number of messages per second. The load generator shares the machine's
// cores, so its own CPU and the packets it sent late are reported beside: a late generator, not the
// service, would then be what limits the figures. So is the server's main thread: its share of a core,
// and how long it was ready to run but waited for one (all cores were busy then), and so is the whole
// machine: programs, kernel, steal and idle over the same window (/proc/stat). At the latency
// target's device count (and at every count given with --devices) the same load also runs against the
// floor (bench/servers/floor-server.ts, decoding every answer): what a program doing only the socket
// work and the decode reaches on this machine, next to the same generator and echo server.
import { startSessions, type Session } from '../lib/api.js';
import { runLoad } from '../lib/child.js';
import type { Section } from '../lib/context.js';
import { startEchoServer, startService, type Child, type MachineShare } from '../lib/proc.js';
import { fmt, type Row } from '../lib/report.js';
import { echoBaseline } from './ceiling.js';
import { floorSessions, startFloorServer } from './floor.js';

interface Summary { p50: number; p99: number; max: number; count: number }
interface StreamResult {
  devices: number;
  wall: number;
  cpu: { server: number; upstream: number };
  /** The server's main thread over the measured window, s: its CPU, and its wait for a core while ready to run. */
  serverMain: { cpu: number; waiting: number };
  /** Where all the machine's cores went over the measured window, in % of their time. */
  machine: MachineShare;
  loadCpu: number;
  peakRss: number;
  sent: number;
  sentInWindow: number;
  lostResponses: number;
  lostProcessed: number;
  errors: number;
  lastError: string;
  lateSends: number;
  /** How long answers were awaited after the last send (they are while they keep coming, up to 60 s). */
  drainMs: number;
  /** Device connections the server closed during the load, the packets still owed on them, and when the first closed (s into the measured window). */
  closedByService: number;
  lostOnClosed: number;
  firstClosedS?: number;
  /** The load generator's own event-loop delay: what of the latency its own lateness may explain. */
  loopDelayMs: { p50: number; p99: number; max: number };
  processedLatency: Summary;
  responseLatency: Summary;
}

export const DEFAULT_DEVICE_COUNTS = [10, 100, 300, 500];
const CPU_TARGET_PCT = 50;
/** Issue 16: 300 devices talking at once on this 2-core machine, nothing lost, answers within 50 ms. */
const P99_TARGET = { devices: 300, ms: 50 };

/** Where the server's main thread went: the event loop's share of a core, and its wait for one (all cores busy). */
const mainThreadText = (r: StreamResult): string =>
  `main thread ${(r.serverMain.cpu / r.wall * 100).toFixed(0)}% of a core, waiting for a core ${(r.serverMain.waiting / r.wall * 100).toFixed(0)}% of the time`;

/**
 * The whole machine beside the processes: the kernel's share is socket work (loopback TCP on both ends of
 * every connection) that no process's JavaScript shows, and steal is time the hypervisor gave elsewhere.
 */
const machineText = (r: StreamResult): string =>
  `the machine's cores: programs ${r.machine.user.toFixed(0)}%, kernel ${r.machine.kernel.toFixed(0)}% (softirq ${r.machine.softirq.toFixed(0)}%), steal ${r.machine.steal.toFixed(0)}%, idle ${r.machine.idle.toFixed(0)}%`;

export const streamingSection: Section = {
  id: 'streaming',
  number: '4',
  title: 'Real-time streaming (50 packets/s per device)',
  async run(ctx) {
    const echoCeiling = await echoBaseline(ctx, 1);
    const echo = await startEchoServer(ctx.procs);
    const durationMs = ctx.seconds(30, 5) * 1000;
    const stream = (server: Child & { url: string }, sessions: Session[]): Promise<StreamResult> => runLoad<StreamResult>(ctx.procs, 'stream.ts', {
      url: server.url, protocol: 'json', sessions, warmupMs: 1000, durationMs,
      pids: { server: server.pid, upstream: echo.pid }, serverPid: server.pid,
    }, durationMs + 120_000);
    const rows: Row[] = [];
    try {
      for (const n of ctx.options.devices ?? DEFAULT_DEVICE_COUNTS) {
        /** voice-hub's p99 at this count, for the floor's row beside it. */
        let serviceP99 = NaN;
        const service = await startService(ctx.procs, { upstreamUrl: echo.url, args: ['--DeviceManagement.MaxDevices', '1000'] });
        try {
          const sessions = await startSessions(service.url, n, `stream${n}`);
          const r = await stream(service, sessions);
          serviceP99 = r.responseLatency.p99 ?? NaN;
          const cpuPct = (r.cpu.server / r.wall) * 100;
          const bareCpuPct = ((n * 50) / echoCeiling.perCpuSecond) * 100;
          const lost = r.lostResponses;
          const late = r.lateSends > 0 ? `; load generator sent ${r.lateSends} packets late (its own CPU ${(r.loadCpu / r.wall * 100).toFixed(0)}%)` : `; load generator ${(r.loadCpu / r.wall * 100).toFixed(0)}% CPU`;
          const closed = r.closedByService > 0 ? ` (${r.lostOnClosed} of them owed on ${r.closedByService} connections the service closed, the first ${(r.firstClosedS ?? NaN).toFixed(1)} s into the measured window)` : '';
          const summary = `${mainThreadText(r)}; RSS ${(r.peakRss / 1048576).toFixed(1)} MiB; ${r.sent} sent, ${lost} lost${closed} (no AudioResponse ${(r.drainMs / 1000).toFixed(1)} s after the last send), ${r.lostProcessed} without AudioProcessed, ${r.errors} Error events${r.errors ? ` (${r.lastError})` : ''}; p99 to AudioProcessed ${fmt(r.processedLatency.p99 ?? NaN, 'ms')}, to AudioResponse ${fmt(r.responseLatency.p99 ?? NaN, 'ms')} (p50 ${fmt(r.responseLatency.p50 ?? NaN, 'ms')}); echo server ${(r.cpu.upstream / r.wall * 100).toFixed(0)}% CPU${late}; ${machineText(r)}`;
          rows.push({
            section: '4', name: `${n} devices x 50 pkt/s: server CPU`, value: cpuPct, unit: '% of a core',
            baseline: { name: 'bare uWS echoing as many msgs', value: bareCpuPct, unit: '%' },
            ratio: cpuPct / bareCpuPct,
            ...(n === 500 ? { target: { text: `< ${CPU_TARGET_PCT}% of a core`, pass: cpuPct < CPU_TARGET_PCT } } : {}),
            detail: { ...r }, note: summary,
          });
          rows.push({
            section: '4', name: `${n} devices: lost packets`, value: lost, unit: 'packets',
            target: { text: '0', pass: lost === 0 && r.errors === 0 },
          });
          rows.push({
            // No sample at all (everything lost) comes back as null in the generator's JSON.
            section: '4', name: `${n} devices: p99 send -> AudioResponse`, value: r.responseLatency.p99 ?? NaN, unit: 'ms',
            baseline: { name: 'bare WS echo p99', value: echoCeiling.latency.p99, unit: 'ms' },
            ratio: r.responseLatency.p99 / echoCeiling.latency.p99,
            ...(n === P99_TARGET.devices ? { target: { text: `< ${P99_TARGET.ms} ms`, pass: Number.isFinite(r.responseLatency.p99) && r.responseLatency.p99 < P99_TARGET.ms && lost === 0 } } : {}),
          });
          rows.push({
            section: '4', name: `${n} devices: load generator CPU`, value: (r.loadCpu / r.wall) * 100, unit: '% of a core',
            note: `${r.lateSends} packets sent late (a tick of its 2 ms clock came more than 20 ms late); its event-loop delay p99 ${fmt(r.loopDelayMs.p99, 'ms')}, max ${fmt(r.loopDelayMs.max, 'ms')}; echo server ${(r.cpu.upstream / r.wall * 100).toFixed(0)}% CPU`,
          });
          rows.push({ section: '4', name: `${n} devices: peak RSS`, value: r.peakRss, unit: 'B' });
        } finally {
          await service.stop();
        }
        // Counts chosen with --devices trace the latency curve, so the floor runs beside each of them.
        if (n === P99_TARGET.devices || ctx.options.devices) rows.push(await floorRow(n, serviceP99));
      }
    } finally {
      await echo.stop();
    }
    return rows;

    async function floorRow(n: number, serviceP99: number): Promise<Row> {
      const floor = await startFloorServer(ctx, echo.url, true);
      try {
        const f = await stream(floor, floorSessions(n));
        return {
          section: '4', name: `${n} devices: the floor's p99 send -> AudioResponse (socket work and decode only)`, value: f.responseLatency.p99 ?? NaN, unit: 'ms',
          note: `floor CPU ${(f.cpu.server / f.wall * 100).toFixed(0)}% of a core (one thread; ${mainThreadText(f)}), echo server ${(f.cpu.upstream / f.wall * 100).toFixed(0)}%, load generator ${(f.loadCpu / f.wall * 100).toFixed(0)}%; ${f.lostResponses} lost (${(f.drainMs / 1000).toFixed(1)} s after the last send); p50 ${fmt(f.responseLatency.p50 ?? NaN, 'ms')}; voice-hub's p99 is ${(serviceP99 / (f.responseLatency.p99 ?? NaN)).toFixed(2)}x this; ${machineText(f)}`,
        };
      } finally {
        await floor.stop();
      }
    }
  },
};
