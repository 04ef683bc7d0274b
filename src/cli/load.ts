// Loading configuration for any CLI command, with exit code 78 (EX_CONFIG, which the
// systemd unit does not retry) on bad values.
import path from 'node:path';
import { ConfigError, loadConfig } from '../config/load.js';
import type { LoadedConfig } from '../config/types.js';
import { oneLine } from '../log/logger.js';

// Exit codes of the service (besides 0, and 1 for a start-up or runtime failure):
/** Bad usage (sysexits EX_USAGE): an unknown command or flag, a missing or malformed value. */
export const EXIT_USAGE = 64;
/** Invalid configuration (sysexits EX_CONFIG): restarting does not help. */
export const EXIT_CONFIG = 78;
/**
 * A database file the service will not open: damaged, another program's, or from a newer voice-hub
 * (sysexits EX_DATAERR). Left untouched; restarting does not help either.
 */
export const EXIT_DATA = 65;
/**
 * Another process owns the port or the data directory (sysexits EX_TEMPFAIL: it may go away). Nothing
 * was written.
 */
export const EXIT_IN_USE = 75;
/**
 * An internal error (sysexits EX_SOFTWARE): a failure no command foresaw, a bug. Apart from the codes the
 * commands give their results (health 1-3, simulate 1), so that no script reads a bug as Degraded or as losses.
 */
export const EXIT_SOFTWARE = 70;
/**
 * The command's output, its result, could not be written (sysexits EX_IOERR): a full disk, a terminal gone.
 * A reader that closed the pipe early is no failure (src/cli/unwritten-output.ts).
 */
export const EXIT_IO_ERROR = 74;
/** `health`: the service could not be reached, or what answered was no health report. */
export const EXIT_UNREACHABLE = 3;

export class CliExit extends Error {
  /**
   * The lines it is written as. A message given as one string is one line, whatever it quotes: a path or
   * a value typed with a newline in it (`--config $'x\nfail: forged'`) would otherwise put the rest on a
   * line of its own, which the journal takes for an entry of its own (docs/operations.md, "Logging": what
   * was typed is quoted on its line). A maker that means several lines gives them as an array.
   */
  readonly lines: readonly string[];

  constructor(
    readonly code: number,
    message: string | readonly string[],
  ) {
    const lines = (typeof message === 'string' ? [message] : message).map(oneLine);
    super(lines.join('\n'));
    this.lines = lines;
  }
}

/** Where the shipped file is looked for, in order: `config/appsettings.json` in the working directory, then beside the bundle's folder. */
export function defaultConfigFiles(bundleDir: string | undefined): string[] {
  const candidates = [path.resolve('config/appsettings.json')];
  if (bundleDir) candidates.push(path.resolve(bundleDir, '..', 'config', 'appsettings.json'));
  return candidates;
}

/** The configuration given on the command line: `--config FILE` and key (dot form) -> value. */
export interface CliConfig {
  file?: string;
  flags: Record<string, unknown>;
  /** Key -> the flag as typed (`port` for Server.Port), so a problem names what the user wrote. */
  flagNames?: Record<string, string>;
}

export function loadCliConfig(cli: CliConfig, bundleDir: string | undefined, env: NodeJS.ProcessEnv = process.env): LoadedConfig {
  try {
    return loadConfig({
      ...(cli.file !== undefined ? { file: cli.file } : {}),
      defaultFiles: defaultConfigFiles(bundleDir),
      env,
      flags: cli.flags,
      ...(cli.flagNames ? { flagNames: cli.flagNames } : {}),
    });
  } catch (e) {
    if (e instanceof ConfigError) throw invalidConfiguration(e);
    throw e;
  }
}

/** Exit 78 (not retried by the unit) with every problem on its own line. */
export const invalidConfiguration = (e: ConfigError): CliExit => new CliExit(EXIT_CONFIG, ['invalid configuration:', ...e.problems.map((p) => `  ${p}`)]);
