// Side-by-side start-up (row 6, sections/startup.ts) of several builds: from spawn to the first 200 from
// GET /health of each build's bundle, starts of the builds alternating (the order reversed every other
// round), each build on a data dir and a cache folder of its own that a warm-up start created first, left
// running until it wrote the program's code cache, as a restart finds them.
// Prints each build's median and, past the first build, the median of its ratios to the first in the
// same round, with the load average before and after: this machine's speed drifts within a minute. The
// same for the CPU each start had run by its first 200, its main thread's and all threads': a change of a
// few ms to a start is lost in wall time here and still shows in its main thread's CPU.
import os from 'node:os';
import path from 'node:path';
import { parseCompareArgs, ratioLines, runComparison, turnOrder, type BuildSpec } from './lib/builds.js';
import { RUN_ENV, tempDir, type ProcessSet } from './lib/proc.js';
import { serviceStartArgs, timeOneStart, type StartTiming } from './sections/startup.js';
import { CODE_CACHE_DELAY_MS } from '../src/runtime/code-cache.js';

const USAGE = 'usage: node --import tsx bench/compare-startup.ts [--rounds 15] NAME=CHECKOUT ...';

interface Build extends BuildSpec { dataDir: string; cacheDir: string; starts: StartTiming[] }

/** One start of `build`'s bundle, as row 6 times it. */
function timeStart(procs: ProcessSet, build: Build, upstreamUrl: string, keepRunningMs?: number): Promise<StartTiming> {
  const args = serviceStartArgs(build.dataDir, upstreamUrl);
  return timeOneStart(procs, procs.serviceNode, (port) => [...procs.runtimeFlags, ...build.nodeFlags, path.join(build.dir, 'dist/voice-hub.cjs'), ...args(port), ...build.flags], {
    cwd: build.dir,
    env: { ...RUN_ENV, ...procs.serviceEnv, CACHE_DIRECTORY: build.cacheDir },
    ...(keepRunningMs ? { keepRunningMs } : {}),
  }).catch((e: unknown) => {
    throw new Error(`${build.name}: ${e instanceof Error ? e.message : String(e)}`);
  });
}

const loadText = (): string => os.loadavg().map((l) => l.toFixed(2)).join(' ');

runComparison('compare-startup', USAGE, (argv) => parseCompareArgs(argv, { rounds: 15, seconds: 0 }, () => false), async ({ rounds, builds: specs }, procs, echo) => {
  const builds: Build[] = specs.map((s) => ({ ...s, dataDir: tempDir('startup'), cacheDir: tempDir('code-cache'), starts: [] }));
  const loadBefore = loadText();
  for (const b of builds) await timeStart(procs, b, echo.url, CODE_CACHE_DELAY_MS + 1_000); // the warm-up
  for (let round = 0; round < rounds; round++) {
    for (const b of turnOrder(builds, round)) {
      const start = await timeStart(procs, b, echo.url);
      b.starts.push(start);
      process.stderr.write(`round ${round + 1} ${b.name}: ${start.ms.toFixed(0)} ms, main thread CPU ${start.mainCpuMs.toFixed(0)} ms\n`);
    }
  }
  const names = builds.map((b) => b.name);
  const of = (key: keyof StartTiming): number[][] => builds.map((b) => b.starts.map((s) => s[key]));
  process.stdout.write(ratioLines('start to first 200 from /health', 'ms', names, of('ms')));
  process.stdout.write(ratioLines('main thread CPU by then', 'ms', names, of('mainCpuMs')));
  process.stdout.write(ratioLines('CPU of all threads by then', 'ms', names, of('cpuMs')));
  process.stdout.write(`load average before ${loadBefore}, after ${loadText()}\n`);
  return [];
});
