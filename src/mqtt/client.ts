// The one file that imports mqtt.js: a broker connection with a last will, reconnect with growing
// back-off, and error texts a technician can read. Everything above it sees BrokerConnection only.
import type { MqttClient } from 'mqtt';
import { LimitedConnection } from './limited-connection.js';
import { brokerListening } from './listening.js';
import { closedSoonText, reasonOf, stoppedListeningText, takenOverText } from './connection-reasons.js';
import { MAX_INCOMING_PACKET_BYTES, SUBSCRIPTION_QOS, type SkippedMessage } from './packet-limit.js';
import type { OutgoingMessage } from './queue.js';
import { connectionErrorText } from '../errors.js';
import { monotonicMs } from '../monotonic-clock.js';

/**
 * mqtt.js' client class is loaded when the first connection starts: a service with MQTT switched off
 * never evaluates it. The class alone: the package's entry also loads every transport mqtt.js can open
 * (a second copy of ws, a SOCKS proxy client; 190 KB of the 400 KB part), while we hand it our own socket
 * (limited-connection.ts).
 */
let mqttModule: Promise<typeof MqttClient> | undefined;
const loadMqtt = (): Promise<typeof MqttClient> => (mqttModule ??= import('mqtt/lib/client').then(clientClass));

/**
 * The module is CommonJS compiled from TypeScript: `exports.default = MqttClient` beside `__esModule`.
 * Node's loader and the bundle hand over the exports object as the import's `default`; tsx, which runs
 * the tests, unwraps such a module one level further.
 */
function clientClass(m: { default: unknown }): typeof MqttClient {
  const exported = m.default;
  const found = typeof exported === 'function' ? exported : (exported as { default?: unknown } | null)?.default;
  if (typeof found !== 'function') throw new Error('mqtt.js has no client class at mqtt/lib/client');
  return found as typeof MqttClient;
}

export interface ConnectionOptions {
  host: string;
  port: number;
  /** Empty: connect without credentials. */
  username: string;
  password: string;
  clientId: string;
  /** Sent by the broker when we vanish without a DISCONNECT (crash, power loss, network cut). */
  will: OutgoingMessage;
  keepaliveSeconds: number;
  /**
   * First reconnect delay; doubles per failed attempt up to `reconnectMaxMs`, back to the first once a
   * connection has lasted SHORT_LIVED_MS.
   */
  reconnectMinMs: number;
  reconnectMaxMs: number;
  connectTimeoutMs: number;
}

export interface ConnectionEvents {
  /** Every successful (re)connect, after CONNACK. */
  connected(): void;
  /** The connection dropped or an attempt failed; `error` is a readable reason when there is one. */
  disconnected(error: string | undefined): void;
  /** `retained`: sent from the broker's store on subscribing, not published since. Payloads stay bytes. */
  message(topic: string, payload: Buffer, retained: boolean): void;
  /** A message over MAX_INCOMING_PACKET_BYTES was skipped unread (packet-limit.ts). */
  skipped(message: SkippedMessage): void;
  /** The broker answered a subscription with a failure code (an ACL that denies this client the topic). */
  subscriptionRefused(topic: string, reason: string): void;
}

/**
 * A connection the broker closes this soon after accepting it, with no error of ours, counts as a failed
 * attempt (the back-off keeps growing). Two in a row while the broker kept listening are reported as a
 * likely takeover: an MQTT broker closes a connection when another one presents the same client id, and
 * two hubs sharing one id (a second hub started from a copy of the data directory, whose instance-id names
 * the client) took the connection from each other every second, each time sending all their state again
 * (60 messages a second here). A broker restarting closes connections the same way (MQTT 3.1.1 gives no
 * reason for a close), but refuses new ones as it does (listening.ts): counting those closes too sent
 * operators after a second hub that did not exist whenever the broker restarted twice within 5 s.
 */
const SHORT_LIVED_MS = 5000;

/**
 * How long the check whether the broker still listens may take, at most; also never more than half the
 * reconnect delay, so its verdict comes before the next connection does.
 */
const LISTENING_CHECK_MS = 1000;

export class BrokerConnection {
  private client: MqttClient | undefined;
  private failedAttempts = 0;
  /** When the current connection was accepted (CONNACK), while it lasts. */
  private connectedAt: number | undefined;
  /** Connections in a row the broker closed SHORT_LIVED_MS or less after accepting them while it kept listening. */
  private closedSoonInARow = 0;
  /**
   * A short close whose reason waits for the check whether the broker still listens. Whatever comes next
   * on the connection (it opens again, an attempt fails) reports it first if the check has not: the
   * publisher resets its state on each disconnect and must see one between two connects.
   */
  private unreported: { lasted: number } | undefined;
  private ended = false;
  /** Between start() and the first connect, while mqtt.js loads. */
  private loading = false;

  constructor(
    private readonly options: ConnectionOptions,
    private readonly events: ConnectionEvents,
  ) {}

  /** Starts connecting in the background; never throws for network reasons. */
  start(): void {
    if (this.client || this.ended || this.loading) return;
    this.loading = true;
    loadMqtt().then(
      (Client) => {
        this.loading = false;
        if (!this.ended) this.connect(Client);
      },
      (e: unknown) => {
        this.loading = false;
        if (!this.ended) this.events.disconnected(`the MQTT client could not be loaded: ${connectionErrorText(e)}`);
      },
    );
  }

  private connect(Client: typeof MqttClient): void {
    const o = this.options;
    // mqtt.js' own connect() would open a plain socket; each (re)connect gets one whose incoming
    // packets are size-checked before mqtt.js buffers them.
    const open = (): LimitedConnection => new LimitedConnection(o.host, o.port, MAX_INCOMING_PACKET_BYTES, (m) => this.events.skipped(m));
    const client = new Client(open, {
      host: o.host,
      port: o.port,
      protocol: 'mqtt',
      // MQTT 3.1.1 (mqtt.js' default) and keep-alive on Node's own timers: the part build.mjs bundles
      // leaves out what MQTT 5's topic aliases and Web Worker timers would need (UNREACHABLE_IN_MQTT).
      protocolVersion: 4,
      timerVariant: 'native',
      clientId: o.clientId,
      username: o.username === '' ? undefined : o.username,
      password: o.username === '' ? undefined : o.password,
      clean: true,
      keepalive: o.keepaliveSeconds,
      connectTimeout: o.connectTimeoutMs,
      reconnectPeriod: o.reconnectMinMs,
      // Bad credentials must not stop the retries: the operator may fix the broker side.
      reconnectOnConnackError: true,
      // Our own bounded queue holds messages while offline (queue.ts); mqtt.js must not keep a second,
      // unbounded one. We never hand it a message while disconnected, and QoS 0 would be queued anyway.
      queueQoSZero: false,
      // Subscriptions are made again in our `connect` handler, which knows the current topic list.
      resubscribe: false,
      // By default mqtt-packet makes a 2-byte Buffer for every 16-bit number, 65,536 of them kept for
      // the process's life (6 MiB of heap, 8-9 MiB of an idle service's RSS) to save one tiny
      // allocation per packet: a hub publishes a few messages a second.
      writeCache: false,
      will: { topic: o.will.topic, payload: Buffer.from(o.will.payload), qos: 1, retain: o.will.retain },
    });
    this.client = client;

    // mqtt.js reconnects on a fixed `reconnectPeriod`, reading the option each time it arms its timer
    // (on `close`). Growing it just before that timer is armed gives exponential back-off; this listener
    // is prepended so it runs before mqtt.js' own `close` handler.
    client.prependListener('close', () => {
      if (this.ended) return;
      // Only a connection that lasted starts the back-off again from its first delay.
      if (this.connectedAt !== undefined && monotonicMs() - this.connectedAt > SHORT_LIVED_MS) this.failedAttempts = 0;
      this.failedAttempts++;
      const delay = Math.min(o.reconnectMinMs * 2 ** Math.max(0, this.failedAttempts - 1), o.reconnectMaxMs);
      client.options.reconnectPeriod = delay;
    });
    let lastError: string | undefined;
    client.on('error', (e) => {
      lastError = reasonOf(e, o);
    });
    client.on('close', () => {
      if (this.ended) return;
      this.reportUnreported();
      const lasted = this.connectedAt === undefined ? undefined : monotonicMs() - this.connectedAt;
      this.connectedAt = undefined;
      const error = lastError;
      lastError = undefined;
      const short = lasted !== undefined && lasted <= SHORT_LIVED_MS;
      // A connection that lasted, or a failed attempt (never accepted), ends a row of short ones.
      if (!short) this.closedSoonInARow = 0;
      if (!short || error !== undefined) {
        this.events.disconnected(error ?? 'connection closed');
        return;
      }
      // mqtt.js arms its reconnect timer with this delay (set by the listener above) as this event runs.
      const reconnectDelay = client.options.reconnectPeriod ?? o.reconnectMinMs;
      const pending = { lasted };
      this.unreported = pending;
      void brokerListening(o.host, o.port, Math.min(LISTENING_CHECK_MS, reconnectDelay / 2)).then((listening) => {
        // Nothing to report once the hub has stopped, or what came next reported it (a check slower than the reconnect).
        if (this.ended || this.unreported !== pending) return;
        this.unreported = undefined;
        this.closedSoonInARow = listening ? this.closedSoonInARow + 1 : 0;
        this.events.disconnected(!listening ? stoppedListeningText(lasted) : this.closedSoonInARow >= 2 ? takenOverText(o.clientId) : closedSoonText(lasted));
      });
    });
    client.on('connect', () => {
      this.reportUnreported();
      this.connectedAt = monotonicMs();
      lastError = undefined;
      this.events.connected();
    });
    client.on('message', (topic, payload, packet) => this.events.message(topic, payload, packet.retain));
  }

  /** Reports a short close whose check has not answered yet, without its verdict. */
  private reportUnreported(): void {
    const pending = this.unreported;
    if (!pending) return;
    this.unreported = undefined;
    this.events.disconnected(closedSoonText(pending.lasted));
  }

  get connected(): boolean {
    return this.client?.connected === true && !this.ended;
  }

  /** Hands one message to mqtt.js (QoS 1). Only call while connected; `done` gets the broker's verdict. */
  publish(message: OutgoingMessage, done: (error: Error | undefined) => void): void {
    const client = this.client;
    if (!client || this.ended) {
      done(new Error('not connected'));
      return;
    }
    client.publish(message.topic, message.payload, { qos: 1, retain: message.retain }, (e) => done(e ?? undefined));
  }

  subscribe(topic: string): void {
    this.client?.subscribe(topic, { qos: SUBSCRIPTION_QOS }, (e) => {
      // mqtt.js hands over the SUBACK with a refusal; an error without one is the connection closing
      // before the SUBACK, and the next connection subscribes again.
      const granted = (e as { packet?: { granted?: unknown } } | null)?.packet?.granted;
      const code = Array.isArray(granted) ? granted.find((g): g is number => typeof g === 'number' && (g & 0x80) !== 0) : undefined;
      if (e && code !== undefined && !this.ended) this.events.subscriptionRefused(topic, `${connectionErrorText(e)} (SUBACK 0x${code.toString(16)})`);
    });
  }

  /**
   * Clean shutdown: when connected, publish `final` (our `offline` status) and wait for its
   * acknowledgement, then DISCONNECT; otherwise just stop reconnecting. Bounded by `timeoutMs`.
   * Idempotent.
   */
  async end(final: OutgoingMessage | undefined, timeoutMs: number): Promise<void> {
    if (this.ended) return;
    const client = this.client;
    this.ended = true;
    if (!client) return;
    const bounded = (work: (resolve: () => void) => void, ms: number): Promise<boolean> =>
      new Promise((resolve) => {
        const timer = setTimeout(() => resolve(false), ms);
        work(() => {
          clearTimeout(timer);
          resolve(true);
        });
      });
    let clean = false;
    if (client.connected && final) {
      clean = await bounded(
        (resolve) => client.publish(final.topic, final.payload, { qos: 1, retain: final.retain }, () => resolve()),
        timeoutMs,
      );
    }
    const ended = await bounded((resolve) => client.end(!clean, {}, () => resolve()), timeoutMs);
    // end() ignores a second call while one is pending, so a stuck DISCONNECT is cut off at the socket.
    if (!ended) client.stream?.destroy();
  }
}
