// Side-by-side hub round trips of several builds (e.g. the code before a change and after it): each
// checkout's bundle runs as a service on the same echo server at the same time, and the load of 3a
// (50 sessions x 2 members) goes to each in turn, protocol by protocol, the order reversed every other
// round. This machine's speed drifts within a minute, so a change is judged by the ratios taken in the
// same round, not by figures of separate runs.
//   node --import tsx bench/compare.ts [--rounds 6] [--seconds 2] [--window 1] [--protocols json,messagepack] NAME=CHECKOUT ...
// A build's argument may carry service flags after the directory, as one quoted argument, to compare
// settings of one build: 'inline=. --VoiceService.DecoderThreads 0'.
// CHECKOUT is a directory with a built dist/voice-hub.cjs and its config/ (`git worktree add`, or
// `git archive <commit> | tar -x -C <dir>` with node_modules copied and `node build.mjs` run there).
import { rmSync } from 'node:fs';
import path from 'node:path';
import { startSessions, type Session } from './lib/api.js';
import { runLoad } from './lib/child.js';
import { ProcessSet, RUN_DIR, startEchoServer, tempDir, waitForOutput, type Child } from './lib/proc.js';
import type { HubLoadResult } from './sections/hub.js';
import type { Protocol } from './lib/signalr-raw.js';

interface Build { name: string; child: Child; url: string; sessions: Session[]; perCpu: Map<Protocol, number[]>; answeredPerCpu: Map<Protocol, number[]> }

function parseArgs(argv: string[]): { rounds: number; seconds: number; window: number; protocols: Protocol[]; builds: { name: string; dir: string; flags: string[] }[] } {
  const out = { rounds: 6, seconds: 2, window: 1, protocols: ['json', 'messagepack'] as Protocol[], builds: [] as { name: string; dir: string; flags: string[] }[] };
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
    else if (/^[\w.-]+=/.test(a)) {
      const [dir, ...flags] = a.slice(a.indexOf('=') + 1).split(/\s+/).filter(Boolean);
      out.builds.push({ name: a.slice(0, a.indexOf('=')), dir: path.resolve(dir ?? '.'), flags });
    } else throw new Error(`unknown argument ${a}`);
  }
  if (out.builds.length < 2) throw new Error('give at least two builds as NAME=CHECKOUT');
  if (out.protocols.some((p) => p !== 'json' && p !== 'messagepack')) throw new Error('--protocols takes json and/or messagepack');
  return out;
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;

async function main(): Promise<void> {
  const options = parseArgs(process.argv.slice(2));
  const procs = new ProcessSet();
  try {
    const echo = await startEchoServer(procs);
    const builds: Build[] = [];
    for (const { name, dir, flags: extra } of options.builds) {
      // The section's own flags (bench/sections/hub.ts): the message budget opened, room for the devices.
      const flags = ['--host', '127.0.0.1', '--port', '0', '--data-dir', tempDir('data'), '--Mqtt.BrokerAddress', '',
        '--voice-server-url', echo.url, '--DeviceManagement.MaxDevices', '1000', '--Hub.MessageRate', '1000000', '--Hub.MessageBurst', '1000000', ...extra];
      const child = procs.spawn(process.execPath, [path.join(dir, 'dist/voice-hub.cjs'), ...flags], { cwd: dir });
      const m = await waitForOutput(child, /listening on http:\/\/[^:\s]+:(\d+)/);
      const url = `http://127.0.0.1:${m[1]}`;
      builds.push({ name, child, url, sessions: await startSessions(url, 50, name), perCpu: new Map(), answeredPerCpu: new Map() });
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
    const [first] = builds;
    for (const [what, of] of [['rt/CPU-s', (b: Build) => b.perCpu], ['answered rt/CPU-s', (b: Build) => b.answeredPerCpu]] as const) {
      for (const protocol of options.protocols) {
        for (const b of builds) {
          const values = of(b).get(protocol)!;
          const ratios = values.map((v, i) => v / of(first!).get(protocol)![i]!);
          const ratio = b === first ? '' : `; ratio to ${first!.name} in the same round: median ${median(ratios).toFixed(2)} (${ratios.map((x) => x.toFixed(2)).join(' ')})`;
          process.stdout.write(`${protocol} ${b.name}: median ${Math.round(median(values))} ${what} (${values.map(Math.round).join(' ')})${ratio}\n`);
        }
      }
    }
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
