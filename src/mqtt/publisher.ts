// MQTT publishing of device state, session events and Home Assistant discovery (docs/protocol.md, "MQTT").
// Every publish* call is synchronous fire-and-forget: a slow or dead broker never reaches the caller
// (an HTTP request or a hub message). While disconnected, session events and the clearing of deleted
// devices wait in a bounded queue, and the retained state of the hub and its devices is owed (backlog.ts).
import os from 'node:os';
import type { Logger } from '../log/logger.js';
import { UNACKNOWLEDGED_LIMIT_MS } from './acknowledgements.js';
import { AtMostEvery } from './at-most-every.js';
import { AVAILABILITY_RESEND_INTERVAL_MS, AvailabilityWatch, ONLINE } from './availability-watch.js';
import { stripEnds } from '../trim.js';
import { RetainedBacklog, type Owed } from './backlog.js';
import { brokerShown, unsendableSetting } from './broker-settings.js';
import { BrokerConnection } from './client.js';
import {
  deviceStatePayload,
  discoveryChanged,
  discoveryMessages,
  retainedTopicsOf,
  SENSOR_OBJECTS,
  type MqttDevice,
  type TopicNames,
} from './discovery.js';
import { HUB_SENSOR_OBJECTS, hubDiscoveryMessages } from './hub-discovery.js';
import type { HubState } from './hub-status.js';
import { Outbox } from './outbox.js';
import type { OutgoingMessage } from './queue.js';
import { StaleDiscovery } from './stale-discovery.js';
import { deviceStateTopic, haStatusTopic, hubStateTopic, sessionEventTopic, shownTopic, statusTopic } from './topics.js';
import { durationText } from '../log/duration.js';
import type { SkippedMessage } from './packet-limit.js';

export interface MqttPublisherOptions {
  brokerAddress: string;
  port: number;
  /** Empty: connect without credentials. */
  username: string;
  password: string;
  topicPrefix: string;
  homeAssistantDiscovery: boolean;
  discoveryPrefix: string;
  logger: Logger;
  /**
   * This installation's id (src/process/instance-id.ts): the client id is `voice-hub-<instanceId>` and the
   * Home Assistant discovery ids carry it, so hubs sharing a broker never take over each other's connection
   * or entities. Topics do not carry it: they are `<topicPrefix>/...`, a layout subscribers already rely on.
   */
  instanceId: string;
  /** The running version, in the hub's state and its Home Assistant device. */
  version: string;
  /** Names the hub's Home Assistant device; defaults to os.hostname(). */
  hostname?: string;
  /** MQTT keepalive; the broker declares us gone (and sends the last will) after 1.5 times this. Default 30. */
  keepaliveSeconds?: number;
  /**
   * Most session events held while disconnected (the oldest dropped first). Default 1000. The clearing
   * of deleted devices' retained topics waits beside them, one message per topic, never pushed out by
   * events (see `retainedQueueLimit`); the hub's and the known devices' retained state is owed apart
   * from both and never dropped.
   */
  queueLimit?: number;
  /**
   * Most distinct retained topics (the clearing of deleted devices) held while disconnected. Default:
   * those of the most devices the hub has known at once, and of RETAINED_QUEUE_MIN_DEVICES at least.
   */
  retainedQueueLimit?: number;
  /**
   * After Home Assistant's birth message everything is re-sent at once; another one within this many
   * milliseconds waits for its end, and all that arrive meanwhile are one re-send. Default 10,000.
   */
  homeAssistantResendIntervalMs?: number;
  /**
   * Health is Degraded while the oldest QoS 1 message not yet acknowledged by the connected broker
   * has waited longer than this many milliseconds. Default 30,000.
   */
  unacknowledgedLimitMs?: number;
  /**
   * `online` is published again on `<prefix>/status` when another client of the broker said otherwise
   * there, at most once per this many milliseconds. Default 1,000.
   */
  availabilityResendIntervalMs?: number;
  /** Reconnect back-off: first delay and ceiling. Defaults 1 s and 30 s. */
  reconnectMinMs?: number;
  reconnectMaxMs?: number;
}

export interface MqttState {
  connected: boolean;
  /** Why the last connection attempt failed or the connection dropped; absent while connected. */
  lastError?: string;
  /** `host:port` of the broker, for messages such as "not connected to localhost:1883". */
  broker: string;
  /**
   * Present while connected and the oldest message the broker has not acknowledged has waited longer
   * than `limitMs`: how many wait for their acknowledgement.
   */
  stalled?: { unacknowledged: number; limitMs: number };
}

export interface MqttStats {
  /** Messages the broker acknowledged. */
  published: number;
  /** Messages given up: pushed out of a full queue, or refused by the broker. */
  dropped: number;
  /** Messages waiting for the broker: in our queue, and the retained configs and states owed to it. */
  queued: number;
  /** Messages sent and not yet acknowledged by the broker. */
  inFlight: number;
}

const CLOSE_TIMEOUT_MS = 2000;
/**
 * Home Assistant sends its birth message (`online`) once when it starts, and any client of the broker
 * can send it as often as it likes: each one re-sends every config and state (six messages a device),
 * so a flood of them was a flood of publishes. One re-send per 10 s bounds that to a tenth of the
 * fleet's messages a second, and costs a Home Assistant that restarts twice within 10 s nothing but a
 * wait: the second birth is answered at the end of the window. Home Assistant itself takes longer than
 * that to restart.
 */
const HOME_ASSISTANT_RESEND_INTERVAL_MS = 10_000;

export class MqttPublisher {
  private readonly names: TopicNames;
  private readonly connection: BrokerConnection;
  /** The bounded queue, the backlog and the messages in flight: the way to the broker (outbox.ts). */
  private readonly outbox: Outbox;
  private readonly backlog: RetainedBacklog;
  private readonly log: Logger;
  /** Last state of every device we publish for: re-sent on reconnect and on Home Assistant's birth. */
  private readonly known = new Map<string, MqttDevice>();
  /** Configs an earlier run left under the hub's node, cleared (stale-discovery.ts). */
  private readonly staleDiscovery: StaleDiscovery;
  /** The most devices known at once: the queue holds the clearing of that many (RETAINED_QUEUE_MIN_DEVICES). */
  private mostKnown = 0;
  /** Re-sends for Home Assistant's birth message, one per interval however many arrive. */
  private readonly homeAssistantResend: AtMostEvery;
  /**
   * Answers another client's word other than `online` on the hub's availability topic; none when that topic
   * is also Home Assistant's own status topic (both prefixes alike): Home Assistant's `offline` there is
   * its own, not a word about the hub.
   */
  private readonly availability: AvailabilityWatch | undefined;
  /** The hub's latest state, re-sent with the devices'. */
  private hubState: HubState | undefined;
  private readonly broker: string;
  /** `voice-hub-<instanceId>`: one per installation, as a broker closes the older of two connections with one id. */
  private readonly clientId: string;
  private lastError: string | undefined;
  private everConnected = false;
  private closing: Promise<void> | undefined;

  constructor(private readonly options: MqttPublisherOptions) {
    // A trailing slash in a configured prefix would give `voice-hub//status`.
    this.names = {
      topicPrefix: stripEnds(options.topicPrefix, '/', false),
      discoveryPrefix: stripEnds(options.discoveryPrefix, '/', false),
      instanceId: options.instanceId,
      version: options.version,
    };
    this.log = options.logger;
    this.homeAssistantResend = new AtMostEvery(options.homeAssistantResendIntervalMs ?? HOME_ASSISTANT_RESEND_INTERVAL_MS, () => this.resendForHomeAssistant());
    const availabilityTopic = statusTopic(this.names.topicPrefix);
    this.availability = availabilityTopic === haStatusTopic(this.names.discoveryPrefix) ? undefined : new AvailabilityWatch(options.logger, {
      shownTopic: shownTopic(availabilityTopic),
      intervalMs: options.availabilityResendIntervalMs ?? AVAILABILITY_RESEND_INTERVAL_MS,
      mayAnswer: () => !this.closing && this.connection.connected,
      answer: () => {
        // Through the backlog: owed once however often it is asked for, sent when the broker takes it.
        this.backlog.owe({ kind: 'hubAvailability' });
        this.outbox.pump();
      },
    });
    this.backlog = new RetainedBacklog(
      (item) => this.resolve(item),
      (item) => (item.kind === 'deviceDiscovery' ? SENSOR_OBJECTS.length : item.kind === 'hubDiscovery' ? HUB_SENSOR_OBJECTS.length : 1),
    );
    this.broker = brokerShown(options.brokerAddress, options.port);
    this.clientId = `voice-hub-${options.instanceId}`;
    const reconnectMaxMs = options.reconnectMaxMs ?? 30_000;
    const closing = (): boolean => this.closing !== undefined;
    this.staleDiscovery = new StaleDiscovery({
      names: this.names,
      homeAssistantDiscovery: options.homeAssistantDiscovery,
      logger: options.logger,
      known: this.known,
      // Twice the longest a twin with this client id waits before it takes the connection back.
      settleMs: 2 * reconnectMaxMs,
      send: (message) => this.outbox.send(message),
      closing,
    });
    this.connection = new BrokerConnection(
      {
        host: options.brokerAddress,
        port: options.port,
        username: options.username,
        password: options.password,
        clientId: this.clientId,
        will: { topic: statusTopic(this.names.topicPrefix), payload: 'offline', retain: true },
        keepaliveSeconds: options.keepaliveSeconds ?? 30,
        reconnectMinMs: options.reconnectMinMs ?? 1000,
        reconnectMaxMs,
        connectTimeoutMs: 10_000,
      },
      {
        connected: () => this.onConnected(),
        disconnected: (error) => this.onDisconnected(error),
        message: (topic, payload, retained) => this.onMessage(topic, payload, retained),
        skipped: (m) => this.onSkipped(m),
        subscriptionRefused: (topic, reason) => this.onSubscriptionRefused(topic, reason),
      },
    );
    this.outbox = new Outbox(this.connection, this.backlog, {
      broker: this.broker,
      logger: options.logger,
      queueLimit: options.queueLimit ?? 1000,
      retainedQueueLimit: options.retainedQueueLimit,
      unacknowledgedLimitMs: options.unacknowledgedLimitMs ?? UNACKNOWLEDGED_LIMIT_MS,
      mostKnown: () => this.mostKnown,
      closing,
    });
  }

  /** Starts connecting in the background. Publishing before that (or while the broker is down) queues. */
  start(): void {
    if (this.closing) return;
    const refused = unsendableSetting({ ...this.names, brokerAddress: this.options.brokerAddress, username: this.options.username });
    if (refused !== undefined) {
      // A value stored before the configuration refused it: the broker would close every connection.
      this.lastError = refused;
      this.log.error(`not connecting to MQTT broker ${this.broker}: ${refused}`);
      return;
    }
    // The client id in the log: a broker's own log names clients by it, e.g. when it closes one for another.
    this.log.info(`connecting to MQTT broker ${this.broker} as ${this.clientId}`);
    this.connection.start();
  }

  state(): MqttState {
    const connected = this.connection.connected;
    if (!connected) return this.lastError === undefined ? { connected, broker: this.broker } : { connected, lastError: this.lastError, broker: this.broker };
    const stalled = this.outbox.stall();
    return stalled ? { connected, broker: this.broker, stalled } : { connected, broker: this.broker };
  }

  stats(): MqttStats {
    const { published, dropped, queued, inFlight } = this.outbox;
    return { published, dropped, queued, inFlight };
  }

  /** Retained state of a device; on first sight (or a new name/type) its discovery configs too. */
  publishDeviceState(device: MqttDevice): void {
    this.guard('publish device state', () => {
      if (this.closing) return;
      const snapshot = pickDevice(device);
      const before = this.known.get(snapshot.id);
      this.known.set(snapshot.id, snapshot);
      if (before === undefined) this.staleDiscovery.knownChanged();
      this.mostKnown = Math.max(this.mostKnown, this.known.size);
      // A device deleted and registered again before its clearing messages went out: they must not follow its new state.
      if (before === undefined) for (const topic of retainedTopicsOf(this.names, snapshot.id)) this.outbox.discardRetained(topic);
      if (this.options.homeAssistantDiscovery && discoveryChanged(before, snapshot)) this.backlog.owe({ kind: 'deviceDiscovery', id: snapshot.id });
      this.backlog.owe({ kind: 'deviceState', id: snapshot.id });
      this.outbox.pump();
    });
  }

  /** The hub's own state (retained); sent when it changes, and again with everything else on a reconnect. */
  publishHubState(state: HubState): void {
    this.guard('publish hub state', () => {
      if (this.closing) return;
      this.hubState = { ...state };
      this.backlog.owe({ kind: 'hubState' });
      this.outbox.pump();
    });
  }

  /** A session start/end event, not retained: it is news, not state. */
  publishSessionEvent(sessionId: string, event: Record<string, unknown>): void {
    this.guard('publish session event', () => {
      this.outbox.send(this.sessionEventMessage(sessionId, event));
    });
  }

  /** The message publishSessionEvent sends; also after close, for keeping what no publisher will send. */
  sessionEventMessage(sessionId: string, event: Record<string, unknown>): OutgoingMessage {
    return { topic: sessionEventTopic(this.names.topicPrefix, sessionId), payload: JSON.stringify(event), retain: false };
  }

  /** The messages removeDevice sends: every retained topic of the device, cleared. Also after close. */
  removalMessages(deviceId: string): OutgoingMessage[] {
    return retainedTopicsOf(this.names, deviceId).map((topic) => ({ topic, payload: '', retain: true }));
  }

  /** Clears every retained topic of a deleted device (an empty retained payload deletes it at the broker). */
  removeDevice(deviceId: string): void {
    this.guard('remove device', () => {
      this.known.delete(deviceId);
      this.staleDiscovery.knownChanged();
      this.backlog.forget(deviceId);
      // Discovery configs are cleared even when discovery is now off: they may be left from when it was on.
      for (const message of this.removalMessages(deviceId)) this.outbox.send(message);
    });
  }

  /** Replaces the known devices (at start-up, from the store) and publishes each one's state and discovery. */
  syncDevices(devices: readonly MqttDevice[]): void {
    this.known.clear();
    this.staleDiscovery.knownChanged();
    for (const device of devices) this.publishDeviceState(device);
  }

  /**
   * What the queue still holds (session events and the clearing of deleted devices' topics, in publish
   * order), for the publisher that replaces this one after `close`; the queue is empty afterwards.
   */
  undelivered(): OutgoingMessage[] {
    return this.outbox.drain();
  }

  /**
   * Messages a replaced publisher could not deliver (its `undelivered`), sent as if published here.
   * The clearing of a topic a known device has now (registered again since) is left out: it would
   * delete that device's state.
   */
  takeOver(messages: readonly OutgoingMessage[]): void {
    this.guard('take over undelivered messages', () => {
      const live = new Set(Array.from(this.known.keys(), (id) => retainedTopicsOf(this.names, id)).flat());
      for (const message of messages) if (!(message.retain && live.has(message.topic))) this.outbox.send(message);
    });
  }

  /**
   * Whether one of `messages` (given to `takeOver`) still waits for the broker's acknowledgement: false
   * once each is acknowledged, given up as any queued message is, or left out by `takeOver`.
   */
  holdsAny(messages: readonly OutgoingMessage[]): boolean {
    return this.outbox.holdsAny(new Set(messages));
  }

  /** Clean shutdown: `offline` (retained) then DISCONNECT; idempotent. Queued messages wait for `undelivered`. */
  close(): Promise<void> {
    this.homeAssistantResend.close();
    this.availability?.close();
    this.staleDiscovery.close();
    this.outbox.close();
    this.closing ??= (async () => {
      const offline = { topic: statusTopic(this.names.topicPrefix), payload: 'offline', retain: true };
      await this.connection.end(offline, CLOSE_TIMEOUT_MS);
      this.log.debug('MQTT connection closed');
    })();
    return this.closing;
  }

  private onConnected(): void {
    this.log.info(`${this.everConnected ? 'reconnected' : 'connected'} to MQTT broker ${this.broker}`);
    this.everConnected = true;
    this.lastError = undefined;
    this.outbox.connected();
    this.staleDiscovery.connected();
    if (this.options.homeAssistantDiscovery) this.connection.subscribe(haStatusTopic(this.names.discoveryPrefix));
    // This hub's own node only (it carries the instance id): the broker answers with what an earlier run
    // left there, all of it stale once discovery is switched off.
    this.connection.subscribe(`${this.staleDiscovery.ownNode()}/+/config`);
    // `online` first, ahead of anything queued during the outage.
    this.outbox.transmit({ topic: statusTopic(this.names.topicPrefix), payload: 'online', retain: true });
    // Subscribed after that `online` (mqtt.js writes both in call order, the broker handles them in turn), so
    // the retained message the subscription brings is normally our own: what anyone else says there later
    // is answered (availability-watch.ts).
    if (this.availability) this.connection.subscribe(statusTopic(this.names.topicPrefix));
    // The broker may have restarted without persistence and lost every retained message: all known
    // state is owed again.
    this.oweAll();
    this.outbox.pump();
  }

  /** Every retained config (when discovery is on) and state of the hub and the known devices. */
  private oweAll(): void {
    const discovery = this.options.homeAssistantDiscovery;
    if (discovery) this.backlog.owe({ kind: 'hubDiscovery' });
    if (this.hubState) this.backlog.owe({ kind: 'hubState' });
    for (const id of this.known.keys()) {
      if (discovery) this.backlog.owe({ kind: 'deviceDiscovery', id });
      this.backlog.owe({ kind: 'deviceState', id });
    }
  }

  private resolve(item: Owed): OutgoingMessage[] {
    switch (item.kind) {
      case 'hubAvailability':
        return [{ topic: statusTopic(this.names.topicPrefix), payload: 'online', retain: true }];
      case 'hubDiscovery':
        return this.options.homeAssistantDiscovery ? this.hubDiscovery().map((m) => ({ ...m, retain: true })) : [];
      case 'hubState':
        return this.hubState ? [this.hubStateMessage(this.hubState)] : [];
      case 'deviceDiscovery': {
        const device = this.known.get(item.id);
        return device && this.options.homeAssistantDiscovery ? discoveryMessages(this.names, device).map((m) => ({ ...m, retain: true })) : [];
      }
      case 'deviceState': {
        const device = this.known.get(item.id);
        return device ? [this.stateMessage(device)] : [];
      }
    }
  }

  private onDisconnected(error: string | undefined): void {
    const text = error ?? 'connection closed';
    // One warning per change of reason, not one per retry: a broker down for a day must not flood the journal.
    if (text !== this.lastError) this.log.warn(`MQTT broker ${this.broker} unavailable: ${text}; retrying`);
    else this.log.debug(`MQTT reconnect to ${this.broker} failed: ${text}`);
    this.lastError = text;
    this.outbox.disconnected();
    this.staleDiscovery.disconnected();
    this.availability?.disconnected();
  }

  private onMessage(topic: string, payload: Buffer, retained: boolean): void {
    if (this.closing) return;
    if (this.availability && topic === statusTopic(this.names.topicPrefix)) {
      // Retained or not: Home Assistant acts on a live `offline` as on a retained one.
      this.availability.message(payload);
      return;
    }
    if (retained && payload.length > 0 && this.staleDiscovery.foundOwnConfig(topic, payload)) return;
    if (!this.options.homeAssistantDiscovery) return;
    // Home Assistant's birth message: it (re)started and forgot non-retained discovery; send it again.
    // Not one the broker kept (a Home Assistant set to retain it, or any client): that comes with the
    // retain flag as the hub subscribes, right after the connect has sent everything, and answering it
    // sent every config and state twice at each connect. A birth published while the hub is subscribed
    // comes without the flag, however it was published (MQTT 3.1.1 section 3.3.1.3).
    if (retained || topic !== haStatusTopic(this.names.discoveryPrefix) || !payload.equals(ONLINE)) return;
    const wait = this.homeAssistantResend.request();
    if (wait !== undefined && wait > 0) this.log.debug(`Home Assistant came online again; re-sending discovery in ${durationText(wait)}`);
  }

  /** A message skipped for its size (packet-limit.ts): on the availability topic it is no `online` either. */
  private onSkipped(m: SkippedMessage): void {
    if (!this.closing && this.availability && m.topic === statusTopic(this.names.topicPrefix)) this.availability.skipped(m.bytes);
    this.staleDiscovery.onSkipped(m);
  }

  /**
   * A broker whose ACL denies a subscription answers the SUBACK with a failure code and delivers nothing
   * (mosquitto instead grants it and drops what the ACL denies): without a line here, Home Assistant's
   * restarts or an earlier run's configs would go unanswered with no trace of why.
   */
  private onSubscriptionRefused(topic: string, reason: string): void {
    const consequence = topic === haStatusTopic(this.names.discoveryPrefix)
      ? 'discovery is not sent again when Home Assistant restarts'
      : topic === statusTopic(this.names.topicPrefix)
        ? 'an \'offline\' another client publishes there is not answered with \'online\''
        : 'discovery configs an earlier run left under the hub\'s node are not cleared';
    this.log.warn(`MQTT broker ${this.broker} refused the subscription to ${topic}: ${reason}; ${consequence} (check the broker's ACL for ${this.clientId}${this.options.username ? ` / user ${this.options.username}` : ''})`);
  }

  /** Everything again for Home Assistant's birth message (at most once per HOME_ASSISTANT_RESEND_INTERVAL_MS). */
  private resendForHomeAssistant(): void {
    if (this.closing) return;
    this.log.debug(`Home Assistant came online; re-sending discovery for the hub and ${this.known.size} device(s)`);
    this.oweAll();
    this.outbox.pump();
  }

  private hubDiscovery(): ReturnType<typeof hubDiscoveryMessages> {
    return hubDiscoveryMessages(this.names, this.options.hostname ?? os.hostname());
  }

  private hubStateMessage(state: HubState): OutgoingMessage {
    return { topic: hubStateTopic(this.names.topicPrefix), payload: JSON.stringify(state), retain: true };
  }

  private stateMessage(device: MqttDevice): OutgoingMessage {
    return { topic: deviceStateTopic(this.names.topicPrefix, device.id), payload: deviceStatePayload(device), retain: true };
  }

  private guard(what: string, work: () => void): void {
    try {
      work();
    } catch (e) {
      // Publishing is a side channel: a bad record must not fail the request that caused it.
      this.log.error(`MQTT ${what} failed: ${e instanceof Error ? e.message : String(e)}`);
    }
  }
}

/** Our own copy of the fields we publish, so later changes to the caller's object do not leak in. */
function pickDevice(d: MqttDevice): MqttDevice {
  return {
    id: d.id,
    name: d.name,
    type: d.type,
    status: d.status,
    lastSeen: d.lastSeen,
    batteryLevel: d.batteryLevel ?? null,
    temperature: d.temperature ?? null,
    memoryUsage: d.memoryUsage ?? null,
    cpuUsage: d.cpuUsage ?? null,
  };
}
