// Shared helpers for the hub tests: a real uWS app on 127.0.0.1:0 with the hub attached, the
// official SignalR client (JSON or MessagePack, negotiated or not), a raw `ws` client, timeouts.
import {
  HttpTransportType,
  HubConnectionBuilder,
  LogLevel,
  type HubConnection as ClientConnection,
} from '@microsoft/signalr';
import { MessagePackHubProtocol } from '@microsoft/signalr-protocol-msgpack';
import type { us_listen_socket } from 'uWebSockets.js';
import { decode as decodeMessagePack, encode as encodeMessagePack } from '@msgpack/msgpack';
import WebSocket from 'ws';
import { splitBinaryMessages, writeBinaryMessage } from '../../src/hub/binary-format.js';
import { loadNativeUws } from '../../src/http/uws-native.js';
import { silentLogger } from '../../src/log/logger.js';
import { attachHub, HubError, type HubMethodEntry, type HubOptions, type VoiceHubServer } from '../../src/hub/index.js';
import { schemaDefaults } from '../../src/config/schema-keys.js';
import { sleep, withTimeout } from '../support/wait.js';

/** The shipped Hub settings: tests run with the budgets users get unless a test says otherwise. */
const SHIPPED_HUB = (schemaDefaults() as { Hub: Record<string, number> }).Hub;

/** The budget options of the shipped configuration. */
export const shippedBudgets: Pick<HubOptions, 'maximumFrameSize' | 'messagesPerTurn' | 'budgets' | 'maximumConnections' | 'maximumConnectionsPerAddress'> = {
  maximumConnections: SHIPPED_HUB.MaximumConnections!,
  maximumConnectionsPerAddress: SHIPPED_HUB.MaximumConnectionsPerAddress!,
  maximumFrameSize: SHIPPED_HUB.MaximumFrameSize!,
  messagesPerTurn: SHIPPED_HUB.MessagesPerTurn!,
  budgets: {
    unauthenticated: { perSecond: SHIPPED_HUB.UnauthenticatedMessageRate!, burst: SHIPPED_HUB.UnauthenticatedMessageBurst! },
    authenticated: { perSecond: SHIPPED_HUB.MessageRate!, burst: SHIPPED_HUB.MessageBurst! },
    unauthenticatedPerAddress: { perSecond: SHIPPED_HUB.UnauthenticatedAddressMessageRate!, burst: SHIPPED_HUB.UnauthenticatedAddressMessageBurst! },
  },
};

export interface TestHub {
  readonly port: number;
  /** http://127.0.0.1:port/voice-hub */
  readonly url: string;
  readonly server: VoiceHubServer;
  /** Arguments of every `Record` call, in order. */
  readonly recorded: unknown[];
  readonly closedIds: string[];
  stop(): void;
}

/** The method table the integration tests drive. */
function testMethods(server: () => VoiceHubServer, recorded: unknown[]): Record<string, HubMethodEntry> {
  return {
    Echo: { args: 1, handler: (_ctx, [x]) => x },
    // Declares its parameter types, as the voice hub's JoinSession(sessionId: string, deviceToken: string).
    JoinSession: { args: ['string', 'string'], handler: (_ctx, [s, t]) => `${String(s)}:${String(t)}` },
    Add: { args: 2, handler: (_ctx, [a, b]) => (a as number) + (b as number) },
    Fail: { args: 0, handler: () => { throw new HubError('nope'); } },
    Crash: { args: 0, handler: () => { throw new Error('secret internals'); } },
    Nothing: { args: 0, handler: () => undefined },
    Record: { args: 1, handler: (_ctx, [x]) => void recorded.push(x) },
    Slow: { args: 2, handler: async (_ctx, [ms, x]) => { await sleep(ms as number); recorded.push(x); return x; } },
    Whoami: { args: 0, handler: (ctx) => ctx.user ?? null },
    Protocol: { args: 0, handler: (ctx) => ctx.protocol },
    Join: { args: 1, handler: (ctx, [g]) => { ctx.joinGroup(g as string); return ctx.isInGroup(g as string); } },
    Leave: { args: 1, handler: (ctx, [g]) => { ctx.leaveGroup(g as string); return ctx.isInGroup(g as string); } },
    Broadcast: { args: 2, handler: (_ctx, [g, m]) => server().sendToGroup(g as string, 'Message', m) },
    Notify: { args: 1, handler: (ctx, [m]) => ctx.sendToCaller('Notice', m) },
    BytesInfo: { args: 1, handler: (_ctx, [b]) => (b instanceof Uint8Array ? `bytes:${b.length}` : typeof b) },
    Flood: {
      args: 2,
      handler: (ctx, [count, size]) => {
        const payload = 'x'.repeat(size as number);
        for (let i = 0; i < (count as number); i++) ctx.sendToCaller('Flood', payload);
      },
    },
  };
}

export async function startHub(options: Partial<HubOptions> = {}): Promise<TestHub> {
  const { uws } = loadNativeUws();
  const app = uws.App();
  const recorded: unknown[] = [];
  const closedIds: string[] = [];
  let server: VoiceHubServer | undefined;
  server = attachHub(app, {
    path: '/voice-hub',
    methods: testMethods(() => server!, recorded),
    maximumReceiveMessageSize: 32 * 1024,
    ...shippedBudgets,
    keepAliveIntervalMs: 15_000,
    clientTimeoutMs: 30_000,
    maxBodyBytes: 65_536,
    logger: silentLogger,
    onConnectionClosed: (id) => closedIds.push(id),
    ...options,
  });
  // What the application's HTTP API does for everything else: the hub's routes must win over it.
  app.any('/*', (res) => {
    res.writeStatus('404 Not Found').end('not found');
  });
  const listenSocket = await new Promise<us_listen_socket>((resolve, reject) => {
    app.listen('127.0.0.1', 0, (ls) => (ls ? resolve(ls) : reject(new Error('listen failed'))));
  });
  const port = uws.us_socket_local_port(listenSocket as never);
  return {
    port,
    url: `http://127.0.0.1:${port}/voice-hub`,
    server,
    recorded,
    closedIds,
    stop() {
      server!.closeAll({ allowReconnect: false });
      uws.us_listen_socket_close(listenSocket);
    },
  };
}

export interface ClientOptions {
  protocol?: 'json' | 'messagepack';
  skipNegotiation?: boolean;
  accessToken?: string;
  serverTimeoutMs?: number;
  keepAliveMs?: number;
  headers?: Record<string, string>;
}

/** An official @microsoft/signalr client, started. */
export async function connectClient(url: string, opts: ClientOptions = {}): Promise<ClientConnection> {
  let builder = new HubConnectionBuilder()
    .withUrl(url, {
      ...(opts.skipNegotiation ? { skipNegotiation: true, transport: HttpTransportType.WebSockets } : {}),
      ...(opts.accessToken ? { accessTokenFactory: () => opts.accessToken! } : {}),
      ...(opts.headers ? { headers: opts.headers } : {}),
    })
    .configureLogging(LogLevel.None);
  if (opts.protocol === 'messagepack') builder = builder.withHubProtocol(new MessagePackHubProtocol());
  const connection = builder.build();
  if (opts.serverTimeoutMs !== undefined) connection.serverTimeoutInMilliseconds = opts.serverTimeoutMs;
  if (opts.keepAliveMs !== undefined) connection.keepAliveIntervalInMilliseconds = opts.keepAliveMs;
  await withTimeout(connection.start(), 5000, 'client start');
  return connection;
}

/** Resolves with the error the client's onclose reports (undefined for a clean stop). */
export function closedWith(connection: ClientConnection): Promise<Error | undefined> {
  return new Promise((resolve) => connection.onclose((error) => resolve(error)));
}

export interface RawFrame {
  readonly data: Buffer;
  readonly binary: boolean;
}

/** A raw WebSocket client for what the official client never sends. */
export class RawClient {
  private readonly frames: RawFrame[] = [];
  private waiters: (() => void)[] = [];
  readonly closed: Promise<{ code: number; reason: string }>;

  private constructor(readonly ws: WebSocket) {
    ws.on('message', (data: Buffer, binary: boolean) => {
      this.frames.push({ data, binary });
      this.wake();
    });
    this.closed = new Promise((resolve) => ws.on('close', (code, reason) => {
      this.wake();
      resolve({ code, reason: reason.toString() });
    }));
  }

  /** `localAddress`: the loopback address to connect from (any of 127.0.0.0/8), as another host would. */
  static connect(url: string, headers: Record<string, string> = {}, localAddress?: string): Promise<RawClient> {
    const ws = new WebSocket(url.replace(/^http/, 'ws'), { headers, ...(localAddress ? { localAddress } : {}) });
    return withTimeout(
      new Promise<RawClient>((resolve, reject) => {
        ws.once('open', () => resolve(new RawClient(ws)));
        ws.once('unexpected-response', (_req, res) => reject(new Error(`HTTP ${res.statusCode}`)));
        ws.once('error', reject);
      }),
      5000,
      'raw connect',
    );
  }

  /** The upgrade's HTTP status when it is refused. */
  static async refusal(url: string, headers: Record<string, string> = {}): Promise<number> {
    try {
      const client = await RawClient.connect(url, headers);
      client.ws.close();
      return 101;
    } catch (e) {
      const match = /HTTP (\d+)/.exec(String(e));
      if (!match) throw e;
      return Number(match[1]);
    }
  }

  send(data: string | Uint8Array, binary = typeof data !== 'string'): void {
    this.ws.send(data, { binary });
  }

  async next(ms = 3000): Promise<RawFrame> {
    const deadline = Date.now() + ms;
    while (this.frames.length === 0) {
      if (this.ws.readyState === WebSocket.CLOSED) throw new Error('socket closed while waiting for a frame');
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`no frame within ${ms} ms`);
      await withTimeout(new Promise<void>((resolve) => this.waiters.push(resolve)), left, 'next frame').catch(() => undefined);
    }
    return this.frames.shift()!;
  }

  /** Reads frames until the socket closes (within `ms`); returns them all. */
  async untilClosed(ms = 5000): Promise<RawFrame[]> {
    const frames: RawFrame[] = [];
    const deadline = Date.now() + ms;
    for (;;) {
      try {
        frames.push(await this.next(Math.max(1, deadline - Date.now())));
      } catch {
        await withTimeout(this.closed, Math.max(1, deadline - Date.now()), 'socket close');
        return frames;
      }
    }
  }

  /** Performs the JSON or MessagePack handshake and returns the response frame. */
  async handshake(protocol: 'json' | 'messagepack' = 'json'): Promise<RawFrame> {
    this.send(`{"protocol":"${protocol}","version":1}\u001e`);
    return this.next();
  }

  private wake(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const w of waiters) w();
  }
}

export type RawProtocol = 'json' | 'messagepack';
const RECORD_SEPARATOR = '\u001e';

/** The hub messages of one raw frame, decoded: JSON records, or MessagePack messages as their arrays. */
export function rawMessages(protocol: RawProtocol, frame: RawFrame): unknown[] {
  if (protocol === 'json') return frame.data.toString('utf8').split(RECORD_SEPARATOR).filter(Boolean).map((s) => JSON.parse(s));
  return splitBinaryMessages(frame.data, 1 << 30).messages.map((m) => decodeMessagePack(m));
}

/** An Echo(1) invocation with the id `e`, written in `protocol`. */
export function echoInvocation(protocol: RawProtocol): string | Uint8Array {
  return protocol === 'json'
    ? `{"type":1,"invocationId":"e","target":"Echo","arguments":[1]}${RECORD_SEPARATOR}`
    : writeBinaryMessage(encodeMessagePack([1, {}, 'e', 'Echo', [1], []]));
}

/**
 * On a new connection, sends `bad` (one frame, as it is) and then an Echo invocation with the id `e`;
 * returns every message the hub sent back until its Close, the Echo's completion, or the socket's end.
 * So a closing case reads [Close] and a case the hub reads and ignores reads [the Echo's completion].
 */
export async function answersTo(hub: TestHub, protocol: RawProtocol, bad: string | Uint8Array): Promise<unknown[]> {
  const c = await RawClient.connect(hub.url);
  await c.handshake(protocol);
  c.send(bad, protocol === 'messagepack');
  c.send(echoInvocation(protocol), protocol === 'messagepack');
  const messages: unknown[] = [];
  for (;;) {
    let frame: RawFrame;
    try {
      frame = await c.next();
    } catch {
      break;
    }
    messages.push(...rawMessages(protocol, frame));
    const last = messages.at(-1) as { type?: number; invocationId?: string } | unknown[];
    const [type, id] = Array.isArray(last) ? [last[0], last[2]] : [last.type, last.invocationId];
    if (type === 7 || (type === 3 && id === 'e')) break;
  }
  c.ws.close();
  await withTimeout(c.closed, 3000, 'socket close');
  return messages;
}

/** `text` as one JSON record: followed by the record separator. */
export const jsonRecord = (text: string): string => `${text}${RECORD_SEPARATOR}`;

/** The upgrade's status and its `WWW-Authenticate` challenge (RFC 9110 section 15.5.2: every 401 has one). */
export function upgradeChallenge(url: string, headers: Record<string, string> = {}): Promise<{ status: number; challenge: string | undefined }> {
  return withTimeout(
    new Promise((resolve, reject) => {
      const ws = new WebSocket(url, { headers });
      ws.once('open', () => {
        ws.close();
        resolve({ status: 101, challenge: undefined });
      });
      ws.once('unexpected-response', (_req, res) => {
        res.resume();
        resolve({ status: res.statusCode ?? 0, challenge: res.headers['www-authenticate'] });
      });
      ws.once('error', reject);
    }),
    5000,
    'upgrade',
  );
}

/** The upgrade's status and body when it is refused; 101 and '' when it is accepted. */
export function upgrade(url: string): Promise<{ status: number; body: string }> {
  return withTimeout(
    new Promise((resolve, reject) => {
      const ws = new WebSocket(url);
      ws.once('open', () => {
        ws.close();
        resolve({ status: 101, body: '' });
      });
      ws.once('unexpected-response', (_req, res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString() }));
      });
      ws.once('error', reject);
    }),
    5000,
    'upgrade',
  );
}
