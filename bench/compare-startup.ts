// Side-by-side start-up (row 6, sections/startup.ts) of several builds: from spawn to the first 200 from
// GET /health of each build's bundle, starts of the builds alternating (the order reversed every other
// round), each build on a data dir and a cache folder of its own that a warm-up start created first, left
// running until it wrote the program's code cache, as a restart finds them.
// Prints each build's median and, past the first build, the median of its ratios to the first in the
// same round, with the load average before and after: this machine's speed drifts within a minute.
import os from 'node:os';
import path from 'node:path';
import { parseCompareArgs, ratioLines, runComparison, turnOrder, type BuildSpec } from './lib/builds.js';
import { RUN_ENV, tempDir, type ProcessSet } from './lib/proc.js';
import { serviceStartArgs, timeOneStart } from './sections/startup.js';
import { CODE_CACHE_DELAY_MS } from '../src/runtime/code-cache.js';

const USAGE = 'usage: node --import tsx bench/compare-startup.ts [--rounds 15] NAME=CHECKOUT ...';

interface Build extends BuildSpec { dataDir: string; cacheDir: string; times: number[] }

/** One start of `build`'s bundle, as row 6 times it. */
function timeStart(procs: ProcessSet, build: Build, upstreamUrl: string, keepRunningMs?: number): Promise<number> {
  const args = serviceStartArgs(build.dataDir, upstreamUrl);
  return timeOneStart(procs, procs.serviceNode, (port) => [path.join(build.dir, 'dist/voice-hub.cjs'), ...args(port), ...build.flags], {
    cwd: build.dir,
    env: { ...RUN_ENV, ...procs.serviceEnv, CACHE_DIRECTORY: build.cacheDir },
    ...(keepRunningMs ? { keepRunningMs } : {}),
  }).catch((e: unknown) => {
    throw new Error(`${build.name}: ${e instanceof Error ? e.message : String(e)}`);
  });
}

const loadText = (): string => os.loadavg().map((l) => l.toFixed(2)).join(' ');

runComparison('compare-startup', USAGE, (argv) => parseCompareArgs(argv, { rounds: 15, seconds: 0 }, () => false), async ({ rounds, builds: specs }, procs, echo) => {
  const builds: Build[] = specs.map((s) => ({ ...s, dataDir: tempDir('startup'), cacheDir: tempDir('code-cache'), times: [] }));
  const loadBefore = loadText();
  for (const b of builds) await timeStart(procs, b, echo.url, CODE_CACHE_DELAY_MS + 1_000); // the warm-up
  for (let round = 0; round < rounds; round++) {
    for (const b of turnOrder(builds, round)) {
      const ms = await timeStart(procs, b, echo.url);
      b.times.push(ms);
      process.stderr.write(`round ${round + 1} ${b.name}: ${ms.toFixed(0)} ms\n`);
    }
  }
  process.stdout.write(ratioLines('start to first 200 from /health', 'ms', builds.map((b) => b.name), builds.map((b) => b.times)));
  process.stdout.write(`load average before ${loadBefore}, after ${loadText()}\n`);
  return [];
});
