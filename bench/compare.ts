// Side-by-side hub round trips of several builds (e.g. the code before a change and after it): each
// build's service runs on the same echo server at the same time (lib/builds.ts), and the load of 3a
// (50 sessions x 2 members) goes to each in turn, protocol by protocol, the order reversed every other
// round. Each build's rt/CPU-s and answered rt/CPU-s (sections/hub.ts) are printed with their ratios to
// the first build's in the same round.
//   node --import tsx bench/compare.ts [--rounds 6] [--seconds 2] [--window 1] [--protocols json,messagepack] NAME=CHECKOUT ...
import { rmSync } from 'node:fs';
import { startSessions, type Session } from './lib/api.js';
import { parseBuild, ratioLines, startBuild, type BuildSpec, type RunningBuild } from './lib/builds.js';
import { runLoad } from './lib/child.js';
import { ProcessSet, RUN_DIR, startEchoServer } from './lib/proc.js';
import type { HubLoadResult } from './sections/hub.js';
import type { Protocol } from './lib/signalr-raw.js';

interface Build extends RunningBuild { sessions: Session[]; perCpu: Map<Protocol, number[]>; answeredPerCpu: Map<Protocol, number[]> }

function parseArgs(argv: string[]): { rounds: number; seconds: number; window: number; protocols: Protocol[]; builds: BuildSpec[] } {
  const out = { rounds: 6, seconds: 2, window: 1, protocols: ['json', 'messagepack'] as Protocol[], builds: [] as BuildSpec[] };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const number = (): number => {
      const n = Number(argv[++i]);
      if (!Number.isFinite(n) || n <= 0) throw new Error(`${a} needs a positive number`);
      return n;
    };
    if (a === '--rounds') out.rounds = number();
    else if (a === '--seconds') out.seconds = number();
    else if (a === '--window') out.window = number();
    else if (a === '--protocols') out.protocols = (argv[++i] ?? '').split(',').filter(Boolean) as Protocol[];
    else {
      const build = parseBuild(a);
      if (!build) throw new Error(`unknown argument ${a}`);
      out.builds.push(build);
    }
  }
  if (out.builds.length < 2) throw new Error('give at least two builds as NAME=CHECKOUT');
  if (out.protocols.some((p) => p !== 'json' && p !== 'messagepack')) throw new Error('--protocols takes json and/or messagepack');
  return out;
}

async function main(): Promise<void> {
  const options = parseArgs(process.argv.slice(2));
  const procs = new ProcessSet();
  try {
    const echo = await startEchoServer(procs);
    const builds: Build[] = [];
    for (const spec of options.builds) {
      // The section's own flags (bench/sections/hub.ts): the message budget opened, room for the devices.
      const build = await startBuild(procs, spec, echo.url, ['--DeviceManagement.MaxDevices', '1000', '--Hub.MessageRate', '1000000', '--Hub.MessageBurst', '1000000']);
      builds.push({ ...build, sessions: await startSessions(build.url, 50, build.name), perCpu: new Map(), answeredPerCpu: new Map() });
    }
    for (let round = 0; round < options.rounds; round++) {
      for (const protocol of options.protocols) {
        for (const b of round % 2 === 0 ? builds : [...builds].reverse()) {
          const r = await runLoad<HubLoadResult>(procs, 'hub.ts', {
            url: b.url, protocol, sessions: b.sessions, mode: 'roundtrip', window: options.window, warmupMs: 1000,
            durationMs: options.seconds * 1000, pids: { server: b.child.pid, upstream: echo.pid },
          }, 120_000);
          const value = r.processed / r.cpu.server;
          b.perCpu.set(protocol, [...(b.perCpu.get(protocol) ?? []), value]);
          // Answered: the round trips whose AudioResponse reached member 2 within the window (hub.ts).
          b.answeredPerCpu.set(protocol, [...(b.answeredPerCpu.get(protocol) ?? []), r.responsesB / r.cpu.server]);
          process.stderr.write(`round ${round + 1} ${protocol} ${b.name}: ${Math.round(value)} rt/CPU-s, answered ${Math.round(r.responsesB / r.cpu.server)} (lost ${r.lost}, errors ${r.errors})\n`);
        }
      }
    }
    const names = builds.map((b) => b.name);
    for (const protocol of options.protocols) process.stdout.write(ratioLines(protocol, 'rt/CPU-s', names, builds.map((b) => b.perCpu.get(protocol)!)));
    for (const protocol of options.protocols) process.stdout.write(ratioLines(protocol, 'answered rt/CPU-s', names, builds.map((b) => b.answeredPerCpu.get(protocol)!)));
    for (const b of builds) await b.child.stop();
    await echo.stop();
  } finally {
    procs.killAll();
    rmSync(RUN_DIR, { recursive: true, force: true });
  }
}

main().catch((e: unknown) => {
  process.stderr.write(`compare: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
  process.exit(2);
});
