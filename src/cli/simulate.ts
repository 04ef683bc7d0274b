// `voice-hub simulate`: N devices stream real-time Opus through a running service and its upstream voice
// server (normally the built-in echo server), and the run ends with a table of packets and responses:
// expected, arrived, lost, duplicated and late (sim-tally.ts defines each), and round-trip percentiles.
// With `dropEvery` the devices reach the hub through a local relay that cuts every connection on that
// schedule, each outage lasting `dropForMs`. Bounded: set-up steps time out, streaming lasts `seconds`,
// and answers still missing after a drain grace count as lost. Interrupted (`stop`: Ctrl-C in the CLI,
// sim-interrupt.ts), it reports what ran and still deletes what it registered, within a few seconds.
import { randomBytes } from 'node:crypto';
import { usageError } from './command.js';
import { SIMULATE } from './commands.js';
import { startDropRelay, type DropRelay } from './drop-relay.js';
import type { SimProtocol } from './sim-client.js';
import { SimDevice, type SimApi } from './sim-device.js';
import { SIM_PACKET_MS, simPackets } from './sim-packets.js';
import { DEFAULT_DROP_FOR_MS, DEFAULT_LATE_MS, MAX_SIMULATED_DEVICES, MAX_SIMULATED_SECONDS } from './sim-defaults.js';
import { interruptOnSignals } from './sim-interrupt.js';
import { formatSimulationReport, summarise, type SimulationReport } from './sim-report.js';
import { monotonicMs } from '../monotonic-clock.js';

export { formatSimulationReport, percentile, type SimulationReport } from './sim-report.js';

export interface SimulateOptions {
  /** The service's base address, e.g. http://127.0.0.1:5000. */
  url: string;
  devices: number;
  seconds: number;
  protocol?: SimProtocol;
  /** `X-API-Key` for services with `ApiKeys` set. */
  apiKey?: string;
  /** Admin token: the simulated devices are deleted at the end; without it they stay registered. */
  adminToken?: string;
  /** Cut every hub connection this often (seconds), through a local relay; undefined: no drops. */
  dropEverySeconds?: number;
  /** How long each cut lasts: new connections wait this long (ms; default DEFAULT_DROP_FOR_MS). */
  dropForMs?: number;
  /** The clients ask for SignalR stateful reconnect. */
  statefulReconnect?: boolean;
  /** A packet or response later than this after its send counts as late (ms; default DEFAULT_LATE_MS). */
  lateMs?: number;
  /** How long to wait for answers after the last packet (default 2000 ms). */
  drainMs?: number;
  /** Timeout of each HTTP request and hub step (default 10000 ms). */
  stepTimeoutMs?: number;
  /** Progress and warnings, one line each (the CLI sends them to stderr). */
  log?: (line: string) => void;
  /**
   * Ends the run early: set-up and streaming stop, and the run reports what ran and cleans up within
   * INTERRUPTED_CLEANUP_MS. Its reason (a string such as 'SIGINT') is named in the report.
   */
  stop?: AbortSignal;
}

const DEFAULT_DRAIN_MS = 2000;
const DEFAULT_STEP_TIMEOUT_MS = 10_000;
/**
 * After an interrupt: how long answers already on their way are waited for, and how long stopping the
 * sessions and deleting the devices may take in all (stopping gets the first half, so that a service
 * that does not answer cannot keep the devices from being deleted).
 */
const INTERRUPTED_DRAIN_MS = 500;
const INTERRUPTED_CLEANUP_MS = 5000;

/** What is wrong with the options (the CLI exits 64 with it), or undefined. */
export function simulateOptionProblem(o: SimulateOptions): string | undefined {
  if (!Number.isInteger(o.devices) || o.devices < 1 || o.devices > MAX_SIMULATED_DEVICES) return `--devices must be a whole number from 1 to ${MAX_SIMULATED_DEVICES}`;
  if (!(o.seconds > 0 && o.seconds <= MAX_SIMULATED_SECONDS)) return `--seconds must be more than 0 and at most ${MAX_SIMULATED_SECONDS}, not ${o.seconds}`;
  if (hasCredentials(o.url)) return '--url must not hold a user name or password: the service asks for none (--api-key gives an API key)';
  // Each request's path is resolved against the base address, which drops a query and a fragment: the
  // devices would be talking to the service without what the address said, and not a word about it.
  if (hasQueryOrFragment(o.url)) return "--url must be the service's base address, without a query or a fragment (each request adds its own path)";
  if (o.dropEverySeconds !== undefined && !(o.dropEverySeconds > 0)) return '--drop-every must be more than 0 seconds';
  if (o.dropForMs !== undefined) {
    if (o.dropEverySeconds === undefined) return '--drop-for needs --drop-every';
    if (!(o.dropForMs >= 0) || o.dropForMs >= o.dropEverySeconds * 1000) return '--drop-for must be from 0 to less than --drop-every (in ms)';
  } else if (o.dropEverySeconds !== undefined && DEFAULT_DROP_FOR_MS >= o.dropEverySeconds * 1000) {
    // The default cut is a cut too: one as long as the schedule would overlap the next and never let a device back.
    return `--drop-every must be longer than a cut, --drop-for (${DEFAULT_DROP_FOR_MS} ms unless given), not ${o.dropEverySeconds} s`;
  }
  if (o.lateMs !== undefined && !(o.lateMs > 0)) return '--late-after must be more than 0 ms';
  return undefined;
}

/**
 * Calls `drop` at every multiple of `everySeconds` after `t0` (monotonic ms) that is before `seconds`,
 * one timer at a time: a timer made for each drop up front took memory by the number of drops, which a
 * short `--drop-every` in a long run made millions (gigabytes, and a start that never came). Each time is
 * counted from `t0`, not from the last drop, so a late timer does not shift the rest. Returns the cancel.
 */
export function scheduleDrops(t0: number, everySeconds: number, seconds: number, drop: () => void): () => void {
  let timer: NodeJS.Timeout | undefined;
  const arm = (k: number): void => {
    const at = k * everySeconds;
    if (!(at < seconds)) return;
    timer = setTimeout(() => {
      drop();
      arm(k + 1);
    }, Math.max(0, t0 + at * 1000 - monotonicMs()));
  };
  arm(1);
  return () => clearTimeout(timer);
}

function hasCredentials(url: string): boolean {
  try {
    const u = new URL(url);
    return u.username !== '' || u.password !== '';
  } catch {
    return false;
  }
}

/** `?` and `#` can only begin a URL's query and fragment; `http://pi:5000/?`, with an empty one, is not a base either. */
const hasQueryOrFragment = (url: string): boolean => url.includes('?') || url.includes('#');

function checkOptions(o: SimulateOptions): void {
  const problem = simulateOptionProblem(o);
  if (problem !== undefined) throw new Error(problem);
}

export async function runSimulation(options: SimulateOptions): Promise<SimulationReport> {
  checkOptions(options);
  const { devices: count, seconds } = options;
  const protocol = options.protocol ?? 'json';
  const log = options.log ?? (() => {});
  const lateMs = options.lateMs ?? DEFAULT_LATE_MS;
  const statefulReconnect = options.statefulReconnect ?? false;
  const dropForMs = options.dropForMs ?? DEFAULT_DROP_FOR_MS;
  const stop = options.stop;
  const service = new URL(options.url);
  let relay: DropRelay | undefined;
  if (options.dropEverySeconds !== undefined) {
    const port = Number(service.port || (service.protocol === 'https:' ? 443 : 80));
    relay = await startDropRelay({ host: service.hostname.replace(/^\[|\]$/g, ''), port });
  }
  try {
    const api: SimApi = {
      baseUrl: options.url.endsWith('/') ? options.url : `${options.url}/`,
      timeoutMs: options.stepTimeoutMs ?? DEFAULT_STEP_TIMEOUT_MS,
      ...(options.apiKey ? { apiKey: options.apiKey } : {}),
      ...(relay ? { hubVia: { host: '127.0.0.1', port: relay.port } } : {}),
    };
    const run = randomBytes(3).toString('hex');
    const packets = simPackets();
    const devices = Array.from({ length: count }, (_, n) =>
      new SimDevice(`sim-${run}-${n + 1}`, api, { protocol, statefulReconnect, lateMs, packets, log }));

    log(`setting up ${count} device(s) against ${options.url} (${protocol}${relay ? `, through a drop relay on 127.0.0.1:${relay.port}` : ''})`);
    const setUp = await Promise.allSettled(devices.map((d) => d.setUp(stop)));
    const ready = devices.filter((_, i) => setUp[i]!.status === 'fulfilled');
    for (const d of devices) if (d.failure) log(`fail: ${d.deviceId}: ${d.failure}`);

    let drops = 0;
    /** How long the devices streamed; undefined when they never began. */
    let streamedMs: number | undefined;
    if (ready.length > 0 && !stop?.aborted) {
      const total = Math.max(1, Math.round((seconds * 1000) / SIM_PACKET_MS));
      log(`${ready.length} device(s) streaming ${total} packets each (${SIM_PACKET_MS} ms per packet, real time)`);
      const t0 = monotonicMs() + 50;
      const cancelDrops = relay && options.dropEverySeconds !== undefined
        ? scheduleDrops(t0, options.dropEverySeconds, seconds, () => {
          drops++;
          log(`drop ${drops}: cutting every hub connection, new ones wait ${dropForMs} ms`);
          relay.dropAll(dropForMs);
        })
        : undefined;
      try {
        // Devices are not in step in real life: spread their packet clocks over one packet interval.
        await Promise.all(ready.map((d, i) => d.stream(total, t0 + (i * SIM_PACKET_MS) / ready.length, SIM_PACKET_MS, stop)));
      } finally {
        cancelDrops?.();
      }
      streamedMs = Math.max(0, monotonicMs() - t0);
      const drainMs = options.drainMs ?? DEFAULT_DRAIN_MS;
      const drainUntil = monotonicMs() + (stop?.aborted ? Math.min(drainMs, INTERRUPTED_DRAIN_MS) : drainMs);
      while (monotonicMs() < drainUntil && !ready.every((d) => d.settled || d.failure)) await new Promise((r) => setTimeout(r, 20));
    }

    // Without an interrupt each request has its own timeout; after one, the clean-up as a whole is bounded.
    const interrupted = stop?.aborted === true;
    const stopBy = interrupted ? AbortSignal.timeout(INTERRUPTED_CLEANUP_MS / 2) : undefined;
    const deleteBy = interrupted ? AbortSignal.timeout(INTERRUPTED_CLEANUP_MS) : undefined;
    // All of them: a device that failed after its start still has a session to end.
    await Promise.all(devices.map((d) => d.stop(stopBy)));
    const registered = devices.filter((d) => d.registered || d.registering);
    let leftRegistered = registered.map((d) => ({ deviceId: d.deviceId, reason: 'no --admin-token' }));
    let deleted = 0;
    if (options.adminToken && registered.length > 0) {
      const deletions = await Promise.all(registered.map((d) => d.delete(options.adminToken!, deleteBy)));
      deleted = deletions.filter((d) => d.outcome === 'deleted').length;
      leftRegistered = registered.flatMap((d, i) => {
        const deletion = deletions[i]!;
        return deletion.outcome === 'failed' ? [{ deviceId: d.deviceId, reason: deletion.reason }] : [];
      });
    }
    return summarise({
      url: options.url,
      protocol,
      seconds,
      drops: options.dropEverySeconds === undefined ? undefined : { everySeconds: options.dropEverySeconds, forMs: dropForMs, count: drops },
      statefulReconnect,
      lateMs,
      leftRegistered,
      deleted,
      deletionSkipped: !options.adminToken,
      interrupted: interrupted
        ? { reason: typeof stop!.reason === 'string' ? stop!.reason : 'stopped', streamedSeconds: streamedMs === undefined ? undefined : streamedMs / 1000 }
        : undefined,
    }, devices);
  } finally {
    await relay?.close();
  }
}

/**
 * The CLI's run: runs, then renders. Bad options are refused as bad usage (a CliExit, exit 64) before
 * anything is registered; any other failure is thrown as it came, for the program's one way of ending
 * on a failure (src/main.ts). Unless the caller gives its own `stop`, SIGINT and SIGTERM interrupt the
 * run: its report comes back with exit code 130 or 143 (128 + the signal's number, as a shell reports
 * such an end).
 */
export async function simulateCommand(options: SimulateOptions): Promise<{ code: number; text: string }> {
  const problem = simulateOptionProblem(options);
  if (problem !== undefined) throw usageError(SIMULATE, [problem]);
  const interrupt = options.stop ? undefined : interruptOnSignals(options.log ?? (() => {}));
  try {
    const report = await runSimulation(interrupt ? { ...options, stop: interrupt.signal } : options);
    return { code: interrupt?.exitCode() ?? (report.ok ? 0 : 1), text: formatSimulationReport(report) };
  } finally {
    interrupt?.dispose();
  }
}
