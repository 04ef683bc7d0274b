// systemd booted as PID 1 in a Debian root (boot-systemd.sh), and commands run inside it through
// nsenter: its namespaces, its root, a clean environment. Every call is bounded; stop() (or the exit of
// the test process) ends the namespaces with everything in them.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { ROOT } from '../support/service.js';

const BOOT_SCRIPT = path.join(ROOT, 'test/packaging/boot-systemd.sh');
const INSIDE_ENV = ['PATH=/usr/sbin:/usr/bin:/sbin:/bin', 'LANG=C.UTF-8', 'DEBIAN_FRONTEND=noninteractive', 'SYSTEMD_COLORS=0', 'SYSTEMD_PAGER='];

export interface Result {
  status: number | null;
  stdout: string;
  stderr: string;
  ms: number;
}

function children(pid: number): number[] {
  const file = `/proc/${pid}/task/${pid}/children`;
  return existsSync(file) ? readFileSync(file, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number) : [];
}

function comm(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/comm`, 'utf8').trim();
  } catch {
    return '';
  }
}

export class BootedRoot {
  private constructor(
    readonly root: string,
    private readonly script: ChildProcess,
    /** unshare's PID: killing it kills the namespaces' PID 1 (--kill-child). */
    private readonly unsharePid: number,
    /** systemd, PID 1 inside, as this machine numbers it. */
    readonly initPid: number,
    private readonly onExit: () => void,
  ) {}

  /** Boots systemd in `root` and waits (bounded) until it reports the system running. */
  static async boot(root: string, timeoutMs = 60_000): Promise<{ booted: BootedRoot; state: string }> {
    const script = spawn(BOOT_SCRIPT, [root], { stdio: ['ignore', 'inherit', 'inherit'] });
    const deadline = Date.now() + timeoutMs;
    let unsharePid = 0;
    let initPid = 0;
    while (Date.now() < deadline && script.exitCode === null && script.pid) {
      unsharePid = children(script.pid).find((p) => comm(p) === 'unshare') ?? 0;
      initPid = unsharePid ? (children(unsharePid).find((p) => comm(p) === 'systemd') ?? 0) : 0;
      if (initPid) break;
      await sleep(100);
    }
    const kill = (): void => {
      // By PID, and only while that PID is still ours (its name checked: a finished PID may be reused).
      for (const [pid, name] of [[unsharePid, 'unshare'], [script.pid ?? 0, 'boot-systemd.sh']] as const) {
        if (pid && comm(pid) === name) process.kill(pid, 'SIGKILL');
      }
    };
    if (!initPid) {
      kill();
      throw new Error(`systemd did not start in ${root} within ${timeoutMs} ms (boot script exit ${script.exitCode})`);
    }
    // Whatever ends the test process, nothing of the root may outlive it.
    process.on('exit', kill);
    const booted = new BootedRoot(root, script, unsharePid, initPid, kill);
    // systemctl talks to PID 1 through this socket, which systemd makes a moment after it starts.
    while (!existsSync(`/proc/${initPid}/root/run/systemd/private`) && Date.now() < deadline) await sleep(100);
    const state = booted.run(['systemctl', 'is-system-running', '--wait'], { timeoutMs: Math.max(deadline - Date.now(), 1000) });
    return { booted, state: state.stdout.trim() || `${state.stderr.trim()} (exit ${state.status})` };
  }

  /** Runs argv inside (namespaces, root, clean environment); never throws for a non-zero exit. */
  run(argv: string[], opts: { input?: string; timeoutMs?: number } = {}): Result {
    const started = Date.now();
    const res = spawnSync('nsenter', ['--target', String(this.initPid), '--all', '--root', '--wd', '--', 'env', '-i', ...INSIDE_ENV, ...argv], {
      encoding: 'utf8',
      input: opts.input,
      timeout: opts.timeoutMs ?? 60_000,
      maxBuffer: 16 * 1024 * 1024,
    });
    if (res.error) throw new Error(`${argv.join(' ')}: ${res.error.message}`);
    return { status: res.status, stdout: res.stdout, stderr: res.stderr, ms: Date.now() - started };
  }

  /** Sends a signal to a process inside, by its PID there; never to 0 or 1 (a group, systemd). */
  signal(pid: string, signal: string): void {
    if (!/^[1-9]\d*$/.test(pid) || pid === '1') throw new Error(`refusing to signal pid "${pid}"`);
    this.sh(`kill -${signal} ${pid}`);
  }

  /** A shell command inside; throws with its output when it exits non-zero. */
  sh(command: string, timeoutMs?: number): string {
    const res = this.run(['sh', '-c', command], { timeoutMs });
    if (res.status !== 0) throw new Error(`inside the root: ${command}: exit ${res.status}\n${res.stdout}${res.stderr}`);
    return res.stdout;
  }

  /** `systemctl show` properties of a unit. */
  show(unit: string, props: string[]): Record<string, string> {
    const out = this.sh(`systemctl show ${unit} -p ${props.join(',')}`);
    return Object.fromEntries(out.trim().split('\n').map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]));
  }

  /** Polls `systemctl show` until `done` holds; returns the last properties either way. */
  async waitFor(unit: string, props: string[], done: (p: Record<string, string>) => boolean, timeoutMs: number): Promise<Record<string, string>> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const p = this.show(unit, props);
      if (done(p) || Date.now() > deadline) return p;
      await sleep(200);
    }
  }

  /** Ends the namespaces (SIGTERM to the boot script, which kills unshare and removes its cgroup). */
  async stop(timeoutMs = 15_000): Promise<void> {
    process.off('exit', this.onExit);
    if (this.script.exitCode === null && this.script.signalCode === null) {
      const exited = new Promise<void>((resolve) => this.script.once('exit', () => resolve()));
      this.script.kill('SIGTERM');
      await Promise.race([exited, sleep(timeoutMs)]);
    }
    this.onExit();
    const deadline = Date.now() + timeoutMs;
    while (comm(this.initPid) === 'systemd' && Date.now() < deadline) await sleep(100);
    if (comm(this.initPid) === 'systemd') throw new Error(`systemd (pid ${this.initPid}) is still running`);
  }
}
