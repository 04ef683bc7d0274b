// One simulated device of `voice-hub simulate`: register, start a session, join it on the hub with the
// official SignalR client, stream Opus at real time, count what comes back, stop, delete.
//
// Round trip = SendAudioData sent (fire-and-forget `send`, as a device streams) -> the AudioResponse it
// caused. Events carry no packet id, but one connection is ordered end to end: each send yields exactly one
// AudioProcessed (forwarded upstream) or Error (refused), in order, and the echo server answers forwarded
// packets in order, so sends are matched first-in first-out.
import type { HubConnection } from '@microsoft/signalr';
import { errorText } from '../errors.js';
import { buildSimConnection, type SimProtocol } from './sim-client.js';
import { SIM_PACKET_CHANNELS, SIM_PACKET_MS, SIM_PACKET_SAMPLE_RATE } from './sim-packets.js';

export interface SimApi {
  readonly baseUrl: string;
  readonly apiKey?: string;
  readonly timeoutMs: number;
}

/** One JSON request; throws with the status and the problem's detail when it is not 2xx. */
export async function apiRequest(api: SimApi, method: string, path: string, body?: unknown, token?: string): Promise<any> { // eslint-disable-line @typescript-eslint/no-explicit-any
  const headers: Record<string, string> = {};
  if (body !== undefined) headers['content-type'] = 'application/json';
  if (token) headers.authorization = `Bearer ${token}`;
  if (api.apiKey) headers['x-api-key'] = api.apiKey;
  const url = new URL(path, api.baseUrl);
  let res: Response;
  try {
    res = await fetch(url, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), signal: AbortSignal.timeout(api.timeoutMs) });
  } catch (e) {
    // fetch says only "fetch failed"; the reason (ECONNREFUSED, a timeout) is in its cause.
    const cause = e instanceof Error && e.cause instanceof Error ? e.cause.message : errorText(e);
    throw new Error(`${method} ${url.href}: ${cause}`);
  }
  const text = await res.text();
  let json: any; // eslint-disable-line @typescript-eslint/no-explicit-any
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    json = undefined;
  }
  if (!res.ok) throw new Error(`${method} ${path}: HTTP ${res.status} ${json?.detail ?? json?.title ?? text.slice(0, 200)}`.trim());
  return json;
}

/** Rejects after `ms` so no step of the simulation can hang. */
export function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    promise,
    new Promise<never>((_, reject) => { timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms} ms`)), ms); }),
  ]).finally(() => clearTimeout(timer));
}

export interface DeviceCounts {
  sent: number;
  processed: number;
  responses: number;
  errors: number;
  /** Round trips in ms, send -> AudioResponse. */
  latenciesMs: number[];
  /** `audioPacketsSent` of the final session record, as the service counted. */
  serverPackets: number | undefined;
}

export class SimDevice {
  readonly counts: DeviceCounts = { sent: 0, processed: 0, responses: 0, errors: 0, latenciesMs: [], serverPackets: undefined };
  /** Distinct Error texts and how often each came. */
  readonly errorTexts = new Map<string, number>();
  registered = false;
  failure: string | undefined;
  private token = '';
  private sessionId: string | undefined;
  private connection: HubConnection | undefined;
  private stopping = false;
  /** Send times waiting for their AudioProcessed or Error, then for their AudioResponse. */
  private readonly awaitingProcessed: number[] = [];
  private readonly awaitingResponse: number[] = [];

  constructor(
    readonly deviceId: string,
    private readonly api: SimApi,
    private readonly protocol: SimProtocol,
    private readonly log: (line: string) => void,
  ) {}

  /** Everything sent has been answered (or refused). */
  get settled(): boolean {
    return this.awaitingProcessed.length === 0 && this.awaitingResponse.length === 0;
  }

  /** Register, start a session, connect and join. Throws (and records `failure`) when a step fails. */
  async setUp(): Promise<void> {
    try {
      const reg = await apiRequest(this.api, 'POST', '/api/device/register', {
        deviceId: this.deviceId, deviceName: `Simulated ${this.deviceId}`, deviceType: 'simulator', capabilities: ['audio'], location: 'simulation',
      });
      this.registered = true;
      this.token = reg.deviceToken as string;
      const started = await apiRequest(this.api, 'POST', '/api/voice/start', {
        deviceId: this.deviceId, userId: 'simulator',
        sessionConfig: { audioFormat: 'opus', sampleRate: SIM_PACKET_SAMPLE_RATE, channels: SIM_PACKET_CHANNELS, autoMode: false },
      }, this.token);
      const sessionId = started.sessionId as string;
      this.sessionId = sessionId;
      const connection = buildSimConnection(started.websocketUrl as string, { protocol: this.protocol, accessToken: this.token, log: this.log });
      this.connection = connection;
      this.listen(connection);
      await within(connection.start(), this.api.timeoutMs, `${this.deviceId}: hub connection`);
      const joined = new Promise<void>((resolve, reject) => {
        connection.on('SessionJoined', (id: string) => { if (id === sessionId) resolve(); });
        connection.on('Error', (message: string) => reject(new Error(`JoinSession refused: ${message}`)));
      });
      await within(Promise.all([joined, connection.invoke('JoinSession', sessionId, this.token)]), this.api.timeoutMs, `${this.deviceId}: JoinSession`);
      connection.off('Error');
      connection.on('Error', (message: string) => this.onError(message));
    } catch (e) {
      this.failure = errorText(e);
      throw e;
    }
  }

  /** Sends `total` packets, one every SIM_PACKET_MS from `t0` (performance.now() time), drift-free. */
  stream(packets: readonly Uint8Array[], total: number, t0: number): Promise<void> {
    const connection = this.connection;
    const sessionId = this.sessionId;
    if (!connection || !sessionId) return Promise.resolve();
    const payloads = packets.map((p) => (this.protocol === 'json' ? Buffer.from(p).toString('base64') : p));
    let next = 0;
    return new Promise((resolve) => {
      const tick = (): void => {
        // A late timer sends what is due, so every run sends exactly `total` packets.
        const due = Math.min(total, Math.floor((performance.now() - t0) / SIM_PACKET_MS) + 1);
        while (next < due && !this.failure) {
          this.awaitingProcessed.push(performance.now());
          this.counts.sent++;
          connection.send('SendAudioData', sessionId, payloads[next % payloads.length]!).catch((e: unknown) => {
            this.failure ??= `send failed: ${errorText(e)}`;
          });
          next++;
        }
        if (next >= total || this.failure) return resolve();
        setTimeout(tick, Math.max(0, t0 + next * SIM_PACKET_MS - performance.now()));
      };
      setTimeout(tick, Math.max(0, t0 - performance.now()));
    });
  }

  /** Stops the session (keeping the service's packet count) and the connection. Never throws. */
  async stop(): Promise<void> {
    this.stopping = true;
    if (this.sessionId) {
      try {
        const record = await apiRequest(this.api, 'POST', '/api/voice/stop', { sessionId: this.sessionId }, this.token);
        this.counts.serverPackets = record.audioPacketsSent as number;
      } catch (e) {
        this.log(`warn: ${this.deviceId}: stopping session ${this.sessionId}: ${errorText(e)}`);
      }
    }
    await within(this.connection?.stop() ?? Promise.resolve(), this.api.timeoutMs, 'hub stop').catch(() => undefined);
  }

  /** Deletes the device (admin token); false when that failed. */
  async delete(adminToken: string): Promise<boolean> {
    try {
      await apiRequest(this.api, 'DELETE', `/api/device/${encodeURIComponent(this.deviceId)}`, undefined, adminToken);
      return true;
    } catch (e) {
      this.log(`warn: ${this.deviceId}: delete: ${errorText(e)}`);
      return false;
    }
  }

  private listen(connection: HubConnection): void {
    connection.on('AudioProcessed', () => {
      this.counts.processed++;
      const sentAt = this.awaitingProcessed.shift();
      if (sentAt !== undefined) this.awaitingResponse.push(sentAt);
    });
    connection.on('AudioResponse', () => {
      const now = performance.now();
      this.counts.responses++;
      const sentAt = this.awaitingResponse.shift();
      if (sentAt !== undefined) this.counts.latenciesMs.push(now - sentAt);
    });
    // Also sent per answered packet (the upstream's Opus as received); handled so the client does not warn.
    connection.on('AudioData', () => undefined);
    connection.on('TextResponse', () => undefined);
    connection.on('SessionEnded', (e: { reason?: string }) => {
      if (!this.stopping && !this.failure) this.failure = `session ended: ${e?.reason ?? '?'}`;
    });
    connection.onclose((error) => {
      if (error && !this.stopping && !this.failure) this.failure = `hub connection closed: ${error.message}`;
    });
  }

  private onError(message: string): void {
    this.counts.errors++;
    this.errorTexts.set(message, (this.errorTexts.get(message) ?? 0) + 1);
    // A refused send: it will get no AudioProcessed and no AudioResponse.
    this.awaitingProcessed.shift();
  }
}
