// Loopback ports for tests that must know a port before something listens on it (a restart on the
// same port, a configuration naming it, an address with nothing behind it).
import { createServer, type AddressInfo } from 'node:net';

/** A 127.0.0.1 port that was free a moment ago: bound once by the OS, then released. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      server.close(() => resolve(port));
    });
  });
}
