// A TCP relay on 127.0.0.1:0 in front of a service, for tests of dropped connections: every client
// connection is piped to the target, and dropAll() cuts every relayed pair at once, as a Wi-Fi drop
// does (no close frame, no FIN handshake: both sockets are destroyed). New connections are accepted
// as before, so a client can reconnect at once.
import { createServer, connect, type Socket } from 'node:net';

export interface DropRelay {
  readonly port: number;
  /** Cuts every connection relayed so far. */
  dropAll(): void;
  /** Connections cut by dropAll so far. */
  readonly dropped: number;
  close(): Promise<void>;
}

export async function startDropRelay(target: { host: string; port: number }): Promise<DropRelay> {
  const pairs = new Set<[Socket, Socket]>();
  let dropped = 0;
  const server = createServer((client) => {
    const upstream = connect(target.port, target.host);
    const pair: [Socket, Socket] = [client, upstream];
    pairs.add(pair);
    const end = (): void => {
      pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    client.on('error', end).on('close', end);
    upstream.on('error', end).on('close', end);
    client.pipe(upstream);
    upstream.pipe(client);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('relay has no port');
  return {
    port: address.port,
    get dropped() {
      return dropped;
    },
    dropAll() {
      for (const pair of [...pairs]) {
        pairs.delete(pair);
        dropped++;
        // The service's side first: it learns of the drop before the client can come back.
        pair[1].destroy();
        pair[0].destroy();
      }
    },
    async close() {
      for (const [client, upstream] of pairs) {
        client.destroy();
        upstream.destroy();
      }
      pairs.clear();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
