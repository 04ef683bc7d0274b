// 1. Ceiling: what bare uWebSockets.js does on this machine now. An HTTP "hello" route under wrk and
// a WebSocket echo with one message in flight per connection and with many; the HTTP and hub
// figures of sections 2 and 3 are read against these.
import { runLoad } from '../lib/child.js';
import type { BenchContext, Section } from '../lib/context.js';
import type { Row } from '../lib/report.js';
import { runWrk, type WrkResult } from '../lib/wrk.js';

export interface EchoResult {
  wall: number;
  cpu: { server: number };
  loadCpu: number;
  roundTrips: number;
  latency: { p50: number; p99: number; max: number; count: number };
}

/** Connections and windows match the hub benchmark's senders (50 sessions). */
export const ECHO_CONNECTIONS = 50;
export const SATURATING_WINDOW = 16;

export function helloBaseline(ctx: BenchContext): Promise<WrkResult> {
  return ctx.once('hello', async () => {
    const server = await ctx.startCeilingServer();
    try {
      return await runWrk(server.url, server.pid, { path: '/hello' }, ctx.seconds(5, 2));
    } finally {
      await server.stop();
    }
  });
}

export function echoBaseline(ctx: BenchContext, window: number): Promise<EchoResult & { perCpuSecond: number }> {
  return ctx.once(`echo-${window}`, async () => {
    const server = await ctx.startCeilingServer();
    try {
      const r = await runLoad<EchoResult>(ctx.procs, 'echo.ts', {
        url: `ws://127.0.0.1:${server.port}/echo`,
        connections: ECHO_CONNECTIONS,
        window,
        warmupMs: 1000,
        durationMs: ctx.seconds(5, 2) * 1000,
        pids: { server: server.pid },
      }, 60_000);
      return { ...r, perCpuSecond: r.roundTrips / r.cpu.server };
    } finally {
      await server.stop();
    }
  });
}

export const ceilingSection: Section = {
  id: 'ceiling',
  number: '1',
  title: 'Ceiling: bare uWS',
  async run(ctx) {
    const hello = await helloBaseline(ctx);
    const one = await echoBaseline(ctx, 1);
    const many = await echoBaseline(ctx, SATURATING_WINDOW);
    const rows: Row[] = [
      {
        section: '1', name: 'bare uWS GET /hello (wrk -c32)', value: hello.perCpuSecond, unit: 'req/CPU-s',
        detail: { ...hello },
        note: `${Math.round(hello.rps)} req/s, p50 ${hello.p50Ms.toFixed(2)} ms, p99 ${hello.p99Ms.toFixed(2)} ms`,
      },
      {
        section: '1', name: `bare uWS WS echo, 1 in flight x ${ECHO_CONNECTIONS}`, value: one.perCpuSecond, unit: 'rt/CPU-s',
        detail: { ...one },
        note: `${Math.round(one.roundTrips / one.wall)} rt/s, p50 ${one.latency.p50.toFixed(2)} ms, p99 ${one.latency.p99.toFixed(2)} ms`,
      },
      {
        section: '1', name: `bare uWS WS echo, ${SATURATING_WINDOW} in flight x ${ECHO_CONNECTIONS}`, value: many.perCpuSecond, unit: 'rt/CPU-s',
        detail: { ...many },
        note: `${Math.round(many.roundTrips / many.wall)} rt/s, p50 ${many.latency.p50.toFixed(2)} ms, p99 ${many.latency.p99.toFixed(2)} ms`,
      },
    ];
    return rows;
  },
};
