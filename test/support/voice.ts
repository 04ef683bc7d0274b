// End-to-end voice rigs: the built-in echo voice server on port 0 with the whole service pointed at it,
// official SignalR clients connected to the service's hub, and bounded waiting for hub events.
import {
  HttpTransportType, HubConnectionBuilder, LogLevel, type HubConnection,
} from '@microsoft/signalr';
import { MessagePackHubProtocol } from '@microsoft/signalr-protocol-msgpack';
import { after } from 'node:test';
import { silentLogger } from '../../src/log/logger.js';
import { startEchoServer, type EchoServer } from '../../src/upstream/echo-server.js';
import { call } from './http.js';
import { startService, type ServiceOptions, type TestService } from './service.js';
import { withTimeout } from './wait.js';

const cleanups: Array<() => Promise<unknown>> = [];
after(async () => {
  for (const fn of cleanups.reverse()) await fn().catch(() => undefined);
});

/** An echo voice server on 127.0.0.1 (port 0 unless given: a restart reuses the old port). */
export async function startEcho(port = 0): Promise<EchoServer> {
  const echo = await startEchoServer({ host: '127.0.0.1', port, logger: silentLogger });
  cleanups.push(() => echo.close());
  return echo;
}

export interface VoiceRig {
  readonly echo: EchoServer;
  readonly svc: TestService;
}

/**
 * An echo server and the whole service (in-process, port 0, no MQTT) with VoiceService.ServerUrl on it;
 * MaxDevices 100 since every test registers its own devices.
 */
export async function startVoiceRig(opts: ServiceOptions = {}): Promise<VoiceRig> {
  const echo = await startEcho();
  const svc = await startService({
    ...opts,
    flags: {
      'VoiceService.ServerUrl': `ws://127.0.0.1:${echo.port}/voice`,
      'Mqtt.BrokerAddress': '',
      'DeviceManagement.MaxDevices': 100,
      ...opts.flags,
    },
  });
  return { echo, svc };
}

export interface StartedSession {
  readonly sessionId: string;
  readonly websocketUrl: string;
}

/** POST /api/voice/start with the device's token; throws unless 200. */
export async function startSession(svc: TestService, deviceId: string, token: string, sessionConfig?: Record<string, unknown>): Promise<StartedSession> {
  const res = await call(svc.url, 'POST', '/api/voice/start', {
    body: { deviceId, userId: 'user-1', ...(sessionConfig ? { sessionConfig } : {}) },
    token,
  });
  if (res.status !== 200) throw new Error(`start for ${deviceId}: ${res.status} ${res.text}`);
  return { sessionId: res.json.sessionId, websocketUrl: res.json.websocketUrl };
}

export interface HubClientOptions {
  protocol?: 'json' | 'messagepack';
  skipNegotiation?: boolean;
  accessToken?: string;
}

export const HUB_VARIANTS: readonly Required<Pick<HubClientOptions, 'protocol' | 'skipNegotiation'>>[] = [
  { protocol: 'json', skipNegotiation: false },
  { protocol: 'json', skipNegotiation: true },
  { protocol: 'messagepack', skipNegotiation: false },
  { protocol: 'messagepack', skipNegotiation: true },
];

export const variantName = (v: HubClientOptions): string =>
  `${v.protocol ?? 'json'}, ${v.skipNegotiation ? 'skipNegotiation' : 'negotiated'}`;

/** The `http(s)://` form of a hub address (the start response gives `ws(s)://`). */
export const hubHttpUrl = (url: string): string => url.replace(/^ws(s?):\/\//, 'http$1://');

/** An official @microsoft/signalr client of the service's hub, started; stopped when the file ends. */
export async function connectHub(svc: TestService, opts: HubClientOptions = {}): Promise<HubConnection> {
  let builder = new HubConnectionBuilder()
    .withUrl(`${svc.url}/voice-hub`, {
      ...(opts.skipNegotiation ? { skipNegotiation: true, transport: HttpTransportType.WebSockets } : {}),
      ...(opts.accessToken ? { accessTokenFactory: () => opts.accessToken! } : {}),
    })
    .configureLogging(LogLevel.None);
  if (opts.protocol === 'messagepack') builder = builder.withHubProtocol(new MessagePackHubProtocol());
  const connection = builder.build();
  cleanups.push(() => connection.stop());
  await withTimeout(connection.start(), 5000, 'hub client start');
  return connection;
}

/**
 * Records every event of the given names on a connection, in arrival order, so a test can wait for the
 * n-th one and also prove that something did not arrive.
 */
export class HubEvents {
  readonly events: { name: string; args: unknown[] }[] = [];
  private waiters: (() => void)[] = [];
  closedError: Error | undefined;
  closed = false;

  constructor(readonly connection: HubConnection, names: readonly string[] = EVENT_NAMES) {
    for (const name of names) {
      connection.on(name, (...args: unknown[]) => {
        this.events.push({ name, args });
        this.wake();
      });
    }
    connection.onclose((error) => {
      this.closed = true;
      this.closedError = error;
      this.wake();
    });
  }

  /** First arguments of every `name` event so far. */
  of(name: string): unknown[] {
    return this.events.filter((e) => e.name === name).map((e) => e.args[0]);
  }

  /** Resolves with the first arguments of the first `count` `name` events; rejects after `ms`. */
  async waitFor(name: string, count = 1, ms = 5000): Promise<unknown[]> {
    const deadline = Date.now() + ms;
    for (;;) {
      const found = this.of(name);
      if (found.length >= count) return found.slice(0, count);
      const left = deadline - Date.now();
      if (left <= 0) {
        const seen = [...new Set(this.events.map((e) => e.name))].join(', ') || 'none';
        throw new Error(`timed out after ${ms} ms waiting for ${count} ${name} event(s) (have ${found.length}; seen: ${seen})`);
      }
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.waiters.push(() => { clearTimeout(timer); resolve(); });
      });
    }
  }

  /** Resolves once the connection has closed, with its error; rejects after `ms`. */
  async waitClosed(ms = 5000): Promise<Error | undefined> {
    const deadline = Date.now() + ms;
    while (!this.closed) {
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`connection did not close within ${ms} ms`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.waiters.push(() => { clearTimeout(timer); resolve(); });
      });
    }
    return this.closedError;
  }

  private wake(): void {
    for (const w of this.waiters.splice(0)) w();
  }
}

/** Every event the voice hub sends (docs/protocol.md, "Hub methods and events"). */
export const EVENT_NAMES = ['SessionJoined', 'Error', 'AudioProcessed', 'AudioResponse', 'AudioData', 'TextResponse', 'SessionEnded'] as const;

/** A connected client with its event log, joined to a session (waits for SessionJoined). */
export async function joinedClient(svc: TestService, sessionId: string, token: string, opts: HubClientOptions = {}): Promise<{ connection: HubConnection; events: HubEvents }> {
  const connection = await connectHub(svc, opts);
  const events = new HubEvents(connection);
  await withTimeout(connection.invoke('JoinSession', sessionId, token), 5000, 'JoinSession');
  const [joined] = await events.waitFor('SessionJoined');
  if (joined !== sessionId) throw new Error(`SessionJoined(${String(joined)}), expected ${sessionId}`);
  return { connection, events };
}

/** The audio argument as each protocol carries it: Base64 text (JSON) or bytes (MessagePack). */
export function audioArg(packet: Uint8Array, protocol: 'json' | 'messagepack' = 'json'): string | Uint8Array {
  return protocol === 'json' ? Buffer.from(packet).toString('base64') : packet;
}
