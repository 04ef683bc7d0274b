// The builds a side-by-side comparison runs (bench/compare.ts, bench/compare-http.ts): each checkout's
// bundle as a service on one echo server, all at the same time, and what both scripts report. This
// machine's speed drifts within a minute, so a change is judged by ratios taken in the same round.
// A build is NAME=CHECKOUT, where CHECKOUT holds a built dist/voice-hub.cjs and its config/ (`git
// worktree add`, or `git archive <commit> | tar -x -C <dir>` with node_modules copied and `node build.mjs`
// run there); the argument may carry service flags after the directory, as one quoted argument, to
// compare settings of one build: 'inline=. --VoiceService.DecoderThreads 0'. A flag written `node:FLAG`
// goes to node before the bundle instead, after the options users run it with (src/runtime/node-options.mjs),
// which it overrides: 'nodedefault=. node:--v8-pool-size=4'.
import { rmSync } from 'node:fs';
import path from 'node:path';
import { cleanUpOnInterrupt, ProcessSet, RUN_DIR, startEchoServer, tempDir, waitForOutput, type Child } from './proc.js';

export interface BuildSpec {
  name: string;
  dir: string;
  /** The service's own flags, after the bundle. */
  flags: string[];
  /** Node's flags, before the bundle (written `node:FLAG`). */
  nodeFlags: string[];
}

export interface RunningBuild extends BuildSpec {
  child: Child;
  url: string;
  dataDir: string;
}

const NODE_FLAG = 'node:';

/** NAME=CHECKOUT [flags...] as one argument; undefined when `arg` is not of that form. */
export function parseBuild(arg: string): BuildSpec | undefined {
  if (!/^[\w.-]+=/.test(arg)) return undefined;
  const [dir, ...all] = arg.slice(arg.indexOf('=') + 1).split(/\s+/).filter(Boolean);
  const flags = all.filter((f) => !f.startsWith(NODE_FLAG));
  const nodeFlags = all.filter((f) => f.startsWith(NODE_FLAG)).map((f) => f.slice(NODE_FLAG.length));
  return { name: arg.slice(0, arg.indexOf('=')), dir: path.resolve(dir ?? '.'), flags, nodeFlags };
}

/** Starts a build's bundle on a loopback port with a fresh data dir, MQTT off, `upstreamUrl` as its voice server. */
export async function startBuild(procs: ProcessSet, spec: BuildSpec, upstreamUrl: string, flags: readonly string[]): Promise<RunningBuild> {
  const dataDir = tempDir('data');
  const args = ['--host', '127.0.0.1', '--port', '0', '--data-dir', dataDir, '--Mqtt.BrokerAddress', '', '--voice-server-url', upstreamUrl, ...flags, ...spec.flags];
  const child = procs.spawn(process.execPath, [...procs.runtimeFlags, ...spec.nodeFlags, path.join(spec.dir, 'dist/voice-hub.cjs'), ...args], { cwd: spec.dir });
  const m = await waitForOutput(child, /listening on http:\/\/[^:\s]+:(\d+)/);
  return { ...spec, child, url: `http://127.0.0.1:${m[1]}`, dataDir };
}

export const median = (xs: readonly number[]): number => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;

/** One line per build: the median of its figures and, past the first build, its ratios to the first in the same rounds. */
export function ratioLines(label: string, unit: string, names: readonly string[], values: readonly (readonly number[])[]): string {
  const first = values[0]!;
  return names
    .map((name, b) => {
      const own = values[b]!;
      const ratios = own.map((v, i) => v / first[i]!);
      const ratio = b === 0 ? '' : `; ratio to ${names[0]} in the same round: median ${median(ratios).toFixed(2)} (${ratios.map((x) => x.toFixed(2)).join(' ')})`;
      return `${label} ${name}: median ${Math.round(median(own))} ${unit} (${own.map(Math.round).join(' ')})${ratio}\n`;
    })
    .join('');
}

export interface CompareOptions {
  rounds: number;
  seconds: number;
  builds: BuildSpec[];
}

/**
 * --rounds, --seconds and the builds (at least two); `own(flag, value)` takes a tool's own flags, reading
 * the flag's value with `value()`, and returns false for a flag it does not know.
 */
export function parseCompareArgs(argv: readonly string[], defaults: Omit<CompareOptions, 'builds'>, own: (flag: string, value: () => string) => boolean): CompareOptions {
  const out: CompareOptions = { ...defaults, builds: [] };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const value = (): string => argv[++i] ?? '';
    const positive = (): number => {
      const n = Number(value());
      if (!Number.isFinite(n) || n <= 0) throw new Error(`${a} needs a positive number`);
      return n;
    };
    if (a === '--rounds') out.rounds = Math.ceil(positive());
    else if (a === '--seconds') out.seconds = positive();
    else if (!own(a, value)) {
      const build = parseBuild(a);
      if (!build) throw new Error(`unknown argument ${a}`);
      out.builds.push(build);
    }
  }
  if (out.builds.length < 2) throw new Error('give at least two builds as NAME=CHECKOUT');
  return out;
}

/** The builds in the order of this round: reversed every other round, so that none always goes first. */
export const turnOrder = <B>(builds: readonly B[], round: number): readonly B[] => (round % 2 === 0 ? builds : [...builds].reverse());

/**
 * Runs a comparison: `prepare` reads the command line's arguments; `body` gets its result, the processes and an echo
 * server, starts its builds and measures them, and returns the builds, which are then stopped. Everything
 * started is killed whatever happens, and a failure exits 2 naming the tool. --help (or -h) prints
 * `usage` and starts nothing; bad arguments print what is wrong and `usage`, without a stack.
 */
export function runComparison<T>(tool: string, usage: string, prepare: (argv: readonly string[]) => T, body: (options: T, procs: ProcessSet, echo: Child & { url: string }) => Promise<readonly RunningBuild[]>): void {
  const args = process.argv.slice(2);
  if (args.includes('--help') || args.includes('-h')) {
    process.stdout.write(`${usage}\n`);
    return;
  }
  let options: T;
  try {
    options = prepare(args);
  } catch (e) {
    process.stderr.write(`${tool}: ${e instanceof Error ? e.message : String(e)}\n${usage}\n`);
    process.exit(2);
  }
  const run = async (): Promise<void> => {
    const procs = new ProcessSet();
    cleanUpOnInterrupt(procs);
    try {
      const echo = await startEchoServer(procs);
      for (const b of await body(options, procs, echo)) await b.child.stop();
      await echo.stop();
    } finally {
      procs.killAll();
      rmSync(RUN_DIR, { recursive: true, force: true });
    }
  };
  run().catch((e: unknown) => {
    process.stderr.write(`${tool}: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
    process.exit(2);
  });
}
