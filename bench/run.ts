// `npm run bench` (issue 6 "Benchmarks"): builds the bundle, runs each section against the service
// as users run it (node dist/voice-hub.cjs, load from other processes, all on 127.0.0.1), prints
// one table with every figure beside its baseline from the same run and PASS/FAIL per target, and
// writes bench-results.json. Flags: --quick (short durations), --only <id[,id...]>, the rest in --help.
import { execFileSync } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { BenchContext, type BenchOptions, type Section } from './lib/context.js';
import { cleanUpOnInterrupt, ROOT, RUN_DIR } from './lib/proc.js';
import { renderNotes, renderTable, type Row } from './lib/report.js';
import { ensureWrk } from './lib/wrk.js';
import { ceilingSection } from './sections/ceiling.js';
import { httpSection } from './sections/http.js';
import { hubSection } from './sections/hub.js';
import { floorSection } from './sections/floor.js';
import { DEFAULT_DEVICE_COUNTS, streamingSection } from './sections/streaming.js';
import { memorySection } from './sections/memory.js';
import { startupSection } from './sections/startup.js';
import { opusSection } from './sections/opus.js';
import { storageSection } from './sections/storage.js';
import { hostileSection } from './sections/hostile.js';

const SECTIONS: Section[] = [
  ceilingSection, httpSection, hubSection, floorSection, streamingSection, memorySection, startupSection, opusSection, storageSection, hostileSection,
];

function parseArgs(argv: string[]): BenchOptions & { node: string; nodeFlags: string[] } {
  let quick = false;
  const nodeFlags: string[] = [];
  let devices: number[] | undefined;
  let node = process.execPath;
  let cpuProf = false;
  const serviceEnv: Record<string, string> = {};
  let only: string[] | undefined;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '--quick') quick = true;
    else if (a === '--cpu-prof') cpuProf = true;
    else if (a === '--service-env') {
      const [k, ...v] = (argv[++i] ?? '').split('=');
      if (!k || v.length === 0) throw new Error('--service-env needs KEY=VALUE');
      serviceEnv[k] = v.join('=');
    }
    else if (a === '--node') node = argv[++i] ?? '';
    else if (a === '--node-flag') {
      const flag = argv[++i] ?? '';
      if (!flag.startsWith('--')) throw new Error(`--node-flag needs a node option, e.g. --node-flag=--v8-pool-size=4, got '${flag}'`);
      nodeFlags.push(flag);
    }
    else if (a.startsWith('--node-flag=')) nodeFlags.push(a.slice('--node-flag='.length));
    else if (a === '--devices') {
      const text = argv[++i] ?? '';
      devices = text.split(',').map(Number);
      if (devices.length === 0 || devices.some((n) => !Number.isInteger(n) || n < 1)) throw new Error(`--devices needs positive whole numbers separated by commas, got '${text}'`);
    }
    else if (a === '--only') only = (argv[++i] ?? '').split(',').filter(Boolean);
    else if (a.startsWith('--only=')) only = a.slice('--only='.length).split(',').filter(Boolean);
    else if (a === '--help' || a === '-h') {
      process.stdout.write(`usage: npm run bench -- [--quick] [--only ${SECTIONS.map((s) => s.id).join(',')}] [--cpu-prof] [--service-env KEY=VALUE]... [--node PATH] [--node-flag FLAG]... [--devices N[,N...]]\n`
        + '  --cpu-prof: every service started writes a V8 CPU profile to $TMPDIR/voice-hub-bench-profiles/ (figures are then not comparable)\n'
        + '  --service-env: extra environment for the services measured, e.g. GLIBC_TUNABLES=glibc.malloc.mmap_threshold=73728\n'
        + '  --node: the node that runs the bundle measured (default: this one), e.g. Node 24 from scripts/debian-libs.mjs node24\n'
        + '  --node-flag: a node option for the services measured, after the ones users run them with (--v8-pool-size=0), which it\n'
        + '    may override: --node-flag=--v8-pool-size=4 runs them with Node\'s default helper threads\n'
        + `  --devices: the device counts of section 4 (default ${DEFAULT_DEVICE_COUNTS.join(',')}); the floor runs beside each of them\n`);
      process.exit(0);
    } else throw new Error(`unknown argument ${a}`);
  }
  const unknown = only?.filter((id) => !SECTIONS.some((s) => s.id === id || s.number === id)) ?? [];
  if (unknown.length > 0) throw new Error(`unknown section(s) ${unknown.join(', ')}; sections: ${SECTIONS.map((s) => s.id).join(', ')}`);
  if (!node) throw new Error('--node needs the path of a node binary');
  return { quick, only, cpuProf, serviceEnv, node, nodeFlags, devices };
}

async function main(): Promise<void> {
  const options = parseArgs(process.argv.slice(2));
  const ctx = new BenchContext(options);
  const profiles = path.join(os.tmpdir(), 'voice-hub-bench-profiles');
  if (options.cpuProf) ctx.procs.serviceNodeFlags.push('--cpu-prof', '--cpu-prof-dir', profiles);
  ctx.procs.runtimeFlags.push(...options.nodeFlags);
  ctx.procs.serviceEnv = options.serviceEnv;
  ctx.procs.serviceNode = options.node;
  cleanUpOnInterrupt(ctx.procs);

  const started = performance.now();
  process.stderr.write('building dist/voice-hub.cjs (node build.mjs)\n');
  execFileSync(process.execPath, [path.join(ROOT, 'build.mjs')], { cwd: ROOT, stdio: 'inherit' });
  ensureWrk();

  const chosen = SECTIONS.filter((s) => !options.only || options.only.includes(s.id) || options.only.includes(s.number));
  const rows: Row[] = [];
  const failures: string[] = [];
  for (const section of chosen) {
    const t0 = performance.now();
    process.stderr.write(`${section.number}. ${section.title}\n`);
    try {
      rows.push(...(await section.run(ctx)));
    } catch (e) {
      const text = e instanceof Error ? (e.stack ?? e.message) : String(e);
      failures.push(`${section.number}. ${section.title}: ${text}`);
      process.stderr.write(`  FAILED: ${text}\n`);
    }
    process.stderr.write(`  (${((performance.now() - t0) / 1000).toFixed(1)} s)\n`);
  }
  ctx.procs.killAll();
  rmSync(RUN_DIR, { recursive: true, force: true });

  const seconds = (performance.now() - started) / 1000;
  const machine = `${os.cpus().length} x ${os.cpus()[0]?.model ?? 'cpu'}, load average ${os.loadavg().map((l) => l.toFixed(2)).join(' ')}`;
  const table = renderTable(rows);
  const notes = renderNotes(rows);
  process.stdout.write(`\nvoice-hub benchmarks (${options.quick ? 'quick' : 'full'} run, ${seconds.toFixed(0)} s; ${machine}; node ${process.version})\n\n`);
  process.stdout.write(`${table}\n\n${notes}\n`);
  const targets = rows.filter((r) => r.target);
  process.stdout.write(`\ntargets: ${targets.filter((r) => r.target!.pass).length} of ${targets.length} met\n`);
  if (failures.length > 0) process.stdout.write(`\nsections that failed:\n${failures.map((f) => `- ${f.split('\n')[0]}`).join('\n')}\n`);

  const file = path.join(ROOT, 'bench-results.json');
  writeFileSync(file, JSON.stringify({ date: new Date().toISOString(), quick: options.quick, seconds, machine, node: process.version, rows, failures }, null, 2) + '\n');
  process.stdout.write(`\nwrote ${path.relative(process.cwd(), file) || file}\n`);
  if (options.cpuProf) process.stdout.write(`CPU profiles of the services: ${profiles}/ (open in Chrome DevTools)\n`);
  process.exitCode = failures.length > 0 ? 1 : 0;
}

main().catch((e: unknown) => {
  process.stderr.write(`bench: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
  process.exit(2);
});
