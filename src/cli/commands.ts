// Every command and the flags it takes, so that --help shows exactly those and anything else is an
// error. A command's own flags are declared in its `options`; configuration flags are opted into
// with `config`: `--config FILE`, keys in dot form and the listed short flags.
import { ALL_SHORT_FLAGS, type ShortFlag } from './config-flags.js';
import type { OptionSpecs } from './options.js';
import { EXIT_CONFIG, EXIT_DATA, EXIT_IN_USE, EXIT_IO_ERROR, EXIT_SOFTWARE, EXIT_UNREACHABLE, EXIT_USAGE } from './load.js';
import { EXIT_CODES } from './sim-interrupt.js';
import { SIMULATE_COUNTERS } from './sim-tally.js';
import { DEFAULT_DROP_FOR_MS, DEFAULT_LATE_MS, MAX_SIMULATED_DEVICES, SHIPPED_MAX_DEVICES, MAX_SIMULATED_SECONDS } from './sim-defaults.js';

export interface CommandSpec<S extends OptionSpecs = OptionSpecs> {
  name: string;
  /** One line in the top-level --help. */
  summary: string;
  /** More, shown in the command's own --help. */
  details?: string;
  /** One required positional argument from a fixed list (`token admin`, `config check`). */
  positional?: { name: string; choices: readonly string[]; describe: string };
  options: S;
  /** Configuration flags this command reads, and a sentence for its --help on what they do there; none when absent. */
  config?: { short: readonly ShortFlag[]; why: string };
  /** Text after the flags in the command's own --help. */
  epilogue?: string;
  /**
   * The command's own exit codes and what each says, last in its --help; those of every command
   * (COMMON_EXITS) follow them there.
   */
  exits: readonly Exit[];
}

export type Exit = readonly [code: number, meaning: string];

/** What any command may end with besides its own codes. */
export const COMMON_EXITS: readonly Exit[] = [
  [EXIT_USAGE, 'bad usage (nothing was done)'],
  [EXIT_SOFTWARE, 'an internal error, a bug: please report it (Logging__LogLevel__Default=Debug in the environment prints its stack)'],
  [EXIT_IO_ERROR, 'its output could not be written, whatever it would have exited with (a reader that closed the pipe early is no failure)'],
];

/** `Exit codes: 0 ..., 1 ...` for a command's --help. */
export const exitsText = (spec: CommandSpec): string =>
  `Exit codes: ${[...spec.exits, ...COMMON_EXITS].sort(([a], [b]) => a - b).map(([code, meaning]) => `${code} ${meaning}`).join('; ')}.`;

/** A failure of the machine (a file it may not read, a full disk, a port it may not take): named in one line. */
const MACHINE: Exit = [1, 'a failure of the machine, named with what to do'];

const command = <const S extends OptionSpecs>(spec: CommandSpec<S>): CommandSpec<S> => spec;

export const SERVE = command({
  name: 'serve',
  summary: 'run the service (the default command)',
  options: {},
  config: { short: ALL_SHORT_FLAGS, why: 'Flags beat the environment, which beats the configuration file.' },
  exits: [
    [0, 'stopped by SIGTERM or Ctrl-C'],
    [1, 'start-up or runtime failure'],
    [EXIT_DATA, 'a data file it will not use'],
    [EXIT_IN_USE, 'port or data directory in use'],
    [EXIT_CONFIG, 'invalid configuration'],
  ],
});

export const TOKEN = command({
  name: 'token',
  summary: "mint a token with this installation's signing key",
  positional: { name: 'kind', choices: ['admin'], describe: 'token kind' },
  options: {
    ttl: { kind: 'string', default: '30d', describe: 'lifetime: 30d, 12h, 90m or a time span' },
  },
  config: { short: ['data-dir'], why: 'Here they say where the signing key is (Storage.DataDir, Auth.SigningKey).' },
  exits: [[0, 'printed'], MACHINE, [EXIT_DATA, 'a signing key it will not use'], [EXIT_IN_USE, 'the data directory is being taken'], [EXIT_CONFIG, 'invalid configuration']],
});

export const CONFIG = command({
  name: 'config',
  summary: 'print the effective configuration and where each value comes from',
  details: 'Takes the configuration flags of serve, so that the same arguments show what the service would run with.',
  positional: { name: 'action', choices: ['check'], describe: 'what to do' },
  options: {},
  config: { short: ALL_SHORT_FLAGS, why: 'Each value is printed with where it came from.' },
  exits: [[0, 'printed'], MACHINE, [EXIT_DATA, 'a database, signing key or instance id file serve would not use'], [EXIT_CONFIG, 'invalid configuration, or what serve would refuse']],
});

export const HEALTH = command({
  name: 'health',
  summary: 'print the health of a running service as a table',
  options: {
    url: {
      kind: 'url',
      zone: true,
      describe: "the service's address, e.g. http://127.0.0.1:5000 or http://127.0.0.1:5000/health, a link-local one as http://[fe80::1%25eth0]:5000 (default: this box's configured host and port); not with --config or configuration keys",
    },
  },
  config: {
    short: [],
    why: 'Without --url, the configured Server.Host and Server.Port\nname the service to ask; with --url, --config and configuration keys would change nothing and are refused (exit 64).',
  },
  exits: [[0, 'Healthy'], [1, 'Degraded'], [2, 'Unhealthy'], [EXIT_UNREACHABLE, 'unreachable, no health report, or a configuration file it may not read'], [EXIT_CONFIG, 'invalid configuration (without --url)']],
});

export const ECHO_SERVER = command({
  name: 'echo-server',
  summary: 'run the built-in upstream voice server',
  details: 'Answers audio with the same audio and text with "echo: text".',
  options: {
    port: { kind: 'integer', default: 5050, min: 0, max: 65_535, describe: 'port (0 = any free port)' },
    host: { kind: 'string', default: '127.0.0.1', describe: 'address to listen on' },
  },
  exits: [[0, 'stopped by SIGTERM or Ctrl-C'], MACHINE, [EXIT_IN_USE, 'port in use']],
});

export const SIMULATE = command({
  name: 'simulate',
  summary: 'stream real-time Opus from simulated devices through a running service',
  details: 'Reports losses and round-trip latency.',
  options: {
    url: { kind: 'url', default: 'http://127.0.0.1:5000', describe: "the service's base address" },
    devices: { kind: 'integer', default: 1, min: 1, max: MAX_SIMULATED_DEVICES, describe: `simulated devices, 1 to ${MAX_SIMULATED_DEVICES}; each registers (DeviceManagement.MaxDevices is ${SHIPPED_MAX_DEVICES} as shipped)` },
    seconds: { kind: 'number', default: 10, above: 0, max: MAX_SIMULATED_SECONDS, describe: `seconds of audio each device streams: more than 0, at most ${MAX_SIMULATED_SECONDS} (a day)` },
    protocol: { kind: 'choice', choices: ['json', 'messagepack'], default: 'json', describe: 'SignalR hub protocol' },
    'api-key': { kind: 'string', secret: true, describe: 'X-API-Key, when the service has ApiKeys' },
    'admin-token': { kind: 'string', secret: true, describe: 'admin token (voice-hub token admin): delete the simulated devices afterwards' },
    'drop-every': { kind: 'number', above: 0, describe: 'cut every hub connection this often (seconds, longer than --drop-for), through a local TCP relay, as a flaky Wi-Fi would; devices reconnect and join their session again' },
    'drop-for': { kind: 'integer', min: 0, describe: `how long each cut lasts: new connections wait this long (ms, default ${DEFAULT_DROP_FOR_MS}; needs --drop-every)` },
    'stateful-reconnect': { kind: 'boolean', describe: 'the clients also ask for SignalR stateful reconnect (withStatefulReconnect), to compare; where the hub does not offer it they reconnect and rejoin as without it' },
    'late-after': { kind: 'number', default: DEFAULT_LATE_MS, above: 0, describe: 'a packet or response that arrives more than this many ms after its send counts as late' },
  },
  epilogue: SIMULATE_COUNTERS,
  exits: [
    [0, 'nothing was lost or duplicated, no device failed and, with --admin-token, every device was deleted'],
    [1, 'else (the report says what was left registered and why)'],
    [EXIT_CODES.SIGINT, 'Ctrl-C (SIGINT) ended the run early'],
    [EXIT_CODES.SIGTERM, 'SIGTERM ended the run early (it still prints its report and, with --admin-token, deletes its devices)'],
  ],
});

export const COMMANDS: readonly CommandSpec[] = [SERVE, TOKEN, CONFIG, HEALTH, ECHO_SERVER, SIMULATE];
