// Helpers for the HTTPS, host filtering and logging tests: certificates made with openssl (as the
// docs/https.md tells a user to), a raw HTTP(S) client that can send any Host header and trust a given CA,
// the service in-process with its log levels from its own configuration, and the official SignalR
// client in a child process that trusts our CA through NODE_EXTRA_CA_CERTS, as a device would.
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import path from 'node:path';
import { after } from 'node:test';
import { createApp } from '../../src/app.js';
import { createLogger } from '../../src/log/logger.js';
import { ROOT, testConfig, type ServiceOptions, type TestService } from '../support/service.js';

// Everything started here is stopped when the test file ends (registered once, on the root: an
// `after` inside a `before` hook would run as soon as that hook ends).
const cleanups: Array<() => unknown> = [];
after(async () => {
  for (const fn of cleanups.reverse()) await fn();
});

const openssl = (args: string[]): void => {
  execFileSync('openssl', args, { stdio: ['ignore', 'ignore', 'pipe'] });
};

export interface CertFiles {
  readonly cert: string;
  readonly key: string;
}

/**
 * Self-signed, valid for localhost and 127.0.0.1 (docs/https.md's first recipe), with an RSA key or the
 * key `openssl req -newkey` makes of `newKey` (`ed448`, `ec -pkeyopt ec_paramgen_curve:P-224`, ...).
 */
export function makeSelfSigned(dir: string, name = 'self', newKey: string[] = ['rsa:2048'], digest = 'sha256'): CertFiles {
  const cert = path.join(dir, `${name}.crt`);
  const key = path.join(dir, `${name}.key`);
  openssl(['req', '-x509', '-newkey', ...newKey, '-nodes', `-${digest}`, '-days', '2', '-keyout', key, '-out', cert,
    '-subj', '/CN=localhost', '-addext', 'subjectAltName=DNS:localhost,IP:127.0.0.1']);
  return { cert, key };
}

/**
 * Self-signed for localhost, valid only from 2030 (what a Pi without a real-time clock meets until it
 * reaches a time server), or between the dates given: `openssl ca` is the one tool of OpenSSL 3.0 that
 * takes a start date.
 */
export function makeNotYetValid(dir: string, name = 'future', start = '20300101000000Z', end = '20310101000000Z'): CertFiles {
  const files = { cert: path.join(dir, `${name}.crt`), key: path.join(dir, `${name}.key`) };
  const csr = path.join(dir, `${name}.csr`);
  openssl(['req', '-new', '-newkey', 'rsa:2048', '-nodes', '-keyout', files.key, '-out', csr, '-subj', '/CN=localhost']);
  const db = path.join(dir, `${name}-index.txt`);
  writeFileSync(db, '');
  const config = path.join(dir, `${name}-ca.cnf`);
  writeFileSync(config, [
    '[ca]', 'default_ca = this', '[this]', `database = ${db}`, `new_certs_dir = ${dir}`, `serial = ${path.join(dir, `${name}.serial`)}`,
    'default_md = sha256', 'policy = any', 'unique_subject = no', '[any]', 'commonName = supplied', '',
  ].join('\n'));
  writeFileSync(path.join(dir, `${name}.serial`), '01\n');
  openssl(['ca', '-batch', '-config', config, '-selfsign', '-keyfile', files.key, '-in', csr, '-startdate', start, '-enddate', end, '-out', files.cert]);
  return files;
}

/** Self-signed for localhost, valid in 2000 only: expired, or the clock a bad time source set ahead. */
export function makeExpired(dir: string, name = 'expired'): CertFiles {
  return makeNotYetValid(dir, name, '20000101000000Z', '20010101000000Z');
}

/**
 * A small local CA and a server certificate it signed for localhost and 127.0.0.1 (docs/https.md's second
 * recipe), with the digest `digest` (`sha1` for one TLS clients refuse).
 */
export function makeCaAndLeaf(dir: string, name = 'ca', digest = 'sha256'): { ca: CertFiles; leaf: CertFiles } {
  const ca = { cert: path.join(dir, `${name}-root.crt`), key: path.join(dir, `${name}-root.key`) };
  openssl(['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-sha256', '-days', '2', '-keyout', ca.key, '-out', ca.cert,
    '-subj', '/CN=voice-hub test CA', '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign']);
  const leaf = { cert: path.join(dir, `${name}-server.crt`), key: path.join(dir, `${name}-server.key`) };
  const csr = path.join(dir, `${name}-server.csr`);
  openssl(['req', '-new', '-newkey', 'rsa:2048', '-nodes', '-keyout', leaf.key, '-out', csr, '-subj', '/CN=localhost']);
  const ext = path.join(dir, `${name}-server.ext`);
  writeFileSync(ext, 'subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n');
  openssl(['x509', '-req', '-in', csr, '-CA', ca.cert, '-CAkey', ca.key, '-CAcreateserial', '-days', '2', `-${digest}`,
    '-out', leaf.cert, '-extfile', ext]);
  return { ca, leaf };
}

export interface RawResult {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
  json: any; // eslint-disable-line @typescript-eslint/no-explicit-any
}

/** One request with exactly these headers (Host included), over TLS for https:// URLs with `ca` trusted. */
export function request(
  url: string,
  opts: { method?: string; headers?: Record<string, string>; body?: unknown; ca?: string | Buffer } = {},
): Promise<RawResult> {
  const u = new URL(url);
  const body = opts.body === undefined ? undefined : JSON.stringify(opts.body);
  const headers: Record<string, string> = { ...(body ? { 'content-type': 'application/json' } : {}), ...opts.headers };
  const options: https.RequestOptions = {
    method: opts.method ?? 'GET',
    host: u.hostname,
    port: u.port,
    path: u.pathname + u.search,
    headers,
    agent: false,
    timeout: 10_000,
    ...(opts.ca ? { ca: opts.ca } : {}),
  };
  return new Promise((resolve, reject) => {
    const req = (u.protocol === 'https:' ? https : http).request(options, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (text += d));
      res.on('end', () => {
        let json: unknown;
        try {
          json = text ? JSON.parse(text) : undefined;
        } catch {
          json = undefined;
        }
        resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json });
      });
    });
    req.on('timeout', () => req.destroy(new Error(`${options.method} ${url} timed out`)));
    req.on('error', reject);
    req.end(body);
  });
}

/** Runs `fn` when the test file ends, after the tests and before the services stop. */
export function atEnd(fn: () => unknown): void {
  cleanups.push(fn);
}

export interface LoggedService extends TestService {
  readonly httpsUrl: string | undefined;
}

/** The service in-process with its logger built from its own `Logging.LogLevel` (as main.ts does). */
export async function startLoggedService(opts: ServiceOptions = {}): Promise<LoggedService> {
  const { loaded, dataDir } = testConfig(opts);
  const logs: string[] = [];
  const logger = createLogger({ levels: loaded.config.Logging.LogLevel, write: (l) => logs.push(l), journald: false });
  const app = createApp(loaded, { logger });
  const running = await app.start();
  cleanups.push(() => app.stop());
  return {
    url: `http://127.0.0.1:${running.port}`,
    httpsUrl: running.httpsPort === undefined ? undefined : `https://127.0.0.1:${running.httpsPort}`,
    port: running.port,
    dataDir,
    app: running,
    loaded,
    logs,
    stop: () => app.stop(),
    closeStore: () => app.closeStore(),
  };
}

/** One Opus packet of the speech fixture, Base64. */
export function speechPacket(index = 0): string {
  const packets = JSON.parse(readFileSync(path.join(ROOT, 'test/fixtures/speech-16k-mono.packets.json'), 'utf8')) as string[];
  return packets[index]!;
}

/** What the child client printed, one parsed JSON object per line. */
export interface HubChild {
  readonly proc: ChildProcess;
  readonly events: Array<{ event: string; args: unknown[] }>;
  waitFor(event: string, count?: number, timeoutMs?: number): Promise<Array<{ event: string; args: unknown[] }>>;
  send(line: string): void;
  output(): string;
}

/**
 * The official @microsoft/signalr client in a child process (test/https/hub-client-child.ts): it
 * connects to `hubUrl`, joins the session, prints every event as a JSON line and sends audio when
 * told `send <base64>` on stdin. `env` carries NODE_EXTRA_CA_CERTS for wss://.
 */
export function startHubChild(hubUrl: string, sessionId: string, token: string, env: Record<string, string>): HubChild {
  const script = path.join(import.meta.dirname, 'hub-client-child.ts');
  const proc = spawn(process.execPath, ['--import', 'tsx', script, hubUrl, sessionId, token], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', ...env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  cleanups.push(() => {
    if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL');
  });
  const events: Array<{ event: string; args: unknown[] }> = [];
  let out = '';
  let pending = '';
  const waiters: Array<() => void> = [];
  proc.stdout!.setEncoding('utf8');
  proc.stdout!.on('data', (d: string) => {
    out += d;
    pending += d;
    const lines = pending.split('\n');
    pending = lines.pop()!;
    for (const line of lines) {
      if (!line.trim()) continue;
      try {
        events.push(JSON.parse(line) as { event: string; args: unknown[] });
      } catch {
        // not ours (a warning): kept in output() only
      }
    }
    for (const wake of waiters.splice(0)) wake();
  });
  proc.stderr!.setEncoding('utf8');
  proc.stderr!.on('data', (d: string) => (out += d));
  proc.on('exit', () => {
    for (const wake of waiters.splice(0)) wake();
  });
  return {
    proc,
    events,
    output: () => out,
    send: (line) => proc.stdin!.write(line + '\n'),
    async waitFor(event, count = 1, timeoutMs = 15_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const found = events.filter((e) => e.event === event);
        if (found.length >= count) return found;
        const left = deadline - Date.now();
        if (left <= 0 || proc.exitCode !== null) throw new Error(`child: no ${count} ${event} event(s); output:\n${out}`);
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, Math.min(left, 500));
          waiters.push(() => {
            clearTimeout(timer);
            resolve();
          });
        });
      }
    },
  };
}
