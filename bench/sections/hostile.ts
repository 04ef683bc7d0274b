// 9. Hostile clients (issue 12): 50 connections, each sending frames packed with millions of tiny
// valid hub messages for 10 s (5 million MessagePack pings, 1.5 million JSON pings, frames of pings
// just under the frame limit, before and after the handshake), while 20 devices stream in real time
// through the echo server. Targets: the devices lose nothing, RSS grows by less than 64 MiB, /health
// answers with p99 under 50 ms (probed every 20 ms from this process). The baseline is /health while
// the devices stream alone, for 4 s before the hostile clients start.
import { schemaDefaults } from '../../src/config/schema-keys.js';
import { startSessions } from '../lib/api.js';
import { runLoad } from '../lib/child.js';
import type { Section } from '../lib/context.js';
import { cpuWindow, memory, sleep, startEchoServer, startService } from '../lib/proc.js';
import { latencySummary, type Row } from '../lib/report.js';

const DEVICES = 20;
const CONNECTIONS = 50;
const RSS_TARGET_MIB = 64;
const HEALTH_P99_TARGET_MS = 50;
/** Hub.MaximumFrameSize as shipped. */
const FRAME_LIMIT = (schemaDefaults() as { Hub: { MaximumFrameSize: number } }).Hub.MaximumFrameSize;

interface StreamResult {
  sent: number;
  lostResponses: number;
  lostProcessed: number;
  errors: number;
  lastError: string;
  responseLatency: { p99: number };
}

interface HostileResult {
  sent: Record<string, number>;
  endings: Record<string, number>;
  failures: number;
  lastFailure: string;
}

/** GET /health every `everyMs` until `until` settles; the latencies in ms. */
async function probeHealth(url: string, everyMs: number, until: Promise<unknown>): Promise<{ latencies: number[]; failed: number }> {
  let done = false;
  void until.finally(() => (done = true));
  const latencies: number[] = [];
  let failed = 0;
  while (!done) {
    const t0 = performance.now();
    try {
      const res = await fetch(`${url}/health`, { headers: { accept: 'text/plain' }, signal: AbortSignal.timeout(5000) });
      await res.arrayBuffer();
      latencies.push(performance.now() - t0);
    } catch {
      failed++;
    }
    await sleep(everyMs);
  }
  return { latencies, failed };
}

export const hostileSection: Section = {
  id: 'hostile',
  number: '9',
  title: `Hostile frames (${CONNECTIONS} connections) while ${DEVICES} devices stream in real time`,
  async run(ctx) {
    const echo = await startEchoServer(ctx.procs);
    const service = await startService(ctx.procs, { upstreamUrl: echo.url, args: ['--DeviceManagement.MaxDevices', '1000'] });
    try {
      const sessions = await startSessions(service.url, DEVICES, 'hostile');
      const durationMs = ctx.seconds(10, 5) * 1000;
      const warmupMs = 1000;
      const baselineMs = 4000;
      await sleep(500);
      const stream = runLoad<StreamResult>(ctx.procs, 'stream.ts', {
        url: service.url, protocol: 'json', sessions, warmupMs, durationMs: baselineMs + durationMs,
        pids: { server: service.pid, upstream: echo.pid }, serverPid: service.pid,
      }, durationMs + 120_000);
      await sleep(warmupMs);
      const calm = await probeHealth(service.url, 20, sleep(baselineMs));
      const before = memory(service.pid).rss;
      const cpu = cpuWindow(service.pid);
      const hostile = runLoad<HostileResult>(ctx.procs, 'hostile.ts', {
        url: service.url, connections: CONNECTIONS, durationMs, frameLimit: FRAME_LIMIT,
      }, durationMs + 120_000);
      let peak = before;
      const sampling = setInterval(() => (peak = Math.max(peak, memory(service.pid).rss)), 50);
      const health = probeHealth(service.url, 20, hostile.catch(() => undefined));
      const [h, probes] = await Promise.all([hostile, health]);
      const serviceCpu = cpu.end();
      clearInterval(sampling);
      const s = await stream;
      peak = Math.max(peak, memory(service.pid).rss);
      const growth = (peak - before) / 1048576;
      const healthSummary = latencySummary(probes.latencies);
      const calmSummary = latencySummary(calm.latencies);
      const frames = Object.values(h.sent).reduce((a, b) => a + b, 0);
      const endings = Object.entries(h.endings).map(([k, v]) => `${k} x${v}`).join(', ');
      ctx.log(`hostile: ${frames} frames; ${endings}; ${h.failures} connection failures${h.failures ? ` (${h.lastFailure})` : ''}; service CPU ${(serviceCpu.cpu / serviceCpu.wall * 100).toFixed(0)}% of a core`);
      const lost = s.lostResponses;
      const devices = `${s.sent} packets sent, ${lost} without AudioResponse, ${s.lostProcessed} without AudioProcessed, ${s.errors} Error events${s.errors ? ` (${s.lastError})` : ''}; p99 send -> AudioResponse ${s.responseLatency.p99.toFixed(1)} ms`;
      const rows: Row[] = [
        {
          section: '9', name: `${DEVICES} devices beside ${CONNECTIONS} hostile connections: lost packets`, value: lost, unit: 'packets',
          target: { text: '0', pass: lost === 0 && s.errors === 0 && s.lostProcessed === 0 },
          detail: { stream: s }, note: devices,
        },
        {
          section: '9', name: 'hostile frames: RSS growth', value: growth, unit: 'MiB',
          target: { text: `< ${RSS_TARGET_MIB} MiB`, pass: growth < RSS_TARGET_MIB },
          detail: { before, peak, hostile: h },
          note: `RSS ${(before / 1048576).toFixed(1)} -> peak ${(peak / 1048576).toFixed(1)} MiB; ${frames} hostile frames (${Object.entries(h.sent).map(([k, v]) => `${k} x${v}`).join(', ')}); ended: ${endings}`,
        },
        {
          section: '9', name: 'hostile frames: /health p99', value: healthSummary.p99, unit: 'ms',
          baseline: { name: '/health p99, devices streaming alone', value: calmSummary.p99, unit: 'ms' },
          ratio: healthSummary.p99 / calmSummary.p99,
          target: { text: `< ${HEALTH_P99_TARGET_MS} ms`, pass: healthSummary.p99 < HEALTH_P99_TARGET_MS && probes.failed === 0 },
          detail: { health: healthSummary, calm: calmSummary, failed: probes.failed, serviceCpu },
          note: `${healthSummary.count} probes, p50 ${healthSummary.p50.toFixed(1)} ms, max ${healthSummary.max.toFixed(1)} ms, ${probes.failed} failed (devices alone: p50 ${calmSummary.p50.toFixed(1)} ms, p99 ${calmSummary.p99.toFixed(1)} ms); service CPU ${(serviceCpu.cpu / serviceCpu.wall * 100).toFixed(0)}% of a core`,
        },
      ];
      return rows;
    } finally {
      await service.stop();
      await echo.stop();
    }
  },
};
