// 6. Start-up: from spawn to the first 200 from GET /health, for the bundle (node dist/voice-hub.cjs)
// and the x64 single executable, beside the bare uWS server bundled the same way. One warm-up start
// per variant (it creates the data dir and, for the executable, unpacks the addon), then the median
// of the measured starts on that data dir, as a reboot would find it.
import { existsSync } from 'node:fs';
import { createServer } from 'node:net';
import path from 'node:path';
import { firstHealthy } from '../lib/api.js';
import type { BenchContext, Section } from '../lib/context.js';
import { BUNDLE, DIST, EXECUTABLE, EXECUTABLE_NAME, executableSetting, staleExecutableNote, startEchoServer, tempDir, type Child } from '../lib/proc.js';
import { percentile, type Row } from '../lib/report.js';

const TARGET_MS = 300;

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** Spawns with `argsFor(port)`, measures to the first 200 from /health, stops it. */
async function timeStart(ctx: BenchContext, cmd: string, argsFor: (port: number) => string[], runs: number, cwd?: string, env?: NodeJS.ProcessEnv): Promise<number[]> {
  const times: number[] = [];
  for (let i = 0; i <= runs; i++) {
    const port = await freePort();
    const t0 = performance.now();
    const child: Child = ctx.procs.spawn(cmd, argsFor(port), { ...(cwd ? { cwd } : {}), ...(env ? { env } : {}) });
    try {
      const ms = await firstHealthy(`http://127.0.0.1:${port}`, t0);
      if (i > 0) times.push(ms); // the first start is the warm-up
    } catch (e) {
      throw new Error(`${path.basename(cmd)}: ${e instanceof Error ? e.message : String(e)}\n${child.output().slice(-1500)}`);
    } finally {
      await child.stop();
    }
  }
  return times;
}

export const startupSection: Section = {
  id: 'startup',
  number: '6',
  title: 'Start-up to the first 200 from /health',
  async run(ctx) {
    const runs = ctx.quick ? 3 : 7;
    const echo = await startEchoServer(ctx.procs);
    const rows: Row[] = [];
    try {
      const ceiling = await ctx.ceilingServerScript();
      const bare = await timeStart(ctx, ctx.procs.serviceNode, (port) => [ceiling, DIST, String(port)], runs);
      const bareMs = percentile(bare, 50);
      const serviceArgs = (dataDir: string) => (port: number) => [
        '--host', '127.0.0.1', '--port', String(port), '--data-dir', dataDir, '--Mqtt.BrokerAddress', '', '--voice-server-url', echo.url,
      ];
      const variants: Array<{ name: string; cmd: string; args: (dataDir: string) => (port: number) => string[]; cwd?: string; note?: string }> = [
        { name: 'bundle (node dist/voice-hub.cjs)', cmd: ctx.procs.serviceNode, args: (d) => (port) => [BUNDLE, ...serviceArgs(d)(port)] },
      ];
      if (existsSync(EXECUTABLE)) {
        const { cwd, args } = executableSetting();
        const note = staleExecutableNote();
        variants.push({
          name: `executable (dist/${EXECUTABLE_NAME})`, cmd: EXECUTABLE, cwd,
          args: (d) => (port) => [...args, ...serviceArgs(d)(port)],
          ...(note ? { note } : {}),
        });
      }
      for (const v of variants) {
        const times = await timeStart(ctx, v.cmd, v.args(tempDir('startup')), runs, v.cwd, { ...process.env, ...ctx.procs.serviceEnv });
        const median = percentile(times, 50);
        rows.push({
          section: '6', name: `${v.name}, median of ${runs}`, value: median, unit: 'ms',
          baseline: { name: 'bare uWS (bundled)', value: bareMs, unit: 'ms' }, ratio: median / bareMs,
          target: { text: `< ${TARGET_MS} ms`, pass: median < TARGET_MS },
          detail: { times, bare },
          note: `runs: ${times.map((t) => t.toFixed(0)).join(', ')} ms${v.note ? `; ${v.note}` : ''}`,
        });
      }
      if (!existsSync(EXECUTABLE)) {
        rows.push({ section: '6', name: 'executable', value: NaN, unit: 'ms', note: `skipped: ${EXECUTABLE} not built (make binaries)` });
      }
    } finally {
      await echo.stop();
    }
    return rows;
  },
};
