// Loading configuration for any CLI command, with exit code 78 (EX_CONFIG, which the
// systemd unit does not retry) on bad values.
import { existsSync } from 'node:fs';
import path from 'node:path';
import { ConfigError, loadConfig } from '../config/load.js';
import type { LoadedConfig } from '../config/types.js';
import { configFlags } from './config-flags.js';

// Exit codes of the service (besides 0, 1 for a start-up or runtime failure, 2 for bad usage):
/** Invalid configuration (sysexits EX_CONFIG): restarting does not help. */
export const EXIT_CONFIG = 78;
/**
 * Another process owns the port or the data directory (sysexits EX_TEMPFAIL: it may go away). Nothing
 * was written.
 */
export const EXIT_IN_USE = 75;

export class CliExit extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}

/** The shipped file: `config/appsettings.json` in the working directory or beside the bundle's folder. */
export function defaultConfigFile(bundleDir: string | undefined): string | undefined {
  const candidates = [path.resolve('config/appsettings.json')];
  if (bundleDir) candidates.push(path.resolve(bundleDir, '..', 'config', 'appsettings.json'));
  return candidates.find((f) => existsSync(f));
}

export function loadCliConfig(argv: Record<string, unknown>, bundleDir: string | undefined, env: NodeJS.ProcessEnv = process.env): LoadedConfig {
  try {
    return loadConfig({
      file: typeof argv.config === 'string' ? argv.config : undefined,
      defaultFile: defaultConfigFile(bundleDir),
      env,
      flags: configFlags(argv),
    });
  } catch (e) {
    if (e instanceof ConfigError) {
      throw new CliExit(EXIT_CONFIG, ['invalid configuration:', ...e.problems.map((p) => `  ${p}`)].join('\n'));
    }
    throw e;
  }
}
