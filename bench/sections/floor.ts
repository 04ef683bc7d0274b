// 3d. The floor of the hub path (issue 16): what the socket work of one round trip costs with nothing
// else (bench/servers/floor-server.ts, driven by the same load client and echo server as 3a/3b, each
// paired with voice-hub's in rounds, see echoUpstreamRuns), and
// what the Opus decoder alone costs per packet (the same packets, native libopus called directly: the
// library the service decodes with by default, without our addon, PCM handling or Base64). Their sum per round trip is the floor; voice-hub's full path
// is reported as CPU per round trip over that floor, from the same run.
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Decoder } from '@evan/opus';
import type { Session } from '../lib/api.js';
import { median } from '../lib/builds.js';
import type { BenchContext, Section } from '../lib/context.js';
import { DIST, ROOT, tsxArgs, waitForOutput, type Child } from '../lib/proc.js';
import { fmt, percentile, type Row } from '../lib/report.js';
import type { Protocol } from '../lib/signalr-raw.js';
import { answeredShare, echoUpstreamRuns, medianRound, perCpu, roundFigures, type EchoRound, type EchoRun } from './hub.js';

/** Target: voice-hub's CPU per round trip within this factor of the floor's. */
export const FLOOR_TARGET = 1.5;
/**
 * The ratio holds only when the answers kept up: the share of round trips whose AudioResponse reached
 * member 2 within the window (a few are always in flight at its end).
 */
const MIN_ANSWERED = 0.9;

/** `decode`: the floor also decodes every answer (on its event loop), as section 4's floor. */
export async function startFloorServer(ctx: BenchContext, upstreamUrl: string, decode = false): Promise<Child & { url: string }> {
  const child = ctx.procs.spawn(process.execPath, [...ctx.procs.runtimeFlags, ...tsxArgs('servers/floor-server.ts', [DIST, upstreamUrl, ...(decode ? ['decode'] : [])])]);
  const m = await waitForOutput(child, /listening on (http:\/\/127\.0\.0\.1:\d+)/, 60_000);
  return { ...child, url: m[1]! };
}

/** Sessions as the floor takes them: no registration, ids shaped like the service's. */
export function floorSessions(count: number): Session[] {
  return Array.from({ length: count }, (_, i) => ({ id: `floor-${i}`, token: 'floor', sessionId: randomUUID() }));
}

/**
 * Packets per CPU-second of native libopus' opus_decode alone over the fixture (@evan/opus), in this
 * process (the orchestrator is otherwise idle now): the median of rounds after the first quarter.
 */
export async function decodeFloor(ctx: BenchContext): Promise<{ perCpuSecond: number; usPerPacket: number }> {
  const packets = (JSON.parse(readFileSync(path.join(ROOT, 'test/fixtures/speech-16k-mono.packets.json'), 'utf8')) as string[])
    .map((p) => Buffer.from(p, 'base64'));
  const decoder = new Decoder({ channels: 1, sample_rate: 16000 });
  const repeat = 20;
  const rounds = ctx.quick ? 8 : 20;
  const ms: number[] = [];
  let samples = 0;
  for (let r = 0; r < rounds; r++) {
    const t0 = process.cpuUsage();
    for (let k = 0; k < repeat; k++) for (const p of packets) samples += decoder.decode(p).length / 2;
    const d = process.cpuUsage(t0);
    ms.push((d.user + d.system) / 1000);
  }
  if (samples === 0) throw new Error('the decoder decoded nothing');
  const steady = percentile(ms.slice(Math.floor(ms.length / 4)), 50);
  const perPacketMs = steady / (repeat * packets.length);
  return { perCpuSecond: 1000 / perPacketMs, usPerPacket: perPacketMs * 1000 };
}

const label = (p: Protocol): string => (p === 'json' ? 'JSON' : 'MessagePack');

/** The rows of 3d: each floor run, the decoder alone, and voice-hub over the floor per run. */
export function floorRows(runs: EchoRun[], decode: { perCpuSecond: number; usPerPacket: number }): Row[] {
  const rows: Row[] = [];
  for (const run of runs) {
    const f = medianRound(run).floor;
    rows.push({
      section: '3d', name: `floor: socket work of one round trip, ${label(run.protocol)}, ${run.window} in flight`, value: median(run.rounds.map((r) => perCpu(r.floor))), unit: 'rt/CPU-s',
      detail: { ...f },
      note: `${Math.round(f.processed / f.wall)} rt/s; AudioProcessed p99 ${fmt(f.processedLatency.p99 ?? NaN, 'ms')}, AudioResponse p99 ${fmt(f.responseLatency.p99 ?? NaN, 'ms')}; echo server ${(f.cpu.upstream / f.wall * 100).toFixed(0)}% CPU, load ${(f.loadCpu / f.wall * 100).toFixed(0)}%${f.lost ? `; ${f.lost} never processed` : ''}${run.rounds.length > 1 ? `; rounds ${roundFigures(run, 'floor')} rt/CPU-s, the median shown; the figures before it are from the round 3a/3b report` : ''}`,
    });
  }
  rows.push({
    section: '3d', name: 'floor: Opus decode alone (native libopus, same packets)', value: decode.perCpuSecond, unit: 'pkt/CPU-s',
    note: `${decode.usPerPacket.toFixed(1)} us per 20 ms packet`,
  });
  for (const run of runs) {
    // CPU per round trip: the floor pays the socket work and one decode; voice-hub pays everything.
    // Each round's ratio is made of two runs measured one right after the other; the row is their median.
    const floorUs = (r: EchoRound): number => 1e6 / perCpu(r.floor) + decode.usPerPacket;
    const serviceUs = (r: EchoRound): number => 1e6 / perCpu(r.service);
    const ratios = run.rounds.map((r) => serviceUs(r) / floorUs(r));
    const ratio = median(ratios);
    const socketOnly = median(run.rounds.map((r) => serviceUs(r) / (1e6 / perCpu(r.floor))));
    const service = median(run.rounds.map((r) => perCpu(r.service)));
    const floorSockets = median(run.rounds.map((r) => perCpu(r.floor)));
    // A round trip ends at AudioProcessed; when voice-hub's answers fall behind, the window holds less
    // of the return path's work than of the round trips it counts, and the ratio reads too low: every
    // round must have kept up.
    const keptUp = run.rounds.every((r) => r.service.lost === 0 && answeredShare(r.service) >= MIN_ANSWERED);
    const answered = (side: keyof EchoRound): string => run.rounds.map((r) => (answeredShare(r[side]) * 100).toFixed(0)).join('/');
    rows.push({
      section: '3d', name: `voice-hub / floor, ${label(run.protocol)}, ${run.window} in flight (CPU per round trip)`, value: 1e6 / service, unit: 'us/rt',
      baseline: { name: 'floor (sockets + decode)', value: 1e6 / floorSockets + decode.usPerPacket, unit: 'us/rt' },
      ratio,
      target: { text: `<= ${FLOOR_TARGET}x the floor, answers kept up`, pass: ratio <= FLOOR_TARGET && keptUp },
      note: `median of ${run.rounds.length} round${run.rounds.length > 1 ? 's' : ''}' ratios (${ratios.map((x) => x.toFixed(2)).join(', ')}); voice-hub ${Math.round(service).toLocaleString('en-US')} rt/CPU-s; floor sockets ${Math.round(floorSockets).toLocaleString('en-US')} rt/CPU-s + decode ${decode.usPerPacket.toFixed(1)} us; against the socket work alone ${socketOnly.toFixed(2)}x; answers within the window: voice-hub ${answered('service')} %, floor ${answered('floor')} % of round trips`,
    });
  }
  return rows;
}

export const floorSection: Section = {
  id: 'floor',
  number: '3d',
  title: 'Floor of the hub path (socket work alone, decoder alone)',
  async run(ctx) {
    // The floor's runs are made beside voice-hub's of 3a/3b (once per bench run, by section 3 or here).
    const { runs } = await echoUpstreamRuns(ctx);
    return floorRows(runs, await decodeFloor(ctx));
  },
};
