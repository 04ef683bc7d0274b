// One voice-hub per port and per data directory, claimed by the serving process before it writes
// anything: first the ports are checked (so a refused start leaves even its own data directory
// alone), then the data directory is locked for the life of the process.
import type { SecretOption } from '../config/mask.js';
import type { AppConfig } from '../config/types.js';
import { acquireDataDirLock, type DataDirLock } from './data-dir-lock.js';
import { assertHostResolves, portHolder, PortInUseError } from './port-owner.js';

/**
 * The ports this configuration listens on, each with where it is chosen (for the advice of a refusal);
 * 0 (any free port) can never be taken by someone else.
 */
export function configuredPorts(server: AppConfig['Server']): Array<{ port: number; choose: string }> {
  const ports = [{ port: server.Port, choose: '--port, Server.Port' }];
  if (server.Certificate.Path) ports.push({ port: server.HttpsPort, choose: '--https-port, Server.HttpsPort' });
  return ports.filter((p) => p.port !== 0);
}

/**
 * Throws PortInUseError for the first configured port that another process listens on; its command line
 * is quoted with secrets masked (`secretOption`: see maskSecretArgs).
 */
export async function assertPortsFree(server: AppConfig['Server'], secretOption: SecretOption): Promise<void> {
  for (const { port, choose } of configuredPorts(server)) {
    const owner = await portHolder(server.Host, port, secretOption);
    if (owner) throw new PortInUseError(server.Host, owner, choose);
  }
}

/**
 * Claims the ports and the data directory (DataDirInUseError / PortInUseError when another process
 * has them), after checking that the configured host resolves (the resolver's error). A fixed port's
 * check also finds an address that is not this machine's; with port 0 the listen itself meets it. The lock is released by the caller on exit.
 */
export async function claimOwnership(config: AppConfig, secretOption: SecretOption): Promise<DataDirLock> {
  await assertHostResolves(config.Server.Host);
  await assertPortsFree(config.Server, secretOption);
  return acquireDataDirLock(config.Storage.DataDir);
}

/**
 * After a failed listen: the PortInUseError to report when a configured port is now held by another
 * process (two starts raced past the early check; the exclusive listen let only one through).
 */
export async function portConflict(server: AppConfig['Server'], secretOption: SecretOption): Promise<PortInUseError | undefined> {
  try {
    await assertPortsFree(server, secretOption);
    return undefined;
  } catch (e) {
    if (e instanceof PortInUseError) return e;
    throw e;
  }
}
