// The only module that touches process, argv and signals: cli -> config -> createApp -> start.
// Configuration flags belong to the commands that read the configuration (serve, token, config,
// health); echo-server and simulate take only their own, so their --help says only what applies.
import yargs from 'yargs';
import { createApp } from './app.js';
import { configCheckLines } from './cli/config-check.js';
import { CONFIG_OPTIONS } from './cli/config-flags.js';
import { CliExit, EXIT_CONFIG, EXIT_IN_USE, loadCliConfig } from './cli/load.js';
import { ConfigError } from './config/load.js';
import { mintAdminToken } from './cli/token.js';
import { EXIT_UNREACHABLE, healthCommand, localHealthUrl } from './cli/health.js';
import { versionText } from './cli/version.js';
import { createLogger, type Logger } from './log/logger.js';
import { startEchoServer } from './upstream/echo-server.js';
import { simulateCommand } from './cli/simulate.js';
import type { AppConfig } from './config/types.js';
import { DataDirInUseError, type DataDirLock } from './process/data-dir-lock.js';
import { PortInUseError } from './process/port-owner.js';
import { claimOwnership, portConflict } from './process/ownership.js';
import { GLIBC_TUNABLES_TEXT, TRIM_INTERVAL_MS, tuneMalloc } from './runtime/malloc-tuning.js';
import { systemdNotifier } from './systemd/notify.js';

// In the CommonJS bundle __dirname is the bundle's folder; under tsx (tests) it does not exist.
const bundleDir = typeof __dirname === 'string' ? __dirname : undefined;
/** After SIGTERM the service has this long to drain and flush before it exits anyway. */
const SHUTDOWN_DEADLINE_MS = 10_000;

/**
 * The ports and the data directory, before anything is written: a second voice-hub (a second
 * `make run`, a mistyped command that falls through to serving) exits with EXIT_IN_USE instead of
 * sharing a port with the first (the kernel would split connections between two databases).
 */
async function claim(config: AppConfig): Promise<DataDirLock> {
  try {
    const lock = await claimOwnership(config);
    // Released on every way out: exit 0 after SIGTERM, a failed start, an uncaught exception.
    process.on('exit', () => lock.release());
    return lock;
  } catch (e) {
    if (e instanceof PortInUseError || e instanceof DataDirInUseError) throw new CliExit(EXIT_IN_USE, e.message);
    throw new CliExit(1, `start-up failed: cannot take the data directory ${config.Storage.DataDir}: ${e instanceof Error ? e.message : String(e)}`);
  }
}

/** glibc keeps memory a burst freed unless told otherwise; done first, before the big start-up allocations. */
function tuneMemory(logger: Logger): void {
  if (process.platform !== 'linux') return;
  try {
    const addon = tuneMalloc(bundleDir);
    logger.debug(`malloc thresholds set through ${addon.file}`);
    setInterval(addon.trim, TRIM_INTERVAL_MS).unref();
  } catch (e) {
    const why = e instanceof Error ? e.message : String(e);
    // The environment may already do it (the systemd unit sets GLIBC_TUNABLES): then this is no news.
    if (process.env.GLIBC_TUNABLES?.includes('glibc.malloc.mmap_threshold')) logger.debug(`${why}; GLIBC_TUNABLES sets the thresholds`);
    else logger.warn(`${why}; memory a burst takes may stay taken: set ${GLIBC_TUNABLES_TEXT} in the environment instead`);
  }
}

async function serve(argv: Record<string, unknown>): Promise<void> {
  const loaded = loadCliConfig(argv, bundleDir);
  const logger = createLogger({ levels: loaded.config.Logging.LogLevel });
  tuneMemory(logger);
  const lock = await claim(loaded.config);
  logger.debug(`holding ${lock.file}`);
  const app = createApp(loaded, { logger, bundleDir });
  const notifier = systemdNotifier(process.env, logger);
  let shuttingDown = false;
  const shutdown = (signal: string): void => {
    if (shuttingDown) {
      logger.warn(`${signal} again: exiting without waiting`);
      process.exit(1);
    }
    shuttingDown = true;
    notifier?.stopping();
    logger.info(`${signal} received: draining and flushing`);
    setTimeout(() => {
      logger.error(`shutdown took longer than ${SHUTDOWN_DEADLINE_MS} ms: exiting`);
      process.exit(1);
    }, SHUTDOWN_DEADLINE_MS).unref();
    app.stop().then(
      () => process.exit(0),
      (e: unknown) => {
        logger.error(`shutdown failed: ${e instanceof Error ? e.message : String(e)}`);
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
  process.on('uncaughtException', (e) => {
    logger.critical(`uncaught exception: ${e.stack ?? e.message}`);
    app.stop().finally(() => process.exit(1));
  });
  try {
    await app.start();
  } catch (e) {
    // A certificate or CA file that cannot be used is a configuration problem: 78, not retried.
    if (e instanceof ConfigError) throw new CliExit(EXIT_CONFIG, ['invalid configuration:', ...e.problems.map((p) => `  ${p}`)].join('\n'));
    // Another start won the race for the port between our early check and the (exclusive) listen.
    const conflict = await portConflict(loaded.config.Server).catch(() => undefined);
    if (conflict) throw new CliExit(EXIT_IN_USE, conflict.message);
    throw new CliExit(1, `start-up failed: ${e instanceof Error ? e.message : String(e)}`);
  }
  notifier?.ready();
}

async function main(): Promise<void> {
  await yargs(process.argv.slice(2))
    .scriptName('voice-hub')
    .usage('$0 [command] [options]\n\nBackend for voice-assistant devices: HTTP API, SignalR hub at /voice-hub,\nupstream voice link, MQTT.')
    .epilogue('Any configuration key can also be given as a flag in dot form, e.g.\n  --VoiceService.ServerUrl ws://host:5050/voice\nor in the environment with __, e.g. VoiceService__ServerUrl=ws://host:5050/voice.')
    .wrap(null)
    .parserConfiguration({ 'dot-notation': false, 'camel-case-expansion': false })
    .command(['serve', '$0'], 'run the service (default)', (y) => y.options(CONFIG_OPTIONS), (argv) => serve(argv))
    .command('token <kind>', 'mint a token with this installation\'s signing key', (y) =>
      y
        .options(CONFIG_OPTIONS)
        .positional('kind', { choices: ['admin'] as const, describe: 'token kind', demandOption: true })
        .option('ttl', { type: 'string', default: '30d', describe: 'lifetime: 30d, 12h, 90m or a time span' }),
      async (argv) => {
        process.stdout.write((await mintAdminToken(loadCliConfig(argv, bundleDir), argv.ttl)) + '\n');
      })
    .command('config <action>', 'inspect the configuration', (y) =>
      y.options(CONFIG_OPTIONS).positional('action', { choices: ['check'] as const, demandOption: true }),
      async (argv) => {
        const lines = await configCheckLines(loadCliConfig(argv, bundleDir));
        process.stdout.write(lines.join('\n') + '\n');
      })
    .command('health', 'print the health of a running service as a table (exit 0 Healthy, 1 Degraded, 2 Unhealthy, 3 unreachable)', (y) =>
      y.options(CONFIG_OPTIONS).option('url', { type: 'string', describe: 'health address (default: this box\'s configured port)' }),
      async (argv) => {
        const url = argv.url ?? (() => {
          const { config } = loadCliConfig(argv, bundleDir);
          return localHealthUrl(config.Server.Host, config.Server.Port);
        })();
        const { code, text } = await healthCommand(url);
        (code === EXIT_UNREACHABLE ? process.stderr : process.stdout).write(text);
        process.exitCode = code;
      })
    .command('echo-server', 'run the built-in upstream voice server (answers audio with the same audio, text with "echo: text")', (y) =>
      y
        .option('port', { type: 'number', default: 5050, describe: 'port (0 = any free port)' })
        .option('host', { type: 'string', default: '127.0.0.1', describe: 'address to listen on' }),
      async (argv) => {
        const logger = createLogger({ levels: { Default: 'Information' } }, 'EchoServer');
        const server = await startEchoServer({ host: argv.host, port: argv.port, logger });
        logger.info(`echo voice server listening on ws://${argv.host}:${server.port}/voice`);
        const stop = (): void => {
          void server.close().finally(() => process.exit(0));
        };
        process.once('SIGTERM', stop);
        process.once('SIGINT', stop);
      })
    .command('simulate', 'stream real-time Opus from simulated devices through a running service; report losses and round-trip latency (exit 0 nothing lost, 1 otherwise)', (y) =>
      y
        .option('url', { type: 'string', default: 'http://127.0.0.1:5000', describe: "the service's base address" })
        .option('devices', { type: 'number', default: 1, describe: 'simulated devices; each registers (DeviceManagement.MaxDevices is 10 as shipped)' })
        .option('seconds', { type: 'number', default: 10, describe: 'seconds of audio each device streams' })
        .option('protocol', { choices: ['json', 'messagepack'] as const, default: 'json' as 'json' | 'messagepack', describe: 'SignalR hub protocol' })
        .option('api-key', { type: 'string', describe: 'X-API-Key, when the service has ApiKeys' })
        .option('admin-token', { type: 'string', describe: 'admin token (voice-hub token admin): delete the simulated devices afterwards' }),
      async (argv) => {
        const { code, text } = await simulateCommand({
          url: argv.url,
          devices: argv.devices,
          seconds: argv.seconds,
          protocol: argv.protocol,
          apiKey: argv['api-key'],
          adminToken: argv['admin-token'],
          log: (line) => process.stderr.write(line + '\n'),
        });
        (code === 2 ? process.stderr : process.stdout).write(text);
        process.exitCode = code;
      })
    .version(versionText(bundleDir))
    .help()
    .alias('h', 'help')
    .strictCommands()
    .fail((msg, err) => {
      if (err) throw err;
      throw new CliExit(2, msg);
    })
    .parseAsync();
}

main().catch((e: unknown) => {
  if (e instanceof CliExit) {
    process.stderr.write(e.message + '\n');
    process.exit(e.code);
  }
  process.stderr.write(`voice-hub: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
  process.exit(1);
});

export { EXIT_CONFIG };
