// The built-in echo voice server as a child process (`voice-hub echo-server --port N`), so a test can
// kill it with SIGKILL, as a crash would, and start it again on the same port.
import { spawn, type ChildProcess } from 'node:child_process';
import { after } from 'node:test';
import { BUNDLE, ROOT } from '../support/service.js';
import { withTimeout } from '../support/wait.js';

const running = new Set<ChildProcess>();
after(() => {
  for (const proc of running) proc.kill('SIGKILL');
});

export class EchoChild {
  private proc: ChildProcess | undefined;

  constructor(readonly port: number) {}

  get url(): string {
    return `ws://127.0.0.1:${this.port}/voice`;
  }

  /** Starts the echo server and resolves once it listens (the port may still be held briefly after a kill). */
  async start(): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      const proc = spawn(process.execPath, [BUNDLE, 'echo-server', '--host', '127.0.0.1', '--port', String(this.port)], {
        cwd: ROOT,
        env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp' },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      running.add(proc);
      let out = '';
      const listening = new Promise<boolean>((resolve) => {
        const onData = (d: Buffer): void => {
          out += d.toString();
          if (out.includes('listening on ws://')) resolve(true);
        };
        proc.stdout!.on('data', onData);
        proc.stderr!.on('data', onData);
        proc.once('exit', () => resolve(false));
      });
      if (await withTimeout(listening, 15_000, `echo server start:\n${out}`)) {
        this.proc = proc;
        return;
      }
      running.delete(proc);
      if (attempt >= 20) throw new Error(`echo server did not start on ${this.port}:\n${out}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  /** SIGKILL, and wait until it is gone. */
  async kill(): Promise<void> {
    const proc = this.proc;
    this.proc = undefined;
    if (!proc || proc.exitCode !== null || proc.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
    proc.kill('SIGKILL');
    await withTimeout(exited, 5000, 'echo server exit after SIGKILL');
    running.delete(proc);
  }
}
