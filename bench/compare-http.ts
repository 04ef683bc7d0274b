// Side-by-side HTTP rows of several builds (section 2's loads: a status update with a device token, the
// device list of 10 devices as admin, /health): each build's service runs at the same time
// (lib/builds.ts), wrk loads each in turn, the order reversed every other round, and each build's
// req/CPU-s is printed with its ratio to the first build's in the same round.
//   node --import tsx bench/compare-http.ts [--rounds 5] [--seconds 3] [--loads status,list,health] NAME=CHECKOUT ...
import { execFileSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import path from 'node:path';
import { registerDevices } from './lib/api.js';
import { parseBuild, ratioLines, startBuild, type BuildSpec } from './lib/builds.js';
import { ProcessSet, RUN_DIR, startEchoServer } from './lib/proc.js';
import { ensureWrk, runWrk, type HttpLoad } from './lib/wrk.js';
import { STATUS_BODY } from './sections/http.js';

const LOADS = ['status', 'list', 'health'] as const;
type LoadName = (typeof LOADS)[number];

function parseArgs(argv: string[]): { rounds: number; seconds: number; loads: LoadName[]; builds: BuildSpec[] } {
  const out = { rounds: 5, seconds: 3, loads: [...LOADS] as LoadName[], builds: [] as BuildSpec[] };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const number = (): number => {
      const n = Number(argv[++i]);
      if (!Number.isInteger(n) || n <= 0) throw new Error(`${a} needs a positive whole number`);
      return n;
    };
    if (a === '--rounds') out.rounds = number();
    else if (a === '--seconds') out.seconds = number();
    else if (a === '--loads') out.loads = (argv[++i] ?? '').split(',').filter(Boolean) as LoadName[];
    else {
      const build = parseBuild(a);
      if (!build) throw new Error(`unknown argument ${a}`);
      out.builds.push(build);
    }
  }
  if (out.builds.length < 2) throw new Error('give at least two builds as NAME=CHECKOUT');
  const unknown = out.loads.filter((l) => !LOADS.includes(l));
  if (unknown.length > 0 || out.loads.length === 0) throw new Error(`--loads takes ${LOADS.join(', ')}`);
  return out;
}

async function main(): Promise<void> {
  const options = parseArgs(process.argv.slice(2));
  ensureWrk();
  const procs = new ProcessSet();
  try {
    const echo = await startEchoServer(procs);
    const builds = [];
    for (const spec of options.builds) {
      const build = await startBuild(procs, spec, echo.url, ['--DeviceManagement.MaxDevices', '1000']);
      const [device] = await registerDevices(build.url, 10, build.name);
      // The build's own bundle makes its admin token (its data dir, its key format).
      const admin = execFileSync(process.execPath, [path.join(build.dir, 'dist/voice-hub.cjs'), 'token', 'admin', '--data-dir', build.dataDir], { cwd: build.dir, encoding: 'utf8' }).trim();
      const loads: Record<LoadName, HttpLoad> = {
        status: { method: 'PUT', path: `/api/device/${device!.id}/status`, headers: { authorization: `Bearer ${device!.token}`, 'content-type': 'application/json' }, body: STATUS_BODY },
        list: { path: '/api/device/list', headers: { authorization: `Bearer ${admin}` } },
        health: { path: '/health' },
      };
      builds.push({ ...build, loads, perCpu: new Map<LoadName, number[]>() });
    }
    for (let round = 0; round < options.rounds; round++) {
      for (const b of round % 2 === 0 ? builds : [...builds].reverse()) {
        for (const name of options.loads) {
          const r = await runWrk(b.url, b.child.pid, b.loads[name], options.seconds);
          b.perCpu.set(name, [...(b.perCpu.get(name) ?? []), r.perCpuSecond]);
          process.stderr.write(`round ${round + 1} ${name} ${b.name}: ${Math.round(r.perCpuSecond)} req/CPU-s (${r.non2xx} non-2xx, ${r.socketErrors} socket errors)\n`);
        }
      }
    }
    const names = builds.map((b) => b.name);
    for (const name of options.loads) process.stdout.write(ratioLines(name, 'req/CPU-s', names, builds.map((b) => b.perCpu.get(name)!)));
    for (const b of builds) await b.child.stop();
    await echo.stop();
  } finally {
    procs.killAll();
    rmSync(RUN_DIR, { recursive: true, force: true });
  }
}

main().catch((e: unknown) => {
  process.stderr.write(`compare-http: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
  process.exit(2);
});
