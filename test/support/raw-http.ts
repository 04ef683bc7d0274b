// HTTP over a raw socket: fetch normalises paths (`..`, percent-encoding) and refuses bad headers and
// mismatched lengths, which are exactly what the fuzz tests need to send.
import assert from 'node:assert/strict';
import net from 'node:net';

export interface RawAnswer {
  /** Status codes of every response on the connection, in order (pipelining may give several). */
  readonly statuses: number[];
  readonly text: string;
  /** The server ended the connection (rather than us, after waiting). */
  readonly closedByServer: boolean;
}

/** The status codes of the status lines in `text`, in order. */
export const statusesIn = (text: string): number[] => [...text.matchAll(/(?:^|\r\n)HTTP\/1\.[01] (\d{3})/g)].map((m) => Number(m[1]));

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
      resolve({ statuses: statusesIn(text), text, closedByServer });
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

export interface RawResponse {
  readonly status: number;
  /** Lower-case names; a repeated header keeps its last value. */
  readonly headers: Readonly<Record<string, string>>;
  readonly body: Buffer;
  /** The response as it was on the wire. */
  readonly raw: Buffer;
}

/**
 * Splits a byte stream into responses. Every answer of this server is framed by Content-Length (uWS
 * writes one for `end`), so an answer without one ends the split; `rest` is what could not be read.
 */
export function splitResponses(bytes: Buffer): { responses: RawResponse[]; rest: Buffer } {
  const responses: RawResponse[] = [];
  let at = 0;
  for (;;) {
    const end = bytes.indexOf('\r\n\r\n', at);
    if (end < 0) break;
    const lines = bytes.subarray(at, end).toString('latin1').split('\r\n');
    const m = /^HTTP\/1\.1 (\d{3}) /.exec(lines[0]!);
    if (!m) break;
    const headers: Record<string, string> = {};
    for (const line of lines.slice(1)) {
      const colon = line.indexOf(':');
      headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim();
    }
    const length = Number(headers['content-length'] ?? NaN);
    if (!Number.isInteger(length) || end + 4 + length > bytes.length) break;
    responses.push({ status: Number(m[1]), headers, body: bytes.subarray(end + 4, end + 4 + length), raw: bytes.subarray(at, end + 4 + length) });
    at = end + 4 + length;
  }
  return { responses, rest: bytes.subarray(at) };
}

/** A response without what differs between two answers to the same request: Date and the traceId. */
export function comparable(response: RawResponse): string {
  return response.raw
    .toString('latin1')
    .replace(/\r\nDate: [^\r]*/, '')
    .replace(/"traceId":"[^"]*"/, '"traceId":"-"');
}

export interface Exchange {
  readonly responses: RawResponse[];
  /** Bytes after the last whole response. */
  readonly rest: Buffer;
  readonly closedByServer: boolean;
  /** From the first write until the server closed or we stopped waiting. */
  readonly ms: number;
}

export interface ExchangeOptions {
  /** Pause between writes: each piece then arrives in a read of its own. */
  readonly gapMs?: number;
  /** Write each piece only once the one before it was answered (no pipelining, whatever the load). */
  readonly stepwise?: boolean;
  /** Stop once this many responses came (the server may keep the connection open). */
  readonly expect?: number;
  /**
   * Stop when nothing arrived for this long after the last write: 1.5 s, or 5 s when `expect` says what
   * is awaited (a loaded machine may take over 1.5 s to answer; an exchange that gets all it expects
   * ends at once anyway).
   */
  readonly idleMs?: number;
}

/**
 * "Closed at once", as against held until uWS's idle timeout (10 s or more): half that timeout, not a
 * figure of a quiet machine, as a loaded one can take seconds to get to a connection. An exchange that
 * awaits such a close waits this long (`idleMs`), so that a slow close is seen rather than cut off.
 */
export const CLOSED_AT_ONCE_MS = 5000;

export function assertClosedAtOnce(answer: Exchange): void {
  assert.ok(answer.closedByServer && answer.ms < CLOSED_AT_ONCE_MS, `closed at once: ${answer.closedByServer ? 'closed' : 'still open'} after ${answer.ms.toFixed(0)} ms`);
}

/** Writes `pieces` in order on one connection and collects the responses. Bounded to 15 s in all. */
export function exchange(port: number, pieces: readonly Uint8Array[], options: ExchangeOptions = {}): Promise<Exchange> {
  const { gapMs = 0, stepwise = false, expect = Infinity, idleMs = expect === Infinity ? 1500 : 5000 } = options;
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    let closedByServer = false;
    let written = false;
    let done = false;
    let started = 0;
    let idle: NodeJS.Timeout | undefined;
    const finish = (): void => {
      if (done) return;
      done = true;
      clearTimeout(idle);
      clearTimeout(cap);
      socket.destroy();
      const { responses, rest } = splitResponses(Buffer.concat(chunks));
      resolve({ responses, rest, closedByServer, ms: performance.now() - started });
    };
    const armIdle = (): void => {
      clearTimeout(idle);
      if (written) idle = setTimeout(finish, idleMs);
    };
    const answered = (n: number): Promise<void> => new Promise((resolve) => {
      const poll = (): void => (done || splitResponses(Buffer.concat(chunks)).responses.length >= n ? resolve() : void setTimeout(poll, 5));
      poll();
    });
    socket.on('connect', async () => {
      started = performance.now();
      for (let i = 0; i < pieces.length && !done; i++) {
        if (i > 0 && stepwise) await answered(i);
        else if (i > 0 && gapMs > 0) await new Promise((r) => setTimeout(r, gapMs));
        if (!socket.destroyed) socket.write(pieces[i]!);
      }
      written = true;
      armIdle();
    });
    socket.on('data', (d: Buffer) => {
      chunks.push(d);
      if (splitResponses(Buffer.concat(chunks)).responses.length >= expect) finish();
      else armIdle();
    });
    const closed = (): void => {
      closedByServer = true;
      finish();
    };
    socket.on('end', closed);
    socket.on('error', closed);
    socket.on('close', finish);
    const cap = setTimeout(finish, 15_000);
  });
}

/** A keep-alive request (no `Connection: close`), for pipelining. */
export function keepAliveRequest(method: string, target: string, headers: ReadonlyArray<readonly [string, string]>, body: string | Uint8Array = ''): Buffer {
  const bytes = typeof body === 'string' ? Buffer.from(body, 'utf8') : Buffer.from(body);
  const all = bytes.length > 0 || method === 'POST' || method === 'PUT' ? [...headers, ['Content-Length', String(bytes.length)] as const] : headers;
  const head = [`${method} ${target} HTTP/1.1`, 'Host: 127.0.0.1', ...all.map(([k, v]) => `${k}: ${v}`), '', ''].join('\r\n');
  return Buffer.concat([Buffer.from(head, 'utf8'), bytes]);
}
