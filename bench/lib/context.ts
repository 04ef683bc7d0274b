// What every section gets: the run's options, its processes, and baselines measured once per run
// and shared (a section run alone with --only still measures the baselines it is compared with).
import { build } from 'esbuild';
import path from 'node:path';
import { ProcessSet, tempDir, waitForOutput, DIST, ROOT, type Child } from './proc.js';
import type { Row } from './report.js';

export interface BenchOptions {
  quick: boolean;
  only: string[] | undefined;
  cpuProf: boolean;
  serviceEnv: Record<string, string>;
  /** Section 4's device counts, when not its defaults. */
  devices?: number[] | undefined;
}

export class BenchContext {
  readonly procs = new ProcessSet();
  private readonly memo = new Map<string, Promise<unknown>>();
  private ceilingScript: Promise<string> | undefined;

  constructor(readonly options: BenchOptions) {}

  get quick(): boolean {
    return this.options.quick;
  }

  /** A duration in seconds: the full run's, or the shorter one of --quick. */
  seconds(full: number, quick: number): number {
    return this.quick ? quick : full;
  }

  log(text: string): void {
    process.stderr.write(`  ${text}\n`);
  }

  /** Computes a shared figure once per run. */
  once<T>(key: string, fn: () => Promise<T>): Promise<T> {
    let p = this.memo.get(key) as Promise<T> | undefined;
    if (!p) this.memo.set(key, (p = fn()));
    return p;
  }

  /**
   * The bare uWS server bundled like the service (plain node, no tsx), so its start-up time and
   * memory are a fair baseline.
   */
  ceilingServerScript(): Promise<string> {
    this.ceilingScript ??= (async () => {
      const outfile = path.join(tempDir('ceiling'), 'ceiling-server.cjs');
      await build({
        entryPoints: [path.join(ROOT, 'bench/servers/ceiling-server.ts')],
        outfile,
        bundle: true,
        platform: 'node',
        target: 'node20',
        format: 'cjs',
        logLevel: 'warning',
        define: { 'import.meta.url': '__import_meta_url' },
        banner: { js: "const __import_meta_url = require('url').pathToFileURL(__filename).href;" },
      });
      return outfile;
    })();
    return this.ceilingScript;
  }

  async startCeilingServer(port = 0): Promise<Child & { url: string; port: number }> {
    const script = await this.ceilingServerScript();
    const child = this.procs.spawn(process.execPath, [...this.procs.runtimeFlags, script, DIST, String(port)]);
    const m = await waitForOutput(child, /listening on http:\/\/127\.0\.0\.1:(\d+)/);
    return { ...child, port: Number(m[1]), url: `http://127.0.0.1:${m[1]}` };
  }
}

export interface Section {
  /** What `--only` takes: ceiling, http, hub, floor, streaming, memory, startup, opus, storage, hostile. */
  readonly id: string;
  readonly number: string;
  readonly title: string;
  run(ctx: BenchContext): Promise<Row[]>;
}
