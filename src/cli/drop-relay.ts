// A TCP relay on 127.0.0.1 that `voice-hub simulate --drop-every` puts between its devices and the hub, to
// play a flaky Wi-Fi link: `dropAll(outageMs)` cuts every relayed connection at once, and for `outageMs`
// afterwards new connections are accepted but held, no byte forwarded either way, as when a device's
// packets go nowhere until the network is back; then they are joined to the service. Bytes are relayed
// untouched (HTTP, WebSocket, TLS alike).
import net from 'node:net';

export interface DropRelayOptions {
  /** Where the service listens. */
  host: string;
  port: number;
}

export interface DropRelay {
  /** The relay's own port on 127.0.0.1. */
  readonly port: number;
  /** Cuts every relayed connection now; for `outageMs` (default 0) new connections wait. */
  dropAll(outageMs?: number): void;
  /** Ends an outage now: the connections that waited are joined to the service. */
  resume(): void;
  /** Connections cut by `dropAll` so far. */
  readonly dropped: number;
  /** Cuts everything and stops listening. Idempotent. */
  close(): Promise<void>;
}

export async function startDropRelay(options: DropRelayOptions): Promise<DropRelay> {
  /** Relayed connections: client socket -> its socket to the service. */
  const pairs = new Map<net.Socket, net.Socket>();
  /** Client sockets accepted during an outage, waiting for it to end. */
  const held = new Set<net.Socket>();
  let outageTimer: NodeJS.Timeout | undefined;
  let dropped = 0;
  let closed = false;

  const relay = (client: net.Socket): void => {
    const upstream = net.connect({ host: options.host, port: options.port });
    client.setNoDelay(true);
    upstream.setNoDelay(true);
    pairs.set(client, upstream);
    // One side gone: the other goes too, at once (no half-open connections hiding a drop).
    const end = (): void => {
      pairs.delete(client);
      client.destroy();
      upstream.destroy();
    };
    client.on('error', end).on('close', end);
    upstream.on('error', end).on('close', end);
    client.pipe(upstream);
    upstream.pipe(client);
    client.resume();
  };

  const server = net.createServer({ pauseOnConnect: true }, (client) => {
    if (closed) return void client.destroy();
    if (outageTimer) {
      held.add(client);
      client.on('error', () => held.delete(client)).on('close', () => held.delete(client));
      return;
    }
    relay(client);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as net.AddressInfo;

  const endOutage = (): void => {
    outageTimer = undefined;
    for (const client of held) {
      held.delete(client);
      if (!client.destroyed) relay(client);
    }
  };

  const cut = (client: net.Socket): void => {
    pairs.get(client)?.destroy();
    pairs.delete(client);
    client.destroy();
  };

  return {
    port,
    get dropped() { return dropped; },
    dropAll(outageMs = 0) {
      if (closed) return;
      for (const client of [...pairs.keys()]) {
        dropped++;
        cut(client);
      }
      clearTimeout(outageTimer);
      outageTimer = undefined;
      if (outageMs > 0) {
        outageTimer = setTimeout(endOutage, outageMs);
      } else {
        endOutage();
      }
    },
    resume() {
      if (closed || !outageTimer) return;
      clearTimeout(outageTimer);
      endOutage();
    },
    close() {
      if (!closed) {
        closed = true;
        clearTimeout(outageTimer);
        outageTimer = undefined;
        for (const client of [...pairs.keys(), ...held]) cut(client);
        held.clear();
      }
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
