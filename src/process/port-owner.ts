// Who holds a TCP port: checked before start-up writes anything, so a second voice-hub on a port that
// is taken leaves its data directory untouched and names the process in its way. The listen sockets
// themselves are exclusive (see src/http/server.ts); this only makes the refusal early and readable.
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import dns from 'node:dns/promises';
import net from 'node:net';
import { maskSecretArgs, type SecretOption } from '../config/mask.js';
import { publicServerUrl } from '../upstream/public-url.js';

export interface PortOwner {
  readonly port: number;
  /** Undefined when the process is not visible to this user (another user's, or hidden /proc). */
  readonly pid?: number;
  /** Its command line, shortened, secrets masked, where readable. */
  readonly command?: string;
}

export class PortInUseError extends Error {
  constructor(
    readonly host: string,
    readonly owner: PortOwner,
    /** Where the port is chosen, for the advice. */
    choose = '--port, Server.Port',
  ) {
    const who = owner.pid !== undefined
      ? `PID ${owner.pid}${owner.command ? ` (${owner.command})` : ''}`
      : 'a process this user cannot see (another user\'s)';
    super(`port ${owner.port} on ${host} is already in use by ${who}: stop it or choose another port (${choose})`);
  }
}

/**
 * Binds `host:port` without SO_REUSEPORT and lets go at once. A voice-hub listening there (exclusive
 * or not) makes this fail with EADDRINUSE. Any other failure (a port below 1024 without the right, an
 * address not on this machine) rejects with the system's error, which names its cause: the real listen
 * (uWS) can only say that it failed, and by then the data directory had been set up.
 */
export function portTaken(host: string, port: number): Promise<boolean> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', (e: NodeJS.ErrnoException) => (e.code === 'EADDRINUSE' ? resolve(true) : reject(e)));
    server.listen({ host, port, exclusive: true }, () => server.close(() => resolve(false)));
  });
}

/**
 * Throws the resolver's error (syscall getaddrinfo) for a host that names no address, as a listen on it
 * would, without listening: a listen loads Node's cluster module and child_process for good, which a
 * service started on port 0 otherwise never needs (test/process/idle-modules.test.ts).
 */
export async function assertHostResolves(host: string): Promise<void> {
  await dns.lookup(host);
}

/**
 * Throws the system's error when this machine cannot listen on `host` at all: a name that does not
 * resolve (ENOTFOUND), an address not one of its own (EADDRNOTAVAIL). Probed on a port the system picks,
 * so that it holds for a configured port 0 (which no port check covers) and beside a service already
 * listening on `port`; the error names `port`, the one the service would listen on, as a failed listen
 * there would (the address is what failed, whatever the port).
 */
export function assertListenAddress(host: string, port: number): Promise<void> {
  return portTaken(host, 0).then(
    () => undefined,
    (e: unknown) => {
      if ((e as NodeJS.ErrnoException).syscall === 'listen') (e as { port?: number }).port = port;
      throw e;
    },
  );
}

/** How often, and how far apart, a taken port whose owner /proc does not show is probed again. */
const UNSEEN_OWNER_PROBES = 5;
const UNSEEN_OWNER_RETRY_MS = 20;

/**
 * Who listens on `host:port`, or undefined when it is free. A listener that /proc does not show may be
 * another start's own probe (portTaken), open for a moment: two services started at once on one port
 * called each other "a process this user cannot see". So the port is probed again before its owner is
 * said to be hidden; once free, the exclusive listen decides between the two and names the winner.
 */
export async function portHolder(host: string, port: number, secretOption: SecretOption): Promise<PortOwner | undefined> {
  for (let probe = 1; ; probe++) {
    if (!(await portTaken(host, port))) return undefined;
    const owner = findPortOwner(port, secretOption);
    if (owner.pid !== undefined || probe === UNSEEN_OWNER_PROBES) return owner;
    await new Promise((resolve) => setTimeout(resolve, UNSEEN_OWNER_RETRY_MS));
  }
}

/**
 * Inodes of the sockets listening on `port` (any address), from this network namespace's tcp and tcp6
 * tables: /proc/self/net, which /proc/net only links to and a /proc mounted with subset=pid still shows.
 */
function listeningInodes(port: number): Set<string> {
  const inodes = new Set<string>();
  const hexPort = port.toString(16).toUpperCase().padStart(4, '0');
  for (const table of ['/proc/self/net/tcp', '/proc/self/net/tcp6']) {
    let text: string;
    try {
      text = readFileSync(table, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const f = line.trim().split(/\s+/);
      // local_address is HEXADDR:HEXPORT; state 0A is LISTEN; the inode is the 10th field.
      if (f.length > 9 && f[1]?.endsWith(`:${hexPort}`) && f[3] === '0A') inodes.add(f[9]!);
    }
  }
  return inodes;
}

/** The process listening on `port`, as far as /proc lets this user see; `secretOption`: see maskSecretArgs. */
export function findPortOwner(port: number, secretOption: SecretOption): PortOwner {
  const inodes = listeningInodes(port);
  if (inodes.size === 0) return { port };
  const targets = new Set([...inodes].map((i) => `socket:[${i}]`));
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let fds: string[];
    try {
      fds = readdirSync(`/proc/${entry}/fd`);
    } catch {
      continue; // another user's process, or gone
    }
    for (const fd of fds) {
      let link: string;
      try {
        link = readlinkSync(`/proc/${entry}/fd/${fd}`);
      } catch {
        continue;
      }
      if (targets.has(link)) return { port, pid: Number(entry), command: commandLine(entry, secretOption) };
    }
  }
  return { port };
}

function commandLine(pid: string, secretOption: SecretOption): string | undefined {
  try {
    // The owner may be a voice-hub given a secret, or a URL with credentials, as a flag: the message goes
    // to a terminal or the journal.
    const raw = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0$/, '');
    if (raw === '') return undefined;
    const text = maskSecretArgs(raw.split('\0'), publicServerUrl, secretOption).map(shellWord).join(' ');
    return text.length > 120 ? `${text.slice(0, 117)}...` : text || undefined;
  } catch {
    return undefined;
  }
}

/**
 * An argument as a shell would need it typed: an empty value (`--Mqtt.BrokerAddress ''`, MQTT off) or
 * one with spaces otherwise reads as a flag without its value, or as several. One with control
 * characters in bash's `$'...'` form (`$'a\nb'`): any local user's process may hold the port, and its
 * arguments, a newline or an escape sequence among them, would otherwise end the line in the journal
 * and start one of their own.
 */
function shellWord(arg: string): string {
  if (/^[\w@%+=:,./*-]+$/.test(arg)) return arg;
  if (!CONTROL.test(arg)) return `'${arg.replace(/'/g, `'\\''`)}'`;
  return `$'${arg.replace(/[\\']/g, (c) => `\\${c}`).replace(CONTROLS, controlEscape)}'`;
}

const CONTROL = /[\x00-\x1f\x7f-\x9f\u2028\u2029]/;
const CONTROLS = new RegExp(CONTROL.source, 'g');
const NAMED: Readonly<Record<string, string>> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' };
const controlEscape = (c: string): string => {
  const code = c.charCodeAt(0);
  return NAMED[c] ?? (code <= 0x7f ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`);
};
