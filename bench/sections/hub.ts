// 3. Hub round trips: 50 sessions x 2 real hub connections, SendAudioData with 20 ms Opus packets
// forwarded upstream to the echo server; invoke -> AudioProcessed at the second member, with one call
// in flight per session (3a) and saturating (3b), JSON and MessagePack. Then the same forward path
// with an upstream that never answers (what the hub itself costs), and the return path alone
// (a talking upstream -> decode -> AudioResponse at both members). The official client runs the
// same flow once per protocol to show the raw load clients speak the protocol it speaks.
// Each 3a/3b run is paired with the same run against the floor server (section 3d, bench/sections/floor.ts),
// in rounds whose median 3a/3b report.
import { startSessions, type Session } from '../lib/api.js';
import { runLoad } from '../lib/child.js';
import type { BenchContext, Section } from '../lib/context.js';
import { startBenchUpstream, startEchoServer, startService } from '../lib/proc.js';
import type { Row } from '../lib/report.js';
import type { Protocol } from '../lib/signalr-raw.js';
import { echoBaseline, SATURATING_WINDOW } from './ceiling.js';
import { floorSessions, startFloorServer } from './floor.js';
import { verifyWithOfficialClient } from './official-client.js';

export const SESSIONS = 50;
export const ROUND_TRIP_TARGET = 25_000;
export const P99_TARGET_MS = 5;
/** Upstream audio per session in the return-path run (twice real time). */
const TALK_RATE = 100;

interface Summary { p50: number; p99: number; max: number; count: number }
export interface HubLoadResult {
  wall: number;
  cpu: { server: number; upstream: number };
  loadCpu: number;
  sent: number;
  processed: number;
  responsesA: number;
  responsesB: number;
  errors: number;
  lastError: string;
  lost: number;
  processedLatency: Summary;
  responseLatency: Summary;
}

// The saturating runs send as fast as round trips come back, far above a device's 50 packets a second:
// the per-connection message budget (Hub.MessageRate/MessageBurst, section 9) is opened so that this
// section measures what the hub can carry, not where the budget closes a connection.
const MAX_DEVICES = ['--DeviceManagement.MaxDevices', '1000', '--Hub.MessageRate', '1000000', '--Hub.MessageBurst', '1000000'];
const ROUND_TO_TEXT = ROUND_TRIP_TARGET.toLocaleString('en-US');

export function load(ctx: BenchContext, url: string, pids: Record<string, number>, sessions: Session[], protocol: Protocol, mode: 'roundtrip' | 'listen', window: number): Promise<HubLoadResult> {
  return runLoad<HubLoadResult>(ctx.procs, 'hub.ts', {
    url, protocol, sessions, mode, window, warmupMs: 1000, durationMs: ctx.seconds(5, 2) * 1000, pids,
  }, 120_000);
}

const label = (p: Protocol): string => (p === 'json' ? 'JSON' : 'MessagePack');

function problems(r: HubLoadResult): string {
  const parts: string[] = [];
  if (r.errors > 0) parts.push(`${r.errors} Error events (last: ${r.lastError})`);
  if (r.lost > 0) parts.push(`${r.lost} never processed`);
  return parts.length ? `; ${parts.join(', ')}` : '';
}

/**
 * AudioResponses member 2 got in the window, per round trip (AudioProcessed) in it. A round trip ends at
 * AudioProcessed, before its answer is decoded: when the return path falls behind (the decoder threads
 * starved of CPU, the upstream read paused), the window holds fewer answers than round trips, and the
 * work of the missing ones is not in its CPU either, so rt/CPU-s alone reads better than the service did.
 */
export const answeredShare = (r: HubLoadResult): number => (r.processed > 0 ? r.responsesB / r.processed : 0);

function note(r: HubLoadResult, withResponse: boolean): string {
  const p = r.processedLatency;
  const resp = withResponse
    ? `; AudioResponse p50 ${r.responseLatency.p50.toFixed(2)} ms, p99 ${r.responseLatency.p99.toFixed(2)} ms, ${Math.round(r.responsesB / r.wall)}/s at member 2 (${(answeredShare(r) * 100).toFixed(0)} % of the round trips)`
    : '';
  return `${Math.round(r.processed / r.wall)} rt/s; AudioProcessed p50 ${p.p50.toFixed(2)} ms, p99 ${p.p99.toFixed(2)} ms${resp}; upstream ${(r.cpu.upstream / r.wall * 100).toFixed(0)}% CPU, load ${(r.loadCpu / r.wall * 100).toFixed(0)}%${problems(r)}`;
}

/** One round of 3a/3b: voice-hub's run and the floor's (3d) under the same load, one right after the other. */
export interface EchoRound {
  service: HubLoadResult;
  floor: HubLoadResult;
}

/** The rounds of one protocol and window. */
export interface EchoRun {
  protocol: Protocol;
  window: number;
  rounds: EchoRound[];
}

/**
 * Rounds per protocol and window. This machine's speed drifts within a minute (one pair read 1.09x and,
 * a quarter of an hour later, 1.96x), so one pair lets a fast or slow minute decide a ratio; the order of
 * the pair is reversed every other round and 3d takes the median of the rounds' ratios.
 */
const echoRounds = (ctx: BenchContext): number => (ctx.quick ? 1 : 3);

/** Round trips (AudioProcessed at member 2) per CPU-second of the server under test. */
export const perCpu = (r: HubLoadResult): number => r.processed / r.cpu.server;

/** The round whose voice-hub run is the median by rt/CPU-s: what 3a/3b report. */
export function medianRound(run: EchoRun): EchoRound {
  const sorted = [...run.rounds].sort((a, b) => perCpu(a.service) - perCpu(b.service));
  return sorted[(sorted.length - 1) >> 1]!;
}

/** Every round's rt/CPU-s of one side, for a row's note. */
export const roundFigures = (run: EchoRun, side: keyof EchoRound): string =>
  run.rounds.map((r) => Math.round(perCpu(r[side])).toLocaleString('en-US')).join(', ');

/**
 * 3a/3b: the full flow through the echo server (and the official client's check), 1 and
 * SATURATING_WINDOW in flight per protocol, each run paired with the same run against the floor server
 * (3d) on the same echo server, in rounds (echoRounds). Once per bench run, for sections 3 and 3d.
 */
export function echoUpstreamRuns(ctx: BenchContext): Promise<{ rows: Row[]; runs: EchoRun[] }> {
  return ctx.once('hub-echo-upstream', async () => {
    const one = await echoBaseline(ctx, 1);
    const many = await echoBaseline(ctx, SATURATING_WINDOW);
    const rows: Row[] = [];
    const runs: EchoRun[] = [];
    const results: Partial<Record<Protocol, HubLoadResult>> = {};
    const echo = await startEchoServer(ctx.procs);
    try {
      const floor = await startFloorServer(ctx, echo.url);
      const service = await startService(ctx.procs, { upstreamUrl: echo.url, args: MAX_DEVICES });
      const pids = { server: service.pid, upstream: echo.pid };
      const floorSide = (protocol: Protocol, window: number): Promise<HubLoadResult> =>
        load(ctx, floor.url, { server: floor.pid, upstream: echo.pid }, floorSessions(SESSIONS), protocol, 'roundtrip', window);
      try {
        const sessions = await startSessions(service.url, SESSIONS, 'hub');
        rows.push(await verifyWithOfficialClient(service.url, sessions));
        const measure = async (protocol: Protocol, window: number): Promise<EchoRun> => {
          const run: EchoRun = { protocol, window, rounds: [] };
          for (let round = 0; round < echoRounds(ctx); round++) {
            const serviceSide = (): Promise<HubLoadResult> => load(ctx, service.url, pids, sessions, protocol, 'roundtrip', window);
            if (round % 2 === 0) {
              const a = await serviceSide();
              run.rounds.push({ service: a, floor: await floorSide(protocol, window) });
            } else {
              const f = await floorSide(protocol, window);
              run.rounds.push({ service: await serviceSide(), floor: f });
            }
          }
          runs.push(run);
          return run;
        };
        const rounds = (run: EchoRun): string => (run.rounds.length > 1 ? `; rounds ${roundFigures(run, 'service')} rt/CPU-s, the median round shown` : '');
        for (const protocol of ['json', 'messagepack'] as const) {
          const oneRun = await measure(protocol, 1);
          const a = medianRound(oneRun).service;
          results[protocol] = a;
          const json = results.json!;
          const rtTarget = protocol === 'json'
            ? { text: `>= ${ROUND_TRIP_TARGET.toLocaleString('en-US')} rt/CPU-s`, pass: perCpu(a) >= ROUND_TRIP_TARGET && a.lost === 0 }
            : { text: `> JSON (${Math.round(perCpu(json)).toLocaleString('en-US')})`, pass: perCpu(a) > perCpu(json) && a.lost === 0 };
          rows.push({
            section: '3a', name: `${label(protocol)}, echo upstream, 1 in flight x ${SESSIONS}`, value: perCpu(a), unit: 'rt/CPU-s',
            baseline: { name: 'bare WS echo, 1 in flight', value: one.perCpuSecond, unit: 'rt/CPU-s' },
            ratio: perCpu(a) / one.perCpuSecond, target: rtTarget, detail: { ...a }, note: note(a, true) + rounds(oneRun),
          });
          rows.push({
            section: '3a', name: `${label(protocol)}, p99 invoke -> AudioProcessed at member 2`, value: a.processedLatency.p99, unit: 'ms',
            baseline: { name: 'bare WS echo p99', value: one.latency.p99, unit: 'ms' },
            ratio: a.processedLatency.p99 / one.latency.p99,
            target: { text: `< ${P99_TARGET_MS} ms`, pass: a.processedLatency.p99 < P99_TARGET_MS },
          });
          const manyRun = await measure(protocol, SATURATING_WINDOW);
          const b = medianRound(manyRun).service;
          rows.push({
            section: '3b', name: `${label(protocol)}, echo upstream, ${SATURATING_WINDOW} in flight x ${SESSIONS}`, value: perCpu(b), unit: 'rt/CPU-s',
            baseline: { name: `bare WS echo, ${SATURATING_WINDOW} in flight`, value: many.perCpuSecond, unit: 'rt/CPU-s' },
            ratio: perCpu(b) / many.perCpuSecond, detail: { ...b }, note: note(b, true) + rounds(manyRun),
          });
          rows.push({
            section: '3b', name: `${label(protocol)}, ${SATURATING_WINDOW} in flight: answered round trips (AudioResponse at member 2)`,
            value: b.responsesB / b.cpu.server, unit: 'rt/CPU-s',
            baseline: { name: `bare WS echo, ${SATURATING_WINDOW} in flight`, value: many.perCpuSecond, unit: 'rt/CPU-s' },
            ratio: b.responsesB / b.cpu.server / many.perCpuSecond,
            note: `${(answeredShare(b) * 100).toFixed(0)} % of the round trips answered within the window`,
          });
        }
      } finally {
        await service.stop();
        await floor.stop();
      }
    } finally {
      await echo.stop();
    }
    return { rows, runs };
  });
}

export const hubSection: Section = {
  id: 'hub',
  number: '3',
  title: 'Hub round trips (50 sessions x 2 members)',
  async run(ctx) {
    const one = await echoBaseline(ctx, 1);
    const many = await echoBaseline(ctx, SATURATING_WINDOW);
    const rows: Row[] = [];

    const { rows: echoRows } = await echoUpstreamRuns(ctx);
    rows.push(...echoRows);

    // The forward path alone: an upstream that takes the audio and says nothing.
    const sink = await startBenchUpstream(ctx.procs, 'sink');
    const sinkService = await startService(ctx.procs, { upstreamUrl: sink.url, args: MAX_DEVICES });
    try {
      const sessions = await startSessions(sinkService.url, SESSIONS, 'sink');
      for (const protocol of ['json', 'messagepack'] as const) {
        const a = await load(ctx, sinkService.url, { server: sinkService.pid, upstream: sink.pid }, sessions, protocol, 'roundtrip', 1);
        // The same target, read on the hub's own work: no decode, no return traffic.
        rows.push({
          section: '3a', name: `${label(protocol)}, forward path only (silent upstream), 1 in flight`, value: perCpu(a), unit: 'rt/CPU-s',
          baseline: { name: 'bare WS echo, 1 in flight', value: one.perCpuSecond, unit: 'rt/CPU-s' },
          ratio: perCpu(a) / one.perCpuSecond, detail: { ...a }, note: note(a, false),
          ...(protocol === 'json'
            ? { target: { text: `>= ${ROUND_TO_TEXT} rt/CPU-s (forward path)`, pass: perCpu(a) >= ROUND_TRIP_TARGET && a.lost === 0 } }
            : {}),
        });
      }
    } finally {
      await sinkService.stop();
      await sink.stop();
    }

    // The return path alone: upstream audio -> decode -> AudioResponse (+ AudioData) at both members.
    const talk = await startBenchUpstream(ctx.procs, 'talk', TALK_RATE);
    const talkService = await startService(ctx.procs, { upstreamUrl: talk.url, args: MAX_DEVICES });
    try {
      const sessions = await startSessions(talkService.url, SESSIONS, 'talk');
      for (const protocol of ['json', 'messagepack'] as const) {
        const r = await load(ctx, talkService.url, { server: talkService.pid, upstream: talk.pid }, sessions, protocol, 'listen', 0);
        const value = r.responsesB / r.cpu.server;
        rows.push({
          section: '3c', name: `${label(protocol)}, return path: upstream audio -> AudioResponse x 2 members`, value, unit: 'pkt/CPU-s',
          baseline: { name: `bare WS echo, ${SATURATING_WINDOW} in flight`, value: many.perCpuSecond, unit: 'rt/CPU-s' },
          ratio: value / many.perCpuSecond, detail: { ...r },
          note: `${Math.round(r.responsesB / r.wall)} packets/s offered at ${TALK_RATE}/s per session; member 1 got ${r.responsesA}, member 2 ${r.responsesB}; server ${(r.cpu.server / r.wall * 100).toFixed(0)}% CPU`,
        });
      }
    } finally {
      await talkService.stop();
      await talk.stop();
    }
    return rows;
  },
};
