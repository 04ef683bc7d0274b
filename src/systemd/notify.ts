// systemd's readiness and watchdog protocol (sd_notify) for the unit's Type=notify and WatchdogSec=:
// READY=1 once the service listens, WATCHDOG=1 while the event loop runs, STOPPING=1 on shutdown.
//
// Node has no Unix datagram sockets, so a small perl co-process (perl-base is Essential in Debian and
// Raspberry Pi OS: on every system the package installs on, nothing to depend on) sends each line this
// writes to its stdin as one datagram to $NOTIFY_SOCKET. It lives as long as the service: systemd
// before v256 (Debian 12 has 252) finds the unit of a notification by the sender's PID while handling
// it, so a sender that has already exited, such as a `systemd-notify` child, can be ignored. Watchdog
// pings come from a timer of the main event loop, so a hung loop stops them and systemd restarts us.
// The stop signal reaches the whole control group: the sender ignores it and leaves when its input ends
// (the service exited), so STOPPING=1 still goes out and its death is no error in the journal.
import { createRequire } from 'node:module';
import type { Socket } from 'node:net';
import type { Logger } from '../log/logger.js';

const SENDER = `
use Socket;
$SIG{TERM} = $SIG{INT} = $SIG{HUP} = 'IGNORE';
my $to = $ENV{NOTIFY_SOCKET};
$to =~ s/^@/\\0/;
socket(my $s, PF_UNIX, SOCK_DGRAM, 0) or die "socket: $!\\n";
my $addr = pack_sockaddr_un($to);
while (my $line = <STDIN>) {
  chomp $line;
  defined(send($s, $line, 0, $addr)) or die "send to $ENV{NOTIFY_SOCKET}: $!\\n";
}
`;

export interface Notifier {
  /** The service listens: `systemctl start` returns now. */
  ready(): void;
  /** Shutdown began: systemd shows the unit as deactivating. */
  stopping(): void;
}

/** A notifier when systemd asked for one ($NOTIFY_SOCKET), else undefined (run by hand, in tests). */
export function systemdNotifier(env: NodeJS.ProcessEnv, logger: Logger): Notifier | undefined {
  const socket = env.NOTIFY_SOCKET;
  if (!socket) return undefined;
  // Loaded here, not at start: run by hand (or in tests) no co-process is started.
  const { spawn } = createRequire(import.meta.url)('node:child_process') as typeof import('node:child_process');
  // Its stderr comes through the logger, so what perl says (why it died) carries a priority in the journal.
  const child = spawn('perl', ['-e', SENDER], { stdio: ['pipe', 'ignore', 'pipe'], env: { PATH: env.PATH, NOTIFY_SOCKET: socket } });
  const stdin = child.stdin as Socket;
  const stderr = child.stderr as Socket;
  let said = '';
  stderr.setEncoding('utf8');
  stderr.on('data', (text: string) => {
    const lines = (said + text).split('\n');
    said = lines.pop()!;
    for (const line of lines) if (line) logger.error(`systemd notification sender: ${line}`);
  });
  let exiting = false;
  process.once('exit', () => {
    exiting = true;
  });
  const lost = (why: string): void => {
    if (!exiting) logger.error(`systemd notification sender ${why}: systemd sees no readiness and no watchdog pings`);
  };
  child.on('error', (e) => lost(`could not run perl (${e.message})`));
  // 'close', not 'exit': after its stderr is read, so what it said comes before that it is gone.
  child.on('close', (code, signal) => lost(`exited (${signal ?? code})`));
  stdin.on('error', (e) => lost(`lost its input (${e.message})`));
  // Neither may keep a finished service alive.
  child.unref();
  stdin.unref();
  stderr.unref();
  const send = (message: string): void => {
    if (stdin.writable) stdin.write(`${message}\n`);
  };

  // WATCHDOG_PID names the process systemd expects pings from; a child that inherited it must not ping.
  const usec = Number(env.WATCHDOG_USEC);
  if (usec > 0 && (!env.WATCHDOG_PID || Number(env.WATCHDOG_PID) === process.pid)) {
    // Half the interval, as sd_watchdog_enabled(3) advises: one late tick is not yet a restart.
    setInterval(() => send('WATCHDOG=1'), Math.max(Math.floor(usec / 2000), 100)).unref();
  }
  return { ready: () => send('READY=1'), stopping: () => send('STOPPING=1') };
}
