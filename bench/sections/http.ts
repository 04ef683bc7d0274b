// 2. HTTP: PUT /api/device/{id}/status with a valid device token, GET /api/device/list with 10
// devices, GET /health (its upstream check shared); requests per server CPU-second beside bare
// uWS' "hello" from the same run.
import { adminToken, registerDevices } from '../lib/api.js';
import type { BenchContext, Section } from '../lib/context.js';
import { startEchoServer, startService } from '../lib/proc.js';
import type { Row } from '../lib/report.js';
import { runWrk, type HttpLoad, type WrkResult } from '../lib/wrk.js';
import { helloBaseline } from './ceiling.js';

export const STATUS_TARGET = 20_000;

/** The section's three requests (bench/compare-http.ts sends them too): a device's status update, the device list as admin, /health. */
export const HTTP_LOADS = ['status', 'list', 'health'] as const;
export type HttpLoadName = (typeof HTTP_LOADS)[number];

export function httpLoads(device: { id: string; token: string }, admin: string): Record<HttpLoadName, HttpLoad> {
  return {
    status: {
      method: 'PUT',
      path: `/api/device/${device.id}/status`,
      headers: { authorization: `Bearer ${device.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ status: 'online', batteryLevel: 87, temperature: 41.5, memoryUsage: 63, cpuUsage: 12 }),
    },
    list: { path: '/api/device/list', headers: { authorization: `Bearer ${admin}` } },
    health: { path: '/health' },
  };
}

function row(name: string, r: WrkResult, hello: WrkResult, target?: Row['target']): Row {
  const problems = r.non2xx + r.socketErrors > 0 ? `; ${r.non2xx} non-2xx, ${r.socketErrors} socket errors` : '';
  return {
    section: '2',
    name,
    value: r.perCpuSecond,
    unit: 'req/CPU-s',
    baseline: { name: 'bare uWS hello', value: hello.perCpuSecond, unit: 'req/CPU-s' },
    ratio: r.perCpuSecond / hello.perCpuSecond,
    ...(target ? { target } : {}),
    detail: { ...r },
    note: `${Math.round(r.rps)} req/s, p50 ${r.p50Ms.toFixed(2)} ms, p99 ${r.p99Ms.toFixed(2)} ms${problems}`,
  };
}

export const httpSection: Section = {
  id: 'http',
  number: '2',
  title: 'HTTP API under wrk',
  async run(ctx: BenchContext) {
    const hello = await helloBaseline(ctx);
    const echo = await startEchoServer(ctx.procs);
    // MaxDevices raised: registrations run 8 at a time, and the list needs exactly 10.
    const service = await startService(ctx.procs, { upstreamUrl: echo.url, args: ['--DeviceManagement.MaxDevices', '1000'] });
    try {
      const devices = await registerDevices(service.url, 10, 'http');
      const admin = await adminToken(service.dataDir);
      const seconds = ctx.seconds(5, 2);
      const loads = httpLoads(devices[0]!, admin);
      const status = await runWrk(service.url, service.pid, loads.status, seconds);
      const list = await runWrk(service.url, service.pid, loads.list, seconds);
      const health = await runWrk(service.url, service.pid, loads.health, seconds);
      const pass = status.perCpuSecond >= STATUS_TARGET && status.non2xx === 0;
      return [
        row('PUT /api/device/{id}/status (device token)', status, hello, { text: `>= ${STATUS_TARGET.toLocaleString('en-US')} req/CPU-s`, pass }),
        row('GET /api/device/list (10 devices, admin)', list, hello),
        row('GET /health (upstream check shared)', health, hello),
      ];
    } finally {
      await service.stop();
      await echo.stop();
    }
  },
};
