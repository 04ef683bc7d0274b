// Why the service cannot listen where its configuration says, as `serve` refuses it before writing
// anything and `config check` refuses it too: one line and one exit code for both.
import { ConfigError } from '../config/load.js';
import type { AppConfig } from '../config/types.js';
import { configuredPorts } from '../process/ownership.js';
import { expectedFailure } from './fatal.js';
import { CliExit, invalidConfiguration } from './load.js';

/**
 * The exit for a failed listen or host lookup (src/process/port-owner.ts), or undefined for any other
 * error. A host that names no address is the configuration's (78); a resolver not answering yet is the
 * machine's (1, retried by the unit); a port or address refused says why (src/cli/fatal.ts).
 */
export function listenRefusal(e: unknown, server: AppConfig['Server']): CliExit | undefined {
  const { syscall, code } = e as NodeJS.ErrnoException;
  if (syscall === 'listen') {
    const port = (e as { port?: number }).port;
    return expectedFailure(e, undefined, configuredPorts(server).find((p) => p.port === port)?.choose);
  }
  if (syscall === 'getaddrinfo') {
    const problem = `Server.Host: "${server.Host}" does not resolve to an address (${code})`;
    if (code === 'ENOTFOUND') return invalidConfiguration(new ConfigError([`${problem}: set an address of this machine, or a name it resolves`]));
    return new CliExit(1, `start-up failed: ${problem}`);
  }
  return undefined;
}
