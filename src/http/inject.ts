// Calling the HTTP API in the same process, without a socket: the request runs through the same
// pipeline (pipeline.ts) as one that arrived on a listener, and the answer comes back as values. Like
// fastify's `inject()`: for tests and tools that want the API's behaviour without the network.
import { tooLarge } from './body.js';
import type { HttpExchange, HttpPipeline } from './pipeline.js';

export interface InjectRequest {
  method: string;
  /** Path with an optional `?query`, as on the request line. */
  url: string;
  /**
   * Header fields (names in any case; an array sends the name once per value). Host defaults to
   * `localhost` and Content-Length to the body's size, as a client would send them.
   */
  headers?: Readonly<Record<string, string | readonly string[]>>;
  /** A string or bytes as they are; anything else is sent as JSON (Content-Type defaults to JSON). */
  body?: string | Uint8Array | object;
  /** As if the request came in on the TLS listener. */
  secure?: boolean;
}

export interface InjectResponse {
  status: number;
  /** Names in lower case. */
  headers: Record<string, string>;
  body: string;
  /** The connection would be closed after this answer. */
  closed: boolean;
  /** The body parsed as JSON; throws when it is not JSON. */
  json(): unknown;
}

export type Inject = (request: InjectRequest) => Promise<InjectResponse>;

export function createInject(pipeline: HttpPipeline): Inject {
  return (request) => {
    const queryAt = request.url.indexOf('?');
    const path = queryAt < 0 ? request.url : request.url.slice(0, queryAt);
    const query = queryAt < 0 ? '' : request.url.slice(queryAt + 1);
    const lines: Array<[string, string]> = [];
    for (const [name, value] of Object.entries(request.headers ?? {})) {
      for (const v of typeof value === 'string' ? [value] : value) lines.push([name.toLowerCase(), v]);
    }
    const has = (name: string): boolean => lines.some(([n]) => n === name);
    let payload: Buffer | undefined;
    if (request.body !== undefined) {
      if (typeof request.body === 'string') payload = Buffer.from(request.body);
      else if (request.body instanceof Uint8Array) payload = Buffer.from(request.body);
      else {
        payload = Buffer.from(JSON.stringify(request.body));
        if (!has('content-type')) lines.push(['content-type', 'application/json']);
      }
    }
    if (!has('host')) lines.unshift(['host', 'localhost']);
    if (payload && !has('content-length') && !has('transfer-encoding')) lines.push(['content-length', String(payload.length)]);
    const bytes = payload ?? Buffer.alloc(0);

    return new Promise((resolve) => {
      const exchange: HttpExchange = {
        readBody: (maxBytes) => (bytes.length > maxBytes ? Promise.reject(tooLarge(maxBytes)) : Promise.resolve(bytes)),
        readyToRun: () => Promise.resolve(true),
        send: (reply, after, written) => {
          const headers: Record<string, string> = {};
          for (const [k, v] of reply.headers) headers[k.toLowerCase()] = v;
          const body = typeof reply.payload === 'string' ? reply.payload : reply.payload.toString('utf8');
          written();
          resolve({ status: reply.status, headers, body, closed: after !== 'keep', json: () => JSON.parse(body) as unknown });
        },
      };
      pipeline({ method: request.method.toUpperCase(), path, query, lines, secure: request.secure ?? false }, exchange);
    });
  };
}
