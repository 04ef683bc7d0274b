// Side-by-side idle RSS of several builds (e.g. the code before a change and after it), as row 5 reads
// it (bench/sections/memory.ts): in each round every build's service starts at the same time on a
// database an earlier start wrote, and its RSS is read 35 s after its start, when V8's memory reducer
// and the service's malloc trim have run. With --mqtt each build also idles connected to a local
// mosquitto (Home Assistant discovery), and with --gc one with the inspector open is read after a
// forced full collection. The start order is reversed every other round. Printed per variant: each
// build's median RSS and, past the first build, the median of its differences to the first's in the
// same round; then where the last round's memory was (bench/lib/smaps.ts).
import { execFileSync } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { collectGarbage, evaluate, INSPECT_FLAG } from '../test/support/inspector.js';
import { startMosquitto, type Mosquitto } from '../test/support/mosquitto.js';
import { median, parseCompareArgs, runComparison, turnOrder, type BuildSpec, type RunningBuild } from './lib/builds.js';
import { memory, ROOT, sleep, startService, type ProcessSet, type Service } from './lib/proc.js';
import { describeMemoryMap, memoryMap } from './lib/smaps.js';
import { IDLE_SETTLE_MS, startedOnce } from './sections/memory.js';

const USAGE = `usage: node --import tsx bench/compare-memory.ts [--rounds 5] [--mqtt] [--gc] NAME=CHECKOUT ...\nA build's flags after the directory are service flags; a flag written \`node:--x\` goes to node.`;

type Variant = 'mqtt off' | 'mqtt on' | 'forced gc';

interface Reading { build: string; variant: Variant; rss: number; where: string }

interface Options { rounds: number; mqtt: boolean; gc: boolean; builds: BuildSpec[] }

function parseArgs(argv: readonly string[]): Options {
  let mqtt = false;
  let gc = false;
  const common = parseCompareArgs(argv, { rounds: 5, seconds: 0 }, (flag) => {
    if (flag === '--mqtt') mqtt = true;
    else if (flag === '--gc') gc = true;
    else return false;
    return true;
  });
  return { rounds: common.rounds, builds: common.builds, mqtt, gc };
}

/** The build's own bundle, started where it is. */
const buildService = (spec: BuildSpec) => ({ bundle: path.join(spec.dir, 'dist/voice-hub.cjs'), cwd: spec.dir });

async function startIdle(procs: ProcessSet, spec: BuildSpec, upstreamUrl: string, variant: Variant, broker: Mosquitto | undefined, dataDir: string): Promise<{ child: Service; started: number }> {
  const started = Date.now();
  const child = await startService(procs, {
    ...buildService(spec), upstreamUrl, dataDir,
    nodeFlags: [...spec.nodeFlags, ...(variant === 'forced gc' ? [INSPECT_FLAG] : [])],
    args: ['--DeviceManagement.MaxDevices', '1000', ...spec.flags],
    ...(variant === 'mqtt on' ? { mqttPort: broker!.port } : {}),
  });
  return { child, started };
}

const mib = (b: number): string => (b / 1048576).toFixed(2);

runComparison('compare-memory', USAGE, parseArgs, async ({ rounds, mqtt, gc, builds }, procs, echo) => {
  let broker: Mosquitto | undefined;
  if (mqtt) {
    execFileSync(path.join(ROOT, 'scripts/ensure-debs.sh'), ['mosquitto'], { stdio: 'inherit' });
    broker = await startMosquitto();
  }
  const variants: Variant[] = ['mqtt off', ...(mqtt ? ['mqtt on' as const] : []), ...(gc ? ['forced gc' as const] : [])];
  const readings: Reading[][] = [];
  const loads: number[] = [];
  try {
    for (let round = 0; round < rounds; round++) {
      const order = turnOrder(builds, round);
      const dirs = new Map<string, string>();
      for (const b of order) for (const v of variants) dirs.set(`${b.name}/${v}`, await startedOnce(procs, { upstreamUrl: echo.url, ...buildService(b) }));
      const running: Array<{ build: BuildSpec; variant: Variant; child: Service; started: number }> = [];
      for (const b of order) for (const v of variants) running.push({ build: b, variant: v, ...(await startIdle(procs, b, echo.url, v, broker, dirs.get(`${b.name}/${v}`)!)) });
      const these: Reading[] = [];
      for (const r of running) {
        await sleep(Math.max(0, r.started + IDLE_SETTLE_MS - Date.now()));
        let rss: number;
        if (r.variant === 'forced gc') {
          await collectGarbage(r.child.output());
          rss = ((await evaluate(r.child.output(), 'process.memoryUsage()')) as NodeJS.MemoryUsage).rss;
        } else {
          rss = memory(r.child.pid).rss;
        }
        these.push({ build: r.build.name, variant: r.variant, rss, where: describeMemoryMap(memoryMap(r.child.pid)) });
      }
      loads.push(os.loadavg()[0]!);
      for (const r of running) await r.child.stop();
      readings.push(these);
      process.stderr.write(`round ${round + 1}: ${these.map((t) => `${t.build}/${t.variant} ${mib(t.rss)} MiB`).join(', ')}; load ${os.loadavg()[0]!.toFixed(2)}\n`);
    }
  } finally {
    await broker?.stop();
  }
  const first = builds[0]!.name;
  const rssOf = (round: Reading[], build: string, variant: Variant): number => round.find((t) => t.build === build && t.variant === variant)!.rss;
  for (const v of variants) {
    for (const b of builds) {
      const own = readings.map((round) => rssOf(round, b.name, v));
      const diffs = readings.map((round) => rssOf(round, b.name, v) - rssOf(round, first, v));
      const diff = b.name === first ? '' : `; minus ${first} in the same round: median ${mib(median(diffs))} MiB (${diffs.map(mib).join(' ')})`;
      process.stdout.write(`idle RSS, ${v}, ${b.name}: median ${mib(median(own))} MiB (${own.map(mib).join(' ')})${diff}\n`);
    }
  }
  for (const t of readings.at(-1)!) process.stdout.write(`last round, ${t.build}/${t.variant}: ${t.where}\n`);
  process.stdout.write(`load average (1 min) at the readings: median ${median(loads).toFixed(2)} (${loads.map((l) => l.toFixed(2)).join(' ')})\n`);
  // The builds were stopped round by round; runComparison stops what it is given.
  return [] as RunningBuild[];
});
