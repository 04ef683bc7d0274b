// The HTTP requests of the command-line tools (`health`, the simulator's API requests and its SignalR
// negotiate), on node:http rather than fetch. fetch keeps two rules of browsers that have no place in a
// tool talking to a service it was pointed at: it refuses the ports browsers block (6000, 6665-6669, 5060,
// 10080, ...: `voice-hub health` said "not reachable ...: bad port", exit 3, of a service answering
// there), and it follows redirects, dropping `Authorization` on one to another origin (HttpsRedirect's
// 308 to the HTTPS port: the simulator's registration went through, its session start was a baffling
// 401). Here every port is a port, and a redirect is an answer: the caller says where it points.
//
// The answer is a fetch Response, and a failure is fetch's shape (an error whose `cause` is the socket's
// or TLS's own error; the signal's reason when it aborts), so the bounded reading and the wording of
// failures are the same as before.
import http from 'node:http';
import https from 'node:https';
import { isIP } from 'node:net';
import type { Duplex } from 'node:stream';
import { Readable } from 'node:stream';
import tls from 'node:tls';
import { splitZone, zonedAddress } from '../zoned-url.js';

export interface ToolRequestInit {
  method?: string;
  headers?: Record<string, string>;
  body?: string | ArrayBuffer | Uint8Array;
  signal?: AbortSignal;
  /** Where to connect instead of the URL's host and port (relayAgent); none: a connection of its own. */
  agent?: http.Agent;
}

/** Statuses whose answer has no body; a Response refuses to be made with one. */
const NULL_BODY_STATUSES = new Set([204, 205, 304]);

export function toolRequest(url: string | URL, init: ToolRequestInit = {}): Promise<Response> {
  // A link-local address's zone (`[fe80::1%25eth0]`) is dialled, never sent: the Host header has none.
  const { text, zone } = splitZone(String(url));
  const target = new URL(text);
  const method = (init.method ?? 'GET').toUpperCase();
  const body = init.body === undefined ? undefined : typeof init.body === 'string' ? Buffer.from(init.body) : Buffer.from(init.body as ArrayBuffer);
  const headers: Record<string, string> = { ...(zone === undefined ? {} : { host: target.host }), ...init.headers };
  // As fetch does: a length for every request that may carry a body, so none goes out chunked.
  if (body !== undefined || (method !== 'GET' && method !== 'HEAD')) headers['content-length'] = String(body?.length ?? 0);
  const signal = init.signal;
  return new Promise<Response>((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const client = target.protocol === 'https:' ? https : http;
    if (target.protocol !== 'https:' && target.protocol !== 'http:') {
      return reject(new TypeError('request failed', { cause: new Error(`not an http(s) URL: ${target.protocol}`) }));
    }
    // No pooled connection: a tool makes a few requests, and a kept-alive socket would hold its process open.
    const dialled = zone === undefined ? {} : { hostname: zonedAddress(target.hostname, zone) };
    const req = client.request(target, { method, headers, agent: init.agent ?? false, ...dialled });
    const onAbort = (): void => {
      req.destroy();
      reject(signal!.reason);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
    req.on('error', (e) => {
      signal?.removeEventListener('abort', onAbort);
      reject(new TypeError('request failed', { cause: e }));
    });
    req.on('response', (res) => {
      signal?.removeEventListener('abort', onAbort);
      // From here the signal ends the reading of the body: the body's reader fails with its reason.
      signal?.addEventListener('abort', () => res.destroy(signal.reason instanceof Error ? signal.reason : new Error(String(signal.reason))), { once: true });
      const status = res.statusCode ?? 0;
      if (status < 200 || status > 599) {
        res.destroy();
        reject(new TypeError('request failed', { cause: new Error(`the answer's status ${status} is not an HTTP status`) }));
        return;
      }
      const answerHeaders = new Headers();
      for (let i = 0; i + 1 < res.rawHeaders.length; i += 2) answerHeaders.append(res.rawHeaders[i]!, res.rawHeaders[i + 1]!);
      const stream = NULL_BODY_STATUSES.has(status) || method === 'HEAD' ? null : (Readable.toWeb(res) as ReadableStream<Uint8Array>);
      if (stream === null) res.resume();
      resolve(new Response(stream, { status, statusText: res.statusMessage ?? '', headers: answerHeaders }));
    });
    req.end(body);
  });
}

/**
 * Where a redirect answer to a request for `url` points, for a failure that says so (fetch followed it;
 * this client does not): its origin and path only, the way a URL is written, so neither a query (a token)
 * nor a control character of a hostile server's header reaches the terminal.
 */
export function redirectNote(res: Response, url: string | URL): string {
  const location = res.status >= 300 && res.status < 400 ? res.headers.get('location') : null;
  if (!location) return '';
  try {
    const to = new URL(location, url);
    return ` (a redirect to ${to.origin}${to.pathname}, not followed: give the address it names)`;
  } catch {
    return ' (a redirect to an address that is not a URL, not followed)';
  }
}

/** A TCP endpoint to dial. */
export interface Endpoint {
  host: string;
  port: number;
}

/**
 * An agent whose connections go to `via` (the simulator's drop relay on 127.0.0.1) whatever host and
 * port the URL names, while the request stays the URL's: its Host header, and over TLS the name sent
 * (SNI) and the name the certificate is checked against. Rewriting the URL to the relay's address instead
 * had TLS check the certificate for 127.0.0.1, which a certificate made for the Pi's name does not list:
 * `simulate --drop-every` against `https://voicepi.local:5001` failed every device's negotiation.
 * No pooling (keepAlive off), as toolRequest's own connections.
 */
export function relayAgent(secure: boolean, via: Endpoint): http.Agent {
  const redirect = <T extends { host?: string | null; hostname?: string | null; port?: number | string | null }>(options: T): T & Endpoint => ({
    ...options,
    host: via.host,
    port: via.port,
  });
  if (!secure) {
    return new (class extends http.Agent {
      override createConnection(options: http.ClientRequestArgs, callback?: (err: Error | null, stream: Duplex) => void): Duplex | null | undefined {
        return super.createConnection(redirect(options), callback);
      }
    })();
  }
  return new (class extends https.Agent {
    override createConnection(options: http.ClientRequestArgs & tls.ConnectionOptions, callback?: (err: Error | null, stream: Duplex) => void): Duplex | null | undefined {
      const name = (options.hostname ?? options.host ?? '').replace(/^\[|\]$/g, '');
      return super.createConnection({
        ...redirect(options),
        // SNI carries a name, never an address; the certificate is checked against the URL's host either way.
        servername: isIP(name) ? '' : name,
        checkServerIdentity: (_host: string, cert: tls.PeerCertificate) => tls.checkServerIdentity(name, cert),
      }, callback);
    }
  })();
}
