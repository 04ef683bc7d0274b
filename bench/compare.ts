// Side-by-side hub round trips of several builds (e.g. the code before a change and after it): each
// build's service runs on the same echo server at the same time (lib/builds.ts), and the load of 3a
// (50 sessions x 2 members) goes to each in turn, protocol by protocol, the order reversed every other
// round. Each build's rt/CPU-s and answered rt/CPU-s (sections/hub.ts) are printed with their ratios to
// the first build's in the same round.
import { startSessions, type Session } from './lib/api.js';
import { parseCompareArgs, ratioLines, runComparison, startBuild, turnOrder, type CompareOptions, type RunningBuild } from './lib/builds.js';
import { runLoad } from './lib/child.js';
import type { HubLoadResult } from './sections/hub.js';
import type { Protocol } from './lib/signalr-raw.js';

const USAGE = 'usage: node --import tsx bench/compare.ts [--rounds 6] [--seconds 2] [--window 1] [--protocols json,messagepack] NAME=CHECKOUT ...';

interface Build extends RunningBuild { sessions: Session[]; perCpu: Map<Protocol, number[]>; answeredPerCpu: Map<Protocol, number[]> }

interface Options extends CompareOptions { window: number; protocols: Protocol[] }

function parseArgs(argv: readonly string[]): Options {
  let window = 1;
  let protocols: Protocol[] = ['json', 'messagepack'];
  const common = parseCompareArgs(argv, { rounds: 6, seconds: 2 }, (flag, value) => {
    if (flag === '--window') window = Number(value());
    else if (flag === '--protocols') protocols = value().split(',').filter(Boolean) as Protocol[];
    else return false;
    return true;
  });
  if (!Number.isInteger(window) || window <= 0) throw new Error('--window needs a positive whole number');
  if (protocols.length === 0 || protocols.some((p) => p !== 'json' && p !== 'messagepack')) throw new Error('--protocols takes json and/or messagepack');
  return { ...common, window, protocols };
}

runComparison('compare', USAGE, parseArgs, async ({ rounds, seconds, window, protocols, builds: specs }, procs, echo) => {
  const builds: Build[] = [];
  for (const spec of specs) {
    // The section's own flags (bench/sections/hub.ts): the message budget opened, room for the devices.
    const build = await startBuild(procs, spec, echo.url, ['--DeviceManagement.MaxDevices', '1000', '--Hub.MessageRate', '1000000', '--Hub.MessageBurst', '1000000']);
    builds.push({ ...build, sessions: await startSessions(build.url, 50, build.name), perCpu: new Map(), answeredPerCpu: new Map() });
  }
  for (let round = 0; round < rounds; round++) {
    for (const protocol of protocols) {
      for (const b of turnOrder(builds, round)) {
        const r = await runLoad<HubLoadResult>(procs, 'hub.ts', {
          url: b.url, protocol, sessions: b.sessions, mode: 'roundtrip', window, warmupMs: 1000,
          durationMs: seconds * 1000, pids: { server: b.child.pid, upstream: echo.pid },
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
  for (const protocol of protocols) process.stdout.write(ratioLines(protocol, 'rt/CPU-s', names, builds.map((b) => b.perCpu.get(protocol)!)));
  for (const protocol of protocols) process.stdout.write(ratioLines(protocol, 'answered rt/CPU-s', names, builds.map((b) => b.answeredPerCpu.get(protocol)!)));
  return builds;
});
