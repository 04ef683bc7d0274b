// One simulated device of `voice-hub simulate`: register, start a session, join it on the hub with the
// official SignalR client, stream Opus at real time, count what comes back (sim-tally.ts says how), stop,
// delete. Like a device on Wi-Fi it survives dropped connections: the client reconnects on its own
// (withAutomaticReconnect, and withStatefulReconnect when asked) and joins its session again in
// `onreconnected`; while it is not in its session it holds its packets back.
import type { HubConnection } from '@microsoft/signalr';
import { errorText } from '../errors.js';
import { readAtMost, tooLargeText } from './bounded-answer.js';
import { deadline } from './deadline.js';
import { redirectNote, toolRequest, type Endpoint } from './http-request.js';
import { buildSimConnection, type SimProtocol } from './sim-client.js';
import { SIM_PACKET_CHANNELS, SIM_PACKET_SAMPLE_RATE } from './sim-packets.js';
import { SimTally } from './sim-tally.js';
import { isUntrustedCertificate, untrustedCertificateHint } from './untrusted-certificate.js';
import { monotonicMs } from '../monotonic-clock.js';

export interface SimApi {
  readonly baseUrl: string;
  readonly apiKey?: string;
  readonly timeoutMs: number;
  /**
   * Connect to the hub here (the drop relay) instead of where the start response's URL points, which is
   * kept for the rest (Host header, the TLS certificate's name).
   */
  readonly hubVia?: Endpoint;
}

export interface SimDeviceOptions {
  protocol: SimProtocol;
  /** Ask for SignalR stateful reconnect (withStatefulReconnect). */
  statefulReconnect: boolean;
  /** A packet or response later than this (ms after the send) counts as late. */
  lateMs: number;
  /** The packets the device cycles through (their bytes identify responses). */
  packets: readonly Uint8Array[];
  log: (line: string) => void;
}

/** A request the service answered with a status other than 2xx. */
export class ApiRefusal extends Error {
  constructor(readonly status: number, message: string) {
    super(message);
  }
}

/** A 2xx answer: its JSON (undefined when it is none), and the request and status to name in a problem. */
export interface ApiAnswer {
  readonly json: unknown;
  readonly text: string;
  readonly what: string;
}

type FieldTypes = Readonly<Record<string, 'string' | 'number'>>;
type Fields<F extends FieldTypes> = { [K in keyof F]: F[K] extends 'string' ? string : number };

/**
 * The fields the simulator reads from an answer, each of the type voice-hub gives it. Whatever else
 * answers at --url with a 2xx (another program, a proxy's page) fails the device naming what was
 * missing and what came, instead of a TypeError deeper in.
 */
export function fieldsOf<const F extends FieldTypes>(answer: ApiAnswer, fields: F): Fields<F> {
  const json = answer.json;
  const object = typeof json === 'object' && json !== null && !Array.isArray(json) ? (json as Record<string, unknown>) : {};
  for (const [name, type] of Object.entries(fields)) {
    const value = object[name];
    const fits = type === 'string' ? typeof value === 'string' && value !== '' : typeof value === 'number' && Number.isFinite(value);
    if (!fits) throw new Error(`${answer.what} without ${name} (a ${type}): not an answer of voice-hub: ${answer.text.slice(0, 200)}`);
  }
  return object as Fields<F>;
}

/**
 * Errors of the connection's set-up, which come before a byte of the request is written: the name not
 * found, the address refused or unreachable, the connect timed out, the TLS handshake failed (wrong
 * protocol or a certificate not trusted). A register that failed so registered nothing, and the report
 * must not send the technician to delete devices that do not exist.
 */
const SET_UP_FAILURES = new Set([
  'ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EAI_FAIL', 'EHOSTUNREACH', 'ENETUNREACH', 'EADDRNOTAVAIL',
  'UND_ERR_CONNECT_TIMEOUT', 'EPROTO', 'ERR_SSL_WRONG_VERSION_NUMBER', 'ERR_TLS_CERT_ALTNAME_INVALID', 'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
]);

function beforeTheRequest(cause: Error | undefined): boolean {
  const code = (cause as NodeJS.ErrnoException | undefined)?.code;
  return (typeof code === 'string' && SET_UP_FAILURES.has(code)) || isUntrustedCertificate(cause);
}

/**
 * One JSON request; throws ApiRefusal with the status and the problem's detail when it is not 2xx.
 * `stop` ends it early (an interrupted run, the end of the clean-up time).
 */
export async function apiRequest(api: SimApi, method: string, path: string, body?: unknown, token?: string, stop?: AbortSignal): Promise<ApiAnswer> {
  const headers: Record<string, string> = {};
  if (body !== undefined) headers['content-type'] = 'application/json';
  if (token) headers.authorization = `Bearer ${token}`;
  if (api.apiKey) headers['x-api-key'] = api.apiKey;
  // Relative to the base, whose path ends in '/': behind a reverse proxy at /hub/ the API is /hub/api/...
  const url = new URL(path.replace(/^\/+/, ''), api.baseUrl);
  // A failed request says only that it failed; the reason (ECONNREFUSED, a timeout) is in its cause.
  const failed = (e: unknown) => {
    const cause = e instanceof Error && e.cause instanceof Error ? e.cause : undefined;
    const error: Error & { notSent?: boolean } = new Error(`${method} ${url.href}: ${cause ? cause.message : errorText(e)}${untrustedCertificateHint(cause)}`);
    // Failed before the request was written: nothing it asked for happened.
    if (beforeTheRequest(cause)) error.notSent = true;
    return error;
  };
  const cut = new AbortController(); // by readAtMost, past its bound
  const limit = deadline(api.timeoutMs, stop, cut.signal);
  let res: Response;
  let answer: Awaited<ReturnType<typeof readAtMost>>;
  try {
    try {
      res = await toolRequest(url, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), signal: limit.signal });
    } catch (e) {
      throw failed(e);
    }
    answer = await readAtMost(res, cut);
  } finally {
    limit.clear();
  }
  if ('failed' in answer) throw failed(answer.failed);
  if ('tooLarge' in answer) throw new Error(tooLargeText(`${method} ${url.href}: HTTP ${res.status}`));
  const text = answer.bytes.toString('utf8');
  let json: { detail?: unknown; title?: unknown } | undefined;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    json = undefined;
  }
  const what = `${method} ${path}: HTTP ${res.status}`;
  if (!res.ok) throw new ApiRefusal(res.status, `${what}${redirectNote(res, url)} ${json?.detail ?? json?.title ?? text.slice(0, 200)}`.trim());
  return { json, text, what };
}

/** Rejects after `ms`, or once `stop` aborts, so no step of the simulation can hang. */
export function within<T>(promise: Promise<T>, ms: number, what: string, stop?: AbortSignal): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  let onStop: (() => void) | undefined;
  return Promise.race([
    promise,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms} ms`)), ms);
      if (!stop) return;
      onStop = () => reject(new Error(`${what}: stopped`));
      if (stop.aborted) onStop();
      else stop.addEventListener('abort', onStop, { once: true });
    }),
  ]).finally(() => {
    clearTimeout(timer);
    if (onStop) stop?.removeEventListener('abort', onStop);
  });
}

/** What deleting a simulated device came to. */
export type Deletion = { outcome: 'deleted' | 'absent' } | { outcome: 'failed'; reason: string };

export class SimDevice {
  readonly tally: SimTally;
  /** Distinct Error texts and how often each came. */
  readonly errorTexts = new Map<string, number>();
  /** `audioPacketsSent` of the final session record, as the service counted. */
  serverPackets: number | undefined;
  /** AudioResponse events (each comes with the AudioData the tally matches). */
  audioResponses = 0;
  reconnects = 0;
  /** The service registered the device. */
  registered = false;
  /**
   * The register request went out and its answer did not come (a timeout, an interrupted run): the
   * device may exist, so the clean-up deletes it too (a 404 then means it does not).
   */
  registering = false;
  failure: string | undefined;
  private token = '';
  private sessionId: string | undefined;
  private connection: HubConnection | undefined;
  private stopping = false;
  /** Joined on the current connection: packets due meanwhile are sent, otherwise held back. */
  private inSession = false;
  private pendingJoin: { resolve: () => void; reject: (e: Error) => void } | undefined;
  private readonly payloads: readonly (string | Uint8Array)[];
  /** Base64 of each packet -> its index, to recognise the echo's answers. */
  private readonly contentIndex: Map<string, number>;

  constructor(
    readonly deviceId: string,
    private readonly api: SimApi,
    private readonly options: SimDeviceOptions,
  ) {
    const b64 = options.packets.map((p) => Buffer.from(p).toString('base64'));
    this.payloads = options.protocol === 'json' ? b64 : options.packets;
    this.contentIndex = new Map(b64.map((text, i) => [text, i]));
    this.tally = new SimTally(options.lateMs, options.packets.length);
  }

  /** Everything sent has been answered (or refused). */
  get settled(): boolean {
    return this.tally.settled;
  }

  /**
   * Register, start a session, connect and join. Throws (and records `failure`) when a step fails;
   * `stop` (an interrupted run) ends whatever step is under way.
   */
  async setUp(stop?: AbortSignal): Promise<void> {
    try {
      this.registering = true;
      let reg;
      try {
        reg = await apiRequest(this.api, 'POST', '/api/device/register', {
          deviceId: this.deviceId, deviceName: `Simulated ${this.deviceId}`, deviceType: 'simulator', capabilities: ['audio'], location: 'simulation',
        }, undefined, stop);
        this.registered = true;
        this.registering = false;
      } catch (e) {
        if (e instanceof ApiRefusal || (e as { notSent?: boolean }).notSent) this.registering = false;
        throw e;
      }
      this.token = fieldsOf(reg, { deviceToken: 'string' }).deviceToken;
      const answer = await apiRequest(this.api, 'POST', '/api/voice/start', {
        deviceId: this.deviceId, userId: 'simulator',
        sessionConfig: { audioFormat: 'opus', sampleRate: SIM_PACKET_SAMPLE_RATE, channels: SIM_PACKET_CHANNELS, autoMode: false },
      }, this.token, stop);
      // Kept before the rest is read: a session that started is stopped by the clean-up whatever follows.
      const { sessionId } = fieldsOf(answer, { sessionId: 'string' });
      this.sessionId = sessionId;
      const { websocketUrl } = fieldsOf(answer, { websocketUrl: 'string' });
      const connection = buildSimConnection(websocketUrl, {
        ...(this.api.hubVia ? { via: this.api.hubVia } : {}),
        protocol: this.options.protocol,
        accessToken: this.token,
        log: this.options.log,
        reconnect: true,
        statefulReconnect: this.options.statefulReconnect,
      });
      this.connection = connection;
      this.listen(connection);
      await within(connection.start(), this.api.timeoutMs, `${this.deviceId}: hub connection`, stop);
      await this.join(connection, sessionId, stop);
    } catch (e) {
      // An interrupted set-up is no failure of the device or the service.
      if (!stop?.aborted) this.failure = errorText(e);
      throw e;
    }
  }

  /**
   * One packet per SIM_PACKET_MS from `t0` (monotonicMs() time), drift-free, `total` in all, or
   * until `stop` aborts: then what was due so far is what the run counts.
   */
  stream(total: number, t0: number, packetMs: number, stop?: AbortSignal): Promise<void> {
    const connection = this.connection;
    const sessionId = this.sessionId;
    if (!connection || !sessionId) return Promise.resolve();
    const cycle = this.payloads.length;
    let next = 0;
    return new Promise((resolve) => {
      const tick = (): void => {
        if (stop?.aborted) return resolve();
        // A late timer sends what is due, so every run has exactly `total` packets due.
        const due = Math.min(total, Math.floor((monotonicMs() - t0) / packetMs) + 1);
        while (next < due && !this.failure) {
          if (this.inSession) {
            this.tally.send(next % cycle, monotonicMs());
            // A send into a connection that just dropped rejects; the tally counts that packet as lost.
            connection.send('SendAudioData', sessionId, this.payloads[next % cycle]!).catch(() => undefined);
          } else {
            this.tally.heldBack();
          }
          next++;
        }
        if (next >= total || this.failure) return resolve();
        setTimeout(tick, Math.max(0, t0 + next * packetMs - monotonicMs()));
      };
      setTimeout(tick, Math.max(0, t0 - monotonicMs()));
    });
  }

  /**
   * Stops the session (keeping the service's packet count) and the connection. Never throws; `deadline`
   * cuts it short.
   */
  async stop(deadline?: AbortSignal): Promise<void> {
    this.stopping = true;
    if (this.sessionId) {
      try {
        const record = await apiRequest(this.api, 'POST', '/api/voice/stop', { sessionId: this.sessionId }, this.token, deadline);
        this.serverPackets = fieldsOf(record, { audioPacketsSent: 'number' }).audioPacketsSent;
      } catch (e) {
        this.options.log(`warn: ${this.deviceId}: stopping session ${this.sessionId}: ${errorText(e)}`);
      }
    }
    await within(this.connection?.stop() ?? Promise.resolve(), this.api.timeoutMs, 'hub stop', deadline).catch(() => undefined);
  }

  /**
   * Deletes the device (admin token). Not found is `absent` (a registration whose answer never came made
   * none): nothing is left, and nothing was deleted either. A failure says why, for the report.
   */
  async delete(adminToken: string, deadline?: AbortSignal): Promise<Deletion> {
    try {
      await apiRequest(this.api, 'DELETE', `/api/device/${encodeURIComponent(this.deviceId)}`, undefined, adminToken, deadline);
      return { outcome: 'deleted' };
    } catch (e) {
      if (e instanceof ApiRefusal && e.status === 404) return { outcome: 'absent' };
      this.options.log(`warn: ${this.deviceId}: delete: ${errorText(e)}`);
      // Without the request, which names this device: one reason for many devices reads as one line.
      return { outcome: 'failed', reason: errorText(e).replace(/^DELETE \S+: /, '') };
    }
  }

  /** JoinSession on the current connection; resolves on SessionJoined, rejects on Error, timeout or `stop`. */
  private async join(connection: HubConnection, sessionId: string, stop?: AbortSignal): Promise<void> {
    const joined = new Promise<void>((resolve, reject) => { this.pendingJoin = { resolve, reject }; });
    try {
      await within(Promise.all([joined, connection.invoke('JoinSession', sessionId, this.token)]), this.api.timeoutMs, `${this.deviceId}: JoinSession`, stop);
      this.inSession = true;
    } finally {
      this.pendingJoin = undefined;
    }
  }

  private listen(connection: HubConnection): void {
    connection.on('SessionJoined', (id: string) => {
      if (id === this.sessionId) this.pendingJoin?.resolve();
    });
    connection.on('Error', (message: string) => {
      if (this.pendingJoin) this.pendingJoin.reject(new Error(`JoinSession refused: ${message}`));
      else this.onError(message);
    });
    connection.on('AudioProcessed', (p: { sequence?: number }) => this.tally.processed(Number(p?.sequence), monotonicMs()));
    connection.on('AudioResponse', () => { this.audioResponses++; });
    // The upstream's answer as it sent it: the echo's copy of one of our packets.
    connection.on('AudioData', (d: { data?: string }) => this.tally.response(this.contentIndex.get(String(d?.data)) ?? -1, monotonicMs()));
    connection.on('TextResponse', () => undefined);
    connection.on('SessionEnded', (e: { reason?: string }) => {
      if (!this.stopping && !this.failure) this.failure = `session ended: ${e?.reason ?? '?'}`;
    });
    // A plain reconnect is a new connection: nothing sent on the old one will be answered on it, and it
    // must join the session again. (A stateful reconnect is invisible here: the client keeps its state.)
    connection.onreconnecting(() => {
      this.inSession = false;
      this.reconnects++;
      this.tally.connectionLost();
    });
    connection.onreconnected(() => {
      if (this.stopping || !this.sessionId) return;
      this.join(connection, this.sessionId).catch((e: unknown) => {
        this.failure ??= `rejoining after a reconnect: ${errorText(e)}`;
      });
    });
    connection.onclose((error) => {
      this.inSession = false;
      if (!this.stopping && !this.failure) this.failure = `hub connection closed${error ? `: ${error.message}` : ''} (reconnecting gave up)`;
    });
  }

  private onError(message: string): void {
    this.errorTexts.set(message, (this.errorTexts.get(message) ?? 0) + 1);
    this.tally.refused(); // a refused send gets no AudioProcessed and no response
  }
}

