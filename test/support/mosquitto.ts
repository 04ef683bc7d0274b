// A real mosquitto broker for tests: loopback only, a free port, a temporary config, optional
// password file (made with mosquitto_passwd). `restart()` keeps the port so clients can reconnect.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { freePort } from './ports.js';

const MOSQUITTO = '/usr/sbin/mosquitto';
const MOSQUITTO_PASSWD = '/usr/bin/mosquitto_passwd';

export interface MosquittoOptions {
  /** user -> password; when given, anonymous clients are refused. */
  users?: Record<string, string>;
  /** Also log notices (each client's connect and disconnect, with its client id). */
  logNotices?: boolean;
}

export interface Mosquitto {
  readonly port: number;
  readonly url: string;
  /** Broker output, for failure messages. */
  readonly output: () => string;
  /** Stops the broker (SIGTERM, then SIGKILL after 5 s) and removes its temp folder. Idempotent. */
  stop(): Promise<void>;
  /**
   * Kills the broker (SIGKILL) and removes its temp folder: a stopped (paused) one goes without reading
   * what waits for it. stop() resumes it to take SIGTERM, and it may then still acknowledge a message.
   */
  crash(): Promise<void>;
  /**
   * Starts the broker again on the same port, stopping it first if it runs; retained messages are lost
   * (persistence is off). After `stop()` this brings a stopped broker back.
   */
  restart(): Promise<void>;
  /** SIGSTOP / SIGCONT: a broker that hangs with its sockets still open (no acks, no errors). */
  pause(): void;
  resume(): void;
}

/** Waits (bounded) until the apt install that provides mosquitto has finished. */
async function waitForBinary(timeoutMs = 120_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!existsSync(MOSQUITTO)) {
    if (Date.now() > deadline) throw new Error(`${MOSQUITTO} not found (is the mosquitto package installed?)`);
    await new Promise((r) => setTimeout(r, 500));
  }
}

function canConnect(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

export async function startMosquitto(options: MosquittoOptions = {}): Promise<Mosquitto> {
  await waitForBinary();
  const port = await freePort();
  let output = '';
  let running: { proc: ChildProcess; dir: string } | undefined;

  /** Writes a fresh config (and password file) into a new temp folder and starts mosquitto on `port`. */
  const launch = async (): Promise<void> => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'voice-hub-mosquitto-'));
    const lines = [`listener ${port} 127.0.0.1`, 'persistence false', 'log_dest stderr', 'log_type error', 'log_type warning'];
    // Run as root, mosquitto would switch to the `mosquitto` user, which cannot read our temp folder.
    if (process.getuid?.() === 0) lines.push('user root');
    if (options.logNotices) lines.push('log_type notice');
    if (options.users) {
      const passwords = path.join(dir, 'passwords');
      writeFileSync(passwords, '', { mode: 0o600 });
      for (const [user, password] of Object.entries(options.users)) {
        execFileSync(MOSQUITTO_PASSWD, ['-b', passwords, user, password], { stdio: 'pipe' });
      }
      lines.push('allow_anonymous false', `password_file ${passwords}`);
    } else {
      lines.push('allow_anonymous true');
    }
    const configFile = path.join(dir, 'mosquitto.conf');
    writeFileSync(configFile, lines.join('\n') + '\n');

    const proc = spawn(MOSQUITTO, ['-c', configFile], { stdio: ['ignore', 'pipe', 'pipe'] });
    running = { proc, dir };
    let exited = false;
    proc.stdout?.on('data', (b: Buffer) => (output += b.toString()));
    proc.stderr?.on('data', (b: Buffer) => (output += b.toString()));
    proc.once('exit', () => (exited = true));
    const deadline = Date.now() + 10_000;
    // The port may still be held for a moment after a restart; wait until mosquitto listens.
    while (!(await canConnect(port))) {
      if (exited || Date.now() > deadline) {
        await halt();
        throw new Error(`mosquitto ${exited ? 'exited during start-up' : `did not listen on ${port} within 10 s`}:\n${output}`);
      }
      await new Promise((r) => setTimeout(r, 50));
    }
  };

  /** `crash`: SIGKILL at once, so a paused broker reads and answers nothing more before it goes. */
  const halt = async (crash = false): Promise<void> => {
    const current = running;
    running = undefined;
    if (!current) return;
    const { proc, dir } = current;
    if (proc.exitCode === null && proc.signalCode === null) {
      const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
      if (crash) proc.kill('SIGKILL');
      proc.kill('SIGCONT'); // a paused broker would not act on SIGTERM
      proc.kill('SIGTERM');
      const timer = setTimeout(() => proc.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(timer);
    }
    rmSync(dir, { recursive: true, force: true });
  };

  await launch();
  return {
    port,
    url: `mqtt://127.0.0.1:${port}`,
    output: () => output,
    stop: () => halt(),
    crash: () => halt(true),
    async restart() {
      await halt();
      await launch();
    },
    pause: () => void running?.proc.kill('SIGSTOP'),
    resume: () => void running?.proc.kill('SIGCONT'),
  };
}
