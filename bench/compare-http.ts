// Side-by-side HTTP rows of several builds (section 2's loads: a status update with a device token, the
// device list of 10 devices as admin, /health): each build's service runs at the same time
// (lib/builds.ts), wrk loads each in turn, the order reversed every other round, and each build's
// req/CPU-s is printed with its ratio to the first build's in the same round.
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { registerDevices } from './lib/api.js';
import { parseCompareArgs, ratioLines, runComparison, startBuild, turnOrder, type CompareOptions } from './lib/builds.js';
import { ensureWrk, runWrk } from './lib/wrk.js';
import { HTTP_LOADS, httpLoads, type HttpLoadName } from './sections/http.js';

const USAGE = 'usage: node --import tsx bench/compare-http.ts [--rounds 5] [--seconds 3] [--loads status,list,health] NAME=CHECKOUT ...';

function parseArgs(argv: readonly string[]): CompareOptions & { loads: HttpLoadName[] } {
  let loads: HttpLoadName[] = [...HTTP_LOADS];
  const common = parseCompareArgs(argv, { rounds: 5, seconds: 3 }, (flag, value) => {
    if (flag !== '--loads') return false;
    loads = value().split(',').filter(Boolean) as HttpLoadName[];
    return true;
  });
  if (loads.length === 0 || loads.some((l) => !HTTP_LOADS.includes(l))) throw new Error(`--loads takes ${HTTP_LOADS.join(', ')}`);
  // wrk takes whole seconds.
  if (!Number.isInteger(common.seconds)) throw new Error('--seconds needs a whole number here');
  ensureWrk();
  return { ...common, loads };
}

runComparison('compare-http', USAGE, parseArgs, async ({ rounds, seconds, loads, builds: specs }, procs, echo) => {
  const builds = [];
  for (const spec of specs) {
    const build = await startBuild(procs, spec, echo.url, ['--DeviceManagement.MaxDevices', '1000']);
    const [device] = await registerDevices(build.url, 10, build.name);
    // The build's own bundle makes its admin token (its data dir, its key format).
    const admin = execFileSync(process.execPath, [path.join(build.dir, 'dist/voice-hub.cjs'), 'token', 'admin', '--data-dir', build.dataDir], { cwd: build.dir, encoding: 'utf8' }).trim();
    builds.push({ ...build, requests: httpLoads(device!, admin), perCpu: new Map<HttpLoadName, number[]>() });
  }
  for (let round = 0; round < rounds; round++) {
    for (const b of turnOrder(builds, round)) {
      for (const name of loads) {
        const r = await runWrk(b.url, b.child.pid, b.requests[name], seconds);
        b.perCpu.set(name, [...(b.perCpu.get(name) ?? []), r.perCpuSecond]);
        process.stderr.write(`round ${round + 1} ${name} ${b.name}: ${Math.round(r.perCpuSecond)} req/CPU-s (${r.non2xx} non-2xx, ${r.socketErrors} socket errors)\n`);
      }
    }
  }
  const names = builds.map((b) => b.name);
  for (const name of loads) process.stdout.write(ratioLines(name, 'req/CPU-s', names, builds.map((b) => b.perCpu.get(name)!)));
  return builds;
});
