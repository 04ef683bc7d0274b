// 6. Start-up: from spawn to the first 200 from GET /health, for the bundle (node dist/voice-hub.cjs)
// and the x64 single executable, beside the bare uWS server bundled the same way. Each with Node's
// options as users start it (src/runtime/node-options.mjs: `make run` passes them, the unit sets
// NODE_OPTIONS), and the bundle once more with Node's defaults, to show what they are worth. One warm-up start
// per variant (it creates the data dir, for the executable unpacks the addon and, left running long
// enough, writes the program's code cache), then the median of the measured starts on that data dir,
// as a reboot would find it. Each once more with its code cache removed before each start, as the
// first start after an upgrade finds it.
import { existsSync, readdirSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import path from 'node:path';
import { firstHealthy } from '../lib/api.js';
import type { BenchContext, Section } from '../lib/context.js';
import { BUNDLE, DIST, EXECUTABLE, EXECUTABLE_NAME, executableSetting, RUN_ENV, staleExecutableNote, startEchoServer, tempDir, threadCpuMs, type Child, type ProcessSet } from '../lib/proc.js';
import { NODE_OPTIONS_TEXT } from '../../src/runtime/node-options.mjs';
import { percentile, type Row } from '../lib/report.js';
import { CODE_CACHE_DELAY_MS, isCodeCacheFile } from '../../src/runtime/code-cache.js';

const TARGET_MS = 300;

function removeCodeCaches(dir: string): void {
  if (!existsSync(dir)) return;
  for (const name of readdirSync(dir)) if (isCodeCacheFile(name)) rmSync(path.join(dir, name));
}

/** A port nothing listens on now, for a start that must be told its port. */
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

interface StartOptions {
  cwd?: string;
  env?: NodeJS.ProcessEnv;
  /** How long the warm-up start keeps running after its first answer (the executable writes its code cache then). */
  warmUpMs?: number;
  /** Before each measured start. */
  beforeEach?: () => void;
}

/** One start: ms from spawn to the first 200 from /health, and the CPU the process had run by then. */
export interface StartTiming {
  ms: number;
  /** Of all its threads (the decoder threads, V8's compiler and GC threads), ms. */
  cpuMs: number;
  /** Of its main thread alone, ms: a start's own work, less moved by the machine's other load than wall time. */
  mainCpuMs: number;
  /** How long its main thread was ready to run but waited for a core, ms: the cores were all busy then. */
  mainWaitMs: number;
}

/**
 * One start: spawns `cmd` with `argsFor(port)` on a free port and times it to the first 200 from /health; it
 * is stopped before this returns (`keepRunningMs` after that answer: a warm-up start writes its code cache
 * meanwhile). bench/compare-startup.ts times its builds with it too.
 */
export async function timeOneStart(procs: ProcessSet, cmd: string, argsFor: (port: number) => string[], opts: { cwd?: string; env?: NodeJS.ProcessEnv; keepRunningMs?: number } = {}): Promise<StartTiming> {
  const { cwd, env } = opts;
  const port = await freePort();
  const t0 = performance.now();
  const child: Child = procs.spawn(cmd, argsFor(port), { ...(cwd ? { cwd } : {}), ...(env ? { env } : {}) });
  try {
    const ms = await firstHealthy(`http://127.0.0.1:${port}`, t0);
    const cpu = threadCpuMs(child.pid);
    if (opts.keepRunningMs) await new Promise((resolve) => setTimeout(resolve, opts.keepRunningMs));
    return { ms, cpuMs: cpu.all, mainCpuMs: cpu.main, mainWaitMs: cpu.mainWaiting };
  } catch (e) {
    throw new Error(`${path.basename(cmd)}: ${e instanceof Error ? e.message : String(e)}\n${child.output().slice(-1500)}`);
  } finally {
    await child.stop();
  }
}

/** The service's flags for a start timed on `port`: its own data dir, MQTT off, the bench's upstream. */
export const serviceStartArgs = (dataDir: string, upstreamUrl: string) => (port: number): string[] => [
  '--host', '127.0.0.1', '--port', String(port), '--data-dir', dataDir, '--Mqtt.BrokerAddress', '', '--voice-server-url', upstreamUrl,
];

/** A warm-up start (not counted), then `runs` timed starts. */
async function timeStart(ctx: BenchContext, cmd: string, argsFor: (port: number) => string[], runs: number, opts: StartOptions = {}): Promise<StartTiming[]> {
  const { cwd, env } = opts;
  await timeOneStart(ctx.procs, cmd, argsFor, { cwd, env, keepRunningMs: opts.warmUpMs });
  const starts: StartTiming[] = [];
  for (let i = 0; i < runs; i++) {
    opts.beforeEach?.();
    starts.push(await timeOneStart(ctx.procs, cmd, argsFor, { cwd, env }));
  }
  return starts;
}

/** The median of one of the starts' figures. */
const medianOf = (starts: StartTiming[], key: keyof StartTiming): number => percentile(starts.map((s) => s[key]), 50);

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
      const runtime = ctx.procs.runtimeFlags;
      const bareStarts = await timeStart(ctx, ctx.procs.serviceNode, (port) => [...runtime, ceiling, DIST, String(port)], runs);
      const bare = bareStarts.map((s) => s.ms);
      const bareMs = medianOf(bareStarts, 'ms');
      const bareCpuText = `bare uWS: main thread ${medianOf(bareStarts, 'mainCpuMs').toFixed(0)} ms, waiting ${medianOf(bareStarts, 'mainWaitMs').toFixed(0)} ms`;
      const serviceArgs = (dataDir: string) => serviceStartArgs(dataDir, echo.url);
      const env = { ...RUN_ENV, ...ctx.procs.serviceEnv };
      type What = { cmd: string; args: (dataDir: string) => (port: number) => string[] };
      const variants: Array<{ name: string; cmd: string; args: (dataDir: string) => (port: number) => string[]; options: StartOptions; note?: string; untargeted?: true }> = [];
      /** `what` as a restart finds it: its warm-up start runs until it has written the program's code cache. */
      const fromCache = (name: string, what: What, opts: { cwd?: string; env?: Record<string, string>; note?: string; untargeted?: true } = {}): void => {
        variants.push({
          name, ...what,
          options: { cwd: opts.cwd, env: { ...env, ...opts.env, CACHE_DIRECTORY: tempDir('code-cache') }, warmUpMs: CODE_CACHE_DELAY_MS + 1_000 },
          note: ['from its code cache', opts.note].filter(Boolean).join('; '),
          ...(opts.untargeted ? { untargeted: true } : {}),
        });
      };
      /** `what` from its code cache, and the same without it (as the first start after an upgrade): the cache removed before each start. */
      const cachedAndNot = (name: string, what: What, opts: { cwd?: string; env?: Record<string, string>; note?: string } = {}): void => {
        fromCache(name, what, opts);
        const uncached = tempDir('code-cache');
        variants.push({
          name: `${name.replace(/ \(.*/, '')} without its code cache`, ...what,
          options: { cwd: opts.cwd, env: { ...env, ...opts.env, CACHE_DIRECTORY: uncached }, beforeEach: () => removeCodeCaches(uncached) },
          untargeted: true,
          ...(opts.note ? { note: opts.note } : {}),
        });
      };
      cachedAndNot(`bundle (node ${runtime.join(' ')} dist/voice-hub.cjs)`, { cmd: ctx.procs.serviceNode, args: (d) => (port) => [...runtime, BUNDLE, ...serviceArgs(d)(port)] });
      if (existsSync(EXECUTABLE)) {
        const { cwd, args } = executableSetting();
        const stale = staleExecutableNote();
        cachedAndNot(`executable (dist/${EXECUTABLE_NAME}, NODE_OPTIONS as the unit sets it)`, { cmd: EXECUTABLE, args: (d) => (port) => [...args, ...serviceArgs(d)(port)] }, { cwd, env: ctx.procs.executableEnv(), ...(stale ? { note: stale } : {}) });
      }
      fromCache('bundle with Node\'s default options (node dist/voice-hub.cjs)', { cmd: ctx.procs.serviceNode, args: (d) => (port) => [BUNDLE, ...serviceArgs(d)(port)] }, {
        note: `without ${NODE_OPTIONS_TEXT}: four V8 helper threads whatever the cores`,
        untargeted: true,
      });
      for (const v of variants) {
        const starts = await timeStart(ctx, v.cmd, v.args(tempDir('startup')), runs, v.options);
        const times = starts.map((s) => s.ms);
        const median = percentile(times, 50);
        rows.push({
          section: '6', name: `${v.name}, median of ${runs}`, value: median, unit: 'ms',
          baseline: { name: 'bare uWS (bundled)', value: bareMs, unit: 'ms' }, ratio: median / bareMs,
          ...(v.untargeted ? {} : { target: { text: `< ${TARGET_MS} ms`, pass: median < TARGET_MS } }),
          detail: { times, bare, mainCpuMs: starts.map((s) => s.mainCpuMs), cpuMs: starts.map((s) => s.cpuMs), mainWaitMs: starts.map((s) => s.mainWaitMs), bareMainCpuMs: bareStarts.map((s) => s.mainCpuMs), bareMainWaitMs: bareStarts.map((s) => s.mainWaitMs) },
          note:
            `runs: ${times.map((t) => t.toFixed(0)).join(', ')} ms; CPU to the first 200: main thread ${medianOf(starts, 'mainCpuMs').toFixed(0)} ms, ` +
            `all threads ${medianOf(starts, 'cpuMs').toFixed(0)} ms; main thread waiting for a core ${medianOf(starts, 'mainWaitMs').toFixed(0)} ms ` +
            `(${bareCpuText})${v.note ? `; ${v.note}` : ''}`,
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
