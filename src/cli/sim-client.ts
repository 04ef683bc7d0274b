// The official @microsoft/signalr client, built so that it also runs inside the bundle and the single
// executables. In Node the client loads `ws`, `eventsource`, `tough-cookie` and `fetch-cookie` with a
// runtime `require` that esbuild leaves alone: from dist/ it finds the repository's node_modules by luck,
// and in a SEA executable `require` knows only Node's built-ins. So the simulator gives the client an
// HTTP client of its own (http-request.ts; no cookie jar needed) that reads answers up to a bound, and answers its one
// unconditional lookup, in HttpConnection's constructor, with the `ws` we bundle, bounded as well.
import {
  HttpClient, HttpError, HttpResponse, HttpTransportType, HubConnectionBuilder, LogLevel, AbortError, TimeoutError,
  type HttpRequest, type HubConnection, type ILogger,
} from '@microsoft/signalr';
import { MessagePackHubProtocol } from '@microsoft/signalr-protocol-msgpack';
import type { Agent } from 'node:http';
import WebSocket from 'ws';
import { UPSTREAM_MAX_MESSAGE_BYTES } from '../upstream/websocket.js';
import { readAtMost, tooLargeText } from './bounded-answer.js';
import { redirectNote, relayAgent, toolRequest, type Endpoint } from './http-request.js';
import { untrustedCertificateHint } from './untrusted-certificate.js';

export type SimProtocol = 'json' | 'messagepack';

export interface SimClientOptions {
  protocol: SimProtocol;
  /** Straight to the WebSocket, without POST /negotiate. */
  skipNegotiation?: boolean;
  accessToken?: string;
  /** Reconnect on its own after a lost connection (withAutomaticReconnect, RECONNECT_DELAYS_MS). */
  reconnect?: boolean;
  /** Ask the server for stateful reconnect (withStatefulReconnect); it is used when negotiate offers it. */
  statefulReconnect?: boolean;
  /** Where the client's own warnings and errors go; nothing when absent. */
  log?: (line: string) => void;
  /**
   * Connect here (the drop relay) instead of to the URL's host and port, the URL otherwise kept: its Host
   * header and, over TLS, the name the certificate is checked against.
   */
  via?: Endpoint;
}

/** signalr's HttpClient over the tools' requests (negotiate is the only HTTP request it makes here). */
class FetchClient extends HttpClient {
  constructor(private readonly agent: Agent | undefined) {
    super();
  }

  async send(request: HttpRequest): Promise<HttpResponse> {
    if (!request.url || !request.method) throw new Error('request without url or method');
    const abort = new AbortController();
    if (request.abortSignal) {
      if (request.abortSignal.aborted) throw new AbortError();
      request.abortSignal.onabort = () => abort.abort();
    }
    let timedOut = false;
    let tooLarge: Error | undefined;
    const timer = request.timeout ? setTimeout(() => { timedOut = true; abort.abort(); }, request.timeout) : undefined;
    try {
      const response = await toolRequest(request.url, {
        method: request.method,
        headers: { 'X-Requested-With': 'XMLHttpRequest', ...request.headers },
        body: request.content,
        signal: abort.signal,
        ...(this.agent ? { agent: this.agent } : {}),
      });
      const answer = await readAtMost(response, abort);
      if ('failed' in answer) throw answer.failed;
      if ('tooLarge' in answer) throw (tooLarge = new Error(tooLargeText(`${request.method} ${request.url}: HTTP ${response.status}`)));
      const { bytes } = answer;
      const content = request.responseType === 'arraybuffer' ? new Uint8Array(bytes).buffer : bytes.toString('utf8');
      if (!response.ok) throw new HttpError(`${response.status} ${response.statusText}${redirectNote(response, request.url)}: ${String(content).slice(0, 200)}`, response.status);
      return new HttpResponse(response.status, response.statusText, content);
    } catch (e) {
      if (e instanceof HttpError || e === tooLarge) throw e;
      if (timedOut) throw new TimeoutError();
      if (abort.signal.aborted) throw new AbortError();
      // A failed request says only that it failed ("TypeError: request failed", all the client showed of
      // a refused connection or a certificate for another name); the reason is in its cause, said here
      // as the API requests say it.
      const cause = e instanceof Error && e.cause instanceof Error ? e.cause : undefined;
      if (cause) throw new Error(`${request.method} ${request.url}: ${cause.message}${untrustedCertificateHint(cause)}`, { cause });
      throw e;
    } finally {
      clearTimeout(timer);
    }
  }
}

const LEVELS: Record<number, string> = { [LogLevel.Warning]: 'warn', [LogLevel.Error]: 'fail', [LogLevel.Critical]: 'crit' };

function clientLogger(log: ((line: string) => void) | undefined): ILogger {
  return {
    log: (level, message) => {
      if (log && level >= LogLevel.Warning && level < LogLevel.None) log(`${LEVELS[level] ?? 'warn'}: SignalR: ${message}`);
    },
  };
}

/**
 * The largest hub message the simulator takes. The hub's largest are what it forwards from the voice
 * server (AudioData, TextResponse): an upstream message of at most UPSTREAM_MAX_MESSAGE_BYTES, in Base64
 * or JSON text, in an invocation. ws' own default is 100 MiB, and permessage-deflate would let a server
 * reach it from a few hundred KB on the wire: a simulator pointed at the wrong host must not balloon.
 */
export const SIM_MAX_MESSAGE_BYTES = 2 * UPSTREAM_MAX_MESSAGE_BYTES;

/** `ws` as the client constructs it (url, protocols, options), with the bound and without compression. */
class BoundedWebSocket extends WebSocket {
  constructor(address: string, protocols?: string | string[], options?: WebSocket.ClientOptions) {
    super(address, protocols, { ...options, maxPayload: SIM_MAX_MESSAGE_BYTES, perMessageDeflate: false });
  }
}

// The client picks `__non_webpack_require__` over `require` when `__webpack_require__` is a function
// (its way of escaping webpack). It only asks for `ws` and `eventsource`; we give it nothing for the
// latter, since the simulator uses the WebSocket transport only.
type Globals = { __webpack_require__?: unknown; __non_webpack_require__?: unknown };

function withBundledModules<T>(build: () => T, webSocket: typeof BoundedWebSocket = BoundedWebSocket): T {
  const g = globalThis as Globals;
  const saved = { w: g.__webpack_require__, n: g.__non_webpack_require__ };
  g.__webpack_require__ = () => undefined;
  g.__non_webpack_require__ = (name: string): unknown => (name === 'ws' ? webSocket : undefined);
  try {
    return build(); // synchronous: HttpConnection looks the modules up in its constructor
  } finally {
    g.__webpack_require__ = saved.w;
    g.__non_webpack_require__ = saved.n;
    if (saved.w === undefined) delete g.__webpack_require__;
    if (saved.n === undefined) delete g.__non_webpack_require__;
  }
}

/** A hub URL as the client wants it: the start response names `ws(s)://`, negotiate needs `http(s)://`. */
export function hubHttpUrl(url: string): string {
  return url.replace(/^ws(s?):\/\//i, 'http$1://');
}

/**
 * Retry at once, then every second for about half a minute: the official default (0, 2, 10, 30 s, then
 * give up) leaves a device deaf for 2 s after a one-second Wi-Fi blip.
 */
export const RECONNECT_DELAYS_MS: readonly number[] = [0, 250, 500, ...Array.from({ length: 30 }, () => 1000)];

/** Builds (does not start) an official client connection for the hub at `url`. */
export function buildSimConnection(url: string, options: SimClientOptions): HubConnection {
  const agent = options.via ? relayAgent(/^(wss|https):/i.test(url), options.via) : undefined;
  // The client hands its socket class the URL and its headers only: the agent is added here.
  const webSocket = agent
    ? class extends BoundedWebSocket {
      constructor(address: string, protocols?: string | string[], wsOptions?: WebSocket.ClientOptions) {
        super(address, protocols, { ...wsOptions, agent });
      }
    }
    : BoundedWebSocket;
  let builder = new HubConnectionBuilder()
    .withUrl(hubHttpUrl(url), {
      transport: HttpTransportType.WebSockets,
      skipNegotiation: options.skipNegotiation ?? false,
      httpClient: new FetchClient(agent),
      ...(options.accessToken ? { accessTokenFactory: () => options.accessToken! } : {}),
    })
    .configureLogging(clientLogger(options.log));
  if (options.protocol === 'messagepack') builder = builder.withHubProtocol(new MessagePackHubProtocol());
  if (options.reconnect) builder = builder.withAutomaticReconnect([...RECONNECT_DELAYS_MS]);
  if (options.statefulReconnect) builder = builder.withStatefulReconnect();
  return withBundledModules(() => builder.build(), webSocket);
}
