// Whether a broker accepts TCP connections right now. A broker that closes our connection cleanly right
// after accepting it either gave our client id to another connection (it keeps listening) or is going
// away (mosquitto stops its listeners before it closes its clients' connections, so a connection opened
// just then is refused): MQTT 3.1.1 sends no reason with the close, and mosquitto sends none to an
// MQTT 5 client either, so this is the one way left to tell the two apart.
import net from 'node:net';

/** Resolves true when a TCP connection to host:port opens within `timeoutMs`; closes it at once. Never rejects. */
export function brokerListening(host: string, port: number, timeoutMs: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host, port });
    const done = (listening: boolean): void => {
      clearTimeout(timer);
      socket.destroy();
      resolve(listening);
    };
    // An answer that does not come in time is no sign of a broker that works and gave our id away.
    const timer = setTimeout(() => done(false), timeoutMs);
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}
