// HTTP over a raw socket: fetch normalises paths (`..`, percent-encoding) and refuses bad headers and
// mismatched lengths, which are exactly what the fuzz tests need to send.
import net from 'node:net';

export interface RawAnswer {
  /** Status codes of every response on the connection, in order (pipelining may give several). */
  readonly statuses: number[];
  readonly text: string;
  /** The server ended the connection (rather than us, after waiting). */
  readonly closedByServer: boolean;
}

/**
 * Writes `request` as is and collects what comes back until the server closes, or nothing arrived for
 * `firstByteMs` (a server waiting for a body that will never come), or `idleMs` passed after data.
 */
export function rawRequest(port: number, request: string | Uint8Array, firstByteMs = 400, idleMs = 150): Promise<RawAnswer> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    let closedByServer = false;
    let timer: NodeJS.Timeout | undefined;
    let done = false;
    const finish = (): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      const text = Buffer.concat(chunks).toString('latin1');
      const statuses = [...text.matchAll(/(?:^|\r\n)HTTP\/1\.[01] (\d{3})/g)].map((m) => Number(m[1]));
      resolve({ statuses, text, closedByServer });
    };
    const arm = (ms: number): void => {
      clearTimeout(timer);
      timer = setTimeout(finish, ms);
    };
    socket.on('connect', () => {
      socket.write(request);
      arm(firstByteMs);
    });
    socket.on('data', (d: Buffer) => {
      chunks.push(d);
      arm(idleMs);
    });
    socket.on('end', () => {
      closedByServer = true;
      finish();
    });
    socket.on('error', () => {
      closedByServer = true;
      finish();
    });
    socket.on('close', finish);
    // Bound the whole exchange whatever happens.
    setTimeout(finish, 10_000).unref();
  });
}

/** A request with `Connection: close`, the given headers (values sent verbatim) and body. */
export function httpRequest(method: string, target: string, headers: ReadonlyArray<readonly [string, string]>, body: string | Uint8Array = ''): Buffer {
  const head = [`${method} ${target} HTTP/1.1`, 'Host: 127.0.0.1', ...headers.map(([k, v]) => `${k}: ${v}`), 'Connection: close', '', ''].join('\r\n');
  return Buffer.concat([Buffer.from(head, 'utf8'), typeof body === 'string' ? Buffer.from(body, 'utf8') : body]);
}

/** Sends many requests at once (each on its own connection) and returns every status seen. */
export async function rawBatch(port: number, requests: readonly Uint8Array[]): Promise<{ statuses: number[]; answers: RawAnswer[] }> {
  const answers = await Promise.all(requests.map((r) => rawRequest(port, r)));
  return { statuses: answers.flatMap((a) => a.statuses), answers };
}
