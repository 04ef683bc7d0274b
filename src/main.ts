// The only module that reads argv and ends the process: cli -> config -> createApp -> start. Signals
// are answered by src/process/signals.ts for `serve` and src/cli/sim-interrupt.ts for `simulate`.
// Which flags each command takes is declared in src/cli/commands.ts; here each command gets its handler.
// The other commands' code is imported when they run: `serve` (what a device's service runs all day)
// never evaluates the simulator's SignalR client, the echo server or the token minting, which would
// otherwise stay in its heap for good.
import path from 'node:path';
import { createApp } from './app.js';
import { checkBeforeHelp, commandOf, invocation, isSecret, preParseProblems, programParser, usageError, yargsCommand } from './cli/command.js';
import { CONFIG, ECHO_SERVER, HEALTH, SERVE, SIMULATE, TOKEN } from './cli/commands.js';
import { asksForStacks, dataDirFailure, environmentLogLevel, expectedFailure, internalFailure, isCodingError, systemFailureText } from './cli/fatal.js';
import { CliExit, EXIT_CONFIG, EXIT_DATA, EXIT_IN_USE, EXIT_SOFTWARE, EXIT_UNREACHABLE, invalidConfiguration, loadCliConfig, type CliConfig } from './cli/load.js';
import { listenRefusal } from './cli/listen-refusal.js';
import { ConfigError } from './config/load.js';
import { DataFileError, errorText } from './errors.js';
import { versionText } from './cli/version.js';
import { createLogger, oneLine, withPriority, type Logger } from './log/logger.js';
import type { AppConfig, LoadedConfig } from './config/types.js';
import { DataDirInUseError, LOCK_FILE_NAME, type DataDirLock } from './process/data-dir-lock.js';
import { assertListenAddress, PortInUseError } from './process/port-owner.js';
import { claimOwnership, portConflict } from './process/ownership.js';
import { GLIBC_TUNABLES_TEXT, SETTLE_DELAY_MS, TRIM_INTERVAL_MS, tuneMalloc, type Settled } from './runtime/malloc-tuning.js';
import { systemdNotifier } from './systemd/notify.js';
import { ServiceSignals, type ShutdownSignal } from './process/signals.js';
import { Shutdown } from './process/shutdown.js';
import { tolerateClosedOutput } from './process/closed-output.js';
import { failOnUnwrittenOutput } from './cli/unwritten-output.js';

// In the CommonJS bundle __dirname is the bundle's folder; under tsx (tests) it does not exist.
const bundleDir = typeof __dirname === 'string' ? __dirname : undefined;

/**
 * Logging.LogLevel.Default of the configuration the command read, else of the environment: Debug or
 * Trace prints an internal error's stack (src/cli/fatal.ts).
 */
let logLevel = environmentLogLevel(process.env);

/** The command's configuration; its log level from then on decides whether an internal error shows its stack. */
function loadConfigOf(cli: CliConfig): LoadedConfig {
  const loaded = loadCliConfig(cli, bundleDir);
  logLevel = loaded.config.Logging.LogLevel.Default;
  return loaded;
}

/** How every command ends on a failure: one line (see src/cli/fatal.ts) and its exit code. */
function exitOnFailure(e: unknown): never {
  const exit = expectedFailure(e) ?? internalFailure(e, asksForStacks(logLevel));
  // Under journald with the Error priority, like the logger's lines: `journalctl -p warning` shows why
  // the service did not start.
  process.stderr.write(withPriority('Error', exit.message));
  process.exit(exit.code);
}

/**
 * The ports and the data directory, before anything is written: a second voice-hub (a second
 * `make run`, a second start by hand) exits with EXIT_IN_USE instead of sharing a port with the
 * first (the kernel would split connections between two databases).
 */
async function claim(config: AppConfig): Promise<DataDirLock> {
  try {
    const lock = await claimOwnership(config, isSecret);
    // Released on every way out: exit 0 after SIGTERM, a failed start, an uncaught exception.
    process.on('exit', () => lock.release());
    return lock;
  } catch (e) {
    if (e instanceof PortInUseError || e instanceof DataDirInUseError) throw new CliExit(EXIT_IN_USE, e.message);
    if (e instanceof DataFileError) throw new CliExit(EXIT_DATA, `start-up failed: ${e.message}`);
    const refused = listenRefusal(e, config.Server);
    if (refused) throw refused;
    const dir = config.Storage.DataDir;
    throw new CliExit(1, `start-up failed: cannot take the data directory ${dir}: ${dataDirFailure(dir, path.join(dir, LOCK_FILE_NAME), e)}`);
  }
}

/**
 * glibc keeps memory a burst freed unless told otherwise; done first, before the big start-up allocations.
 * Returns what sets the steady thresholds once start-up is over (STARTUP_TRIM_THRESHOLD says why).
 */
function tuneMemory(logger: Logger): (() => Settled) | undefined {
  if (process.platform !== 'linux') return undefined;
  try {
    const addon = tuneMalloc(bundleDir);
    logger.debug(`malloc thresholds set through ${addon.file}`);
    setInterval(addon.trim, TRIM_INTERVAL_MS).unref();
    return addon.settle;
  } catch (e) {
    const why = e instanceof Error ? e.message : String(e);
    // The environment may already do it (the systemd unit sets GLIBC_TUNABLES): then this is no news.
    if (process.env.GLIBC_TUNABLES?.includes('glibc.malloc.mmap_threshold')) logger.debug(`${why}; GLIBC_TUNABLES sets the thresholds`);
    else logger.warn(`${why}; memory a burst takes may stay taken: set ${GLIBC_TUNABLES_TEXT} in the environment instead`);
    return undefined;
  }
}

async function serve(cli: CliConfig): Promise<void> {
  const loaded = loadConfigOf(cli);
  const logger = createLogger({ levels: loaded.config.Logging.LogLevel });
  // Before the data directory is claimed: a signal while it is taken must not leave its lock behind.
  const signals = new ServiceSignals(logger);
  for (const text of loaded.ignored ?? []) logger.warn(text);
  const settleMemory = tuneMemory(logger);
  const lock = await claim(loaded.config);
  logger.debug(`holding ${lock.file}`);
  const app = createApp(loaded, { logger, bundleDir, lock });
  const notifier = systemdNotifier(process.env, logger);
  const shutdown = new Shutdown({ logger, stop: () => app.stop(), closeStore: () => app.closeStore(), exit: (code) => process.exit(code) });
  const onSignal = (signal: ShutdownSignal, count: number): void => {
    if (count === 2) return shutdown.again(signal);
    if (count > 2) {
      logger.warn(`${signal} a third time: exiting at once`);
      process.exit(1);
    }
    notifier?.stopping();
    shutdown.begin(signal);
  };
  // While it starts, a signal waits for the start to end (a stop alongside the start's own writes exited
  // 0, logging `stopped`, in the middle of them, and left the database's, the signing key's or the
  // instance id's temporary file, or none of those files, behind); a third still exits at once, as the
  // way out of a start that hangs (a name server that does not answer).
  const held: Array<[ShutdownSignal, number]> = [];
  const holdWhileStarting = (signal: ShutdownSignal, count: number): void => {
    if (count > 2) return onSignal(signal, count);
    if (count === 1) logger.info(`${signal} received while starting: stopping once the start has ended`);
    held.push([signal, count]);
  };
  const handleSignals = (): void => {
    signals.handle = onSignal;
    for (const [signal, count] of held.splice(0)) onSignal(signal, count);
  };
  // The service logs its stack, at every level: its log is where a bug report starts.
  process.off('uncaughtException', exitOnFailure);
  process.on('uncaughtException', (e) => {
    logger.critical(`uncaught exception: ${e.stack ?? e.message}`);
    app.stop().finally(() => process.exit(EXIT_SOFTWARE));
  });
  // Told to stop while it took the data directory: nothing to start, the handler stops it.
  if (signals.count > 0) return handleSignals();
  signals.handle = holdWhileStarting;
  try {
    await app.start();
  } catch (e) {
    // A certificate or CA file that cannot be used is a configuration problem: 78, not retried.
    if (e instanceof ConfigError) throw invalidConfiguration(e);
    // A database it will not open: the unit restarting it ten times in 30 s only fills the journal.
    if (e instanceof DataFileError) throw new CliExit(EXIT_DATA, `start-up failed: ${e.message}`);
    // Another start won the race for the port between our early check and the (exclusive) listen.
    const conflict = await portConflict(loaded.config.Server, isSecret).catch(() => undefined);
    if (conflict) throw new CliExit(EXIT_IN_USE, conflict.message);
    // The listen (uWS) says only that it failed: an address not this machine's is found here, as the
    // fixed port's early check finds it, and said in the same words (port 0 has no early check).
    const address = await assertListenAddress(loaded.config.Server.Host, loaded.config.Server.Port).then(() => undefined, (e: unknown) => listenRefusal(e, loaded.config.Server));
    if (address) throw address;
    // A file system's refusal, also behind the store's 'storage is not writable', in the operator's words.
    const system = systemFailureText(e) ?? systemFailureText(e instanceof Error ? e.cause : undefined);
    if (system) throw new CliExit(1, `start-up failed: ${system}`);
    // A bug is no start-up the machine refused: 70 and its one line (its stack at Debug), as in every
    // other command; 1 would have the unit retry it and read as a failure of the machine.
    if (isCodingError(e)) throw internalFailure(e, asksForStacks(logLevel));
    throw new CliExit(1, `start-up failed: ${errorText(e)}`);
  }
  notifier?.ready();
  handleSignals();
  // Not in the way of the first requests: the trim and the visits of the thread heaps take 30-40 ms.
  if (settleMemory) {
    setTimeout(() => {
      const problem = settleMemory().problem;
      if (problem) logger.warn(problem);
    }, SETTLE_DELAY_MS).unref();
  }
}

async function main(): Promise<void> {
  tolerateClosedOutput();
  const args = process.argv.slice(2);
  const named = commandOf(args);
  failOnUnwrittenOutput(() => invocation(named));
  // An error thrown or a promise rejected outside the command's own await (a timer, an event) ends it as one it awaited would.
  process.on('uncaughtException', exitOnFailure);
  const unparsable = preParseProblems(args, named);
  if (unparsable.length > 0) throw usageError(named, unparsable);
  await checkBeforeHelp(args);
  await programParser(args)
    .usage('$0 [command] [options]\n\nBackend for voice-assistant devices: HTTP API, SignalR hub at /voice-hub,\nupstream voice link, MQTT.')
    .command(yargsCommand(SERVE, (args) => serve(args.config)))
    .command(yargsCommand(TOKEN, async ({ options, config }) => {
      const { mintAdminToken, parseTtl } = await import('./cli/token.js');
      let ttlMs: number;
      try {
        ttlMs = parseTtl(options.ttl);
      } catch (e) {
        throw usageError(TOKEN, [errorText(e)]);
      }
      const { token, note } = await mintAdminToken(loadConfigOf(config), ttlMs);
      if (note) process.stderr.write(`voice-hub token: ${note}\n`);
      process.stdout.write(token + '\n');
    }))
    .command(yargsCommand(CONFIG, async ({ config }) => {
      const { configCheck } = await import('./cli/config-check.js');
      try {
        // Values quote what an admin stored through the API and what the file holds: JSON escapes the
        // controls, not the marks that reorder a terminal's line (U+202E) or U+2028.
        await configCheck(loadConfigOf(config), (lines) => process.stdout.write(lines.map(oneLine).join('\n') + '\n'));
      } catch (e) {
        // The files the configuration names, which serve refuses the same way.
        if (e instanceof ConfigError) throw invalidConfiguration(e);
        throw e;
      }
    }))
    .command(yargsCommand(HEALTH, async ({ options, config }) => {
      const { healthCommand, healthUrlFrom, localHealthUrl, refuseConfigWithUrl } = await import('./cli/health.js');
      if (options.url !== undefined) refuseConfigWithUrl(config);
      const url = options.url !== undefined ? healthUrlFrom(options.url) : (() => {
        let loaded: AppConfig;
        try {
          loaded = loadConfigOf(config).config;
        } catch (e) {
          // A configuration file the machine refuses leaves no report either: exit 3 as for a service not
          // reached, not the 1 other commands give it, which health gives Degraded.
          const exit = expectedFailure(e);
          throw exit?.code === 1 ? new CliExit(EXIT_UNREACHABLE, exit.lines) : e;
        }
        return localHealthUrl(loaded.Server.Host, loaded.Server.Port);
      })();
      const { code, text } = await healthCommand(url);
      const { urlsShown } = await import('./cli/shown-url.js');
      (code === EXIT_UNREACHABLE ? process.stderr : process.stdout).write(urlsShown(text));
      process.exitCode = code;
    }))
    .command(yargsCommand(ECHO_SERVER, async ({ options }) => {
      const { startEchoServer } = await import('./upstream/echo-server.js');
      const logger = createLogger({ levels: { Default: 'Information' } }, 'EchoServer');
      const server = await startEchoServer({ host: options.host, port: options.port, logger });
      const stop = (): void => {
        void server.close().finally(() => process.exit(0));
      };
      process.once('SIGTERM', stop);
      process.once('SIGINT', stop);
    }))
    .command(yargsCommand(SIMULATE, async ({ options }) => {
      const { simulateCommand } = await import('./cli/simulate.js');
      const { urlsShown } = await import('./cli/shown-url.js');
      const simulation = {
        url: options.url,
        devices: options.devices,
        seconds: options.seconds,
        protocol: options.protocol,
        apiKey: options['api-key'],
        adminToken: options['admin-token'],
        dropEverySeconds: options['drop-every'],
        dropForMs: options['drop-for'],
        statefulReconnect: options['stateful-reconnect'],
        lateMs: options['late-after'],
        // Its lines quote what the service at --url answered (problem details, close reasons).
        log: (line: string) => process.stderr.write(urlsShown(oneLine(line)) + '\n'),
      };
      const { code, text } = await simulateCommand(simulation);
      process.stdout.write(urlsShown(text));
      process.exitCode = code;
    }))
    .version(versionText(bundleDir))
    .help()
    .alias('h', 'help')
    .fail((msg, err) => {
      if (err) throw err;
      throw usageError(named, [msg]);
    })
    .parseAsync();
}

main().catch(exitOnFailure);

export { EXIT_CONFIG };
