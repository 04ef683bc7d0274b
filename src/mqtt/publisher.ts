// MQTT publishing of device state, session events and Home Assistant discovery (docs/protocol.md, "MQTT").
// Every publish* call is synchronous fire-and-forget: a slow or dead broker never reaches the caller
// (an HTTP request or a hub message). While disconnected, session events and the clearing of deleted
// devices wait in a bounded queue, and the retained state of the hub and its devices is owed (backlog.ts).
import os from 'node:os';
import { HOST_PATTERN, NOT_IN_MQTT_TEXT } from '../config/schema.js';
import type { Logger } from '../log/logger.js';
import { ThrottledLog } from '../log/throttled.js';
import { AcknowledgementWatch, UNACKNOWLEDGED_LIMIT_MS } from './acknowledgements.js';
import { AtMostEvery } from './at-most-every.js';
import { stripEnds } from '../trim.js';
import { RetainedBacklog, type Owed } from './backlog.js';
import { BrokerConnection } from './client.js';
import {
  deviceStatePayload,
  discoveryChanged,
  discoveryMessages,
  LONGEST_DEVICE_OBJECT,
  retainedTopicsOf,
  SENSOR_OBJECTS,
  type MqttDevice,
  type TopicNames,
} from './discovery.js';
import { HUB_SENSOR_OBJECTS, hubDiscoveryMessages } from './hub-discovery.js';
import { MAX_INCOMING_PACKET_BYTES, type SkippedMessage } from './packet-limit.js';
import type { HubState } from './hub-status.js';
import { OutgoingQueue, type OutgoingMessage } from './queue.js';
import { deviceStateTopicOf, StaleConfigSweep } from './stale-configs.js';
import { deviceStateTopic, haHubNode, haHubObject, haNodeId, haStatusTopic, hubStateTopic, sessionEventTopic, statusTopic } from './topics.js';
import { urlHost } from '../url-host.js';
import { durationText } from '../log/duration.js';
import { monotonicMs } from '../monotonic-clock.js';

/** Characters of a topic the log shows: one another client chose may be 65,535 bytes. */
const TOPIC_CHARS_LOGGED = 200;
const shownTopic = (topic: string): string => (topic.length > TOPIC_CHARS_LOGGED ? `${topic.slice(0, TOPIC_CHARS_LOGGED)}...` : topic);

const ONLINE = Buffer.from('online');

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
/** Messages handed to mqtt.js and not yet acknowledged, at most (see `send`). */
const MAX_IN_FLIGHT = 100;
/** Topics a device has retained messages on, all cleared when it is deleted: its state and a config per sensor. */
const TOPICS_PER_DEVICE = 1 + SENSOR_OBJECTS.length;
/**
 * The clearing of deleted devices' topics waits in the queue, one message per topic, however many
 * events push through it. What bounds it is what can exist: the topics of the most devices the hub has
 * had at once (all of them can be deleted while the broker is away), and never fewer than those of
 * 10,000 devices (60,000 topics; a thousand times the shipped DeviceManagement.MaxDevices), for devices
 * registered and deleted in turn during one outage and stale configs the connect-time scan clears. A
 * waiting topic costs about 250 bytes: 15 MiB at that floor.
 */
const RETAINED_QUEUE_MIN_DEVICES = 10_000;
/**
 * Home Assistant sends its birth message (`online`) once when it starts, and any client of the broker
 * can send it as often as it likes: each one re-sends every config and state (six messages a device),
 * so a flood of them was a flood of publishes. One re-send per 10 s bounds that to a tenth of the
 * fleet's messages a second, and costs a Home Assistant that restarts twice within 10 s nothing but a
 * wait: the second birth is answered at the end of the window. Home Assistant itself takes longer than
 * that to restart.
 */
const HOME_ASSISTANT_RESEND_INTERVAL_MS = 10_000;
/** A character MQTT does not allow in its strings, or lets a broker refuse (config/schema.ts). */
const NOT_MQTT_TEXT = new RegExp(`[${NOT_IN_MQTT_TEXT}]`, 'u');
const BROKER_HOST = new RegExp(HOST_PATTERN, 'u');

export class MqttPublisher {
  private readonly names: TopicNames;
  private readonly connection: BrokerConnection;
  private readonly queue: OutgoingQueue;
  private readonly backlog: RetainedBacklog;
  /** Alternates the pump between the queue and the backlog, so a stream of either cannot starve the other. */
  private backlogTurn = false;
  private readonly log: Logger;
  /**
   * Lines about what other clients of the broker publish to the hub's subscriptions (oversized messages,
   * stale discovery configs): any client can publish them as fast as the network carries.
   */
  private readonly skippedLog: ThrottledLog;
  private readonly clearingLog: ThrottledLog;
  private readonly retainedDropLog: ThrottledLog;
  private readonly eventDropLog: ThrottledLog;
  /** Last state of every device we publish for: re-sent on reconnect and on Home Assistant's birth. */
  private readonly known = new Map<string, MqttDevice>();
  /** Home Assistant node ids and state topics of the known devices, built when a retained config needs checking. */
  private knownTopics: { nodes: Set<string>; states: Set<string> } | undefined;
  /** Device state topics cleared on this connection for stale configs (a device has a config per sensor). */
  private readonly clearedStates = new Set<string>();
  /** Stale configs of the hub's node, cleared once a connection has settled (stale-configs.ts). */
  private readonly staleConfigs: StaleConfigSweep;
  /** The most devices known at once: the queue holds the clearing of that many (RETAINED_QUEUE_MIN_DEVICES). */
  private mostKnown = 0;
  /** Re-sends for Home Assistant's birth message, one per interval however many arrive. */
  private readonly homeAssistantResend: AtMostEvery;
  /** The hub's latest state, re-sent with the devices'. */
  private hubState: HubState | undefined;
  private readonly broker: string;
  /** `voice-hub-<instanceId>`: one per installation, as a broker closes the older of two connections with one id. */
  private readonly clientId: string;
  private lastError: string | undefined;
  private published = 0;
  private inFlight = 0;
  /** Messages of the current connection the broker has not acknowledged. */
  private readonly acknowledgements: AcknowledgementWatch;
  /** Counts connections, so acknowledgements from an earlier one do not free slots of the current one. */
  private generation = 0;
  private refused = 0;
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
    this.skippedLog = new ThrottledLog(options.logger, 5, 60_000, () => monotonicMs(),
      (count, seconds, last) => `${count} more MQTT messages over the size limit skipped in the last ${seconds} s; the last: ${last}`);
    this.clearingLog = new ThrottledLog(options.logger, 20, 60_000, () => monotonicMs(),
      (count, seconds, last) => `${count} more stale Home Assistant discovery configs cleared in the last ${seconds} s; the last: ${last}`);
    this.retainedDropLog = new ThrottledLog(options.logger, 1, 60_000, () => monotonicMs(),
      (count, seconds) => `${count} more retained MQTT topics dropped from the full queue in the last ${seconds} s; their retained messages stay at the broker`);
    this.eventDropLog = new ThrottledLog(options.logger, 1, 60_000, () => monotonicMs(),
      (count, seconds) => `${count} more MQTT session events dropped from the full queue in the last ${seconds} s`);
    this.queue = new OutgoingQueue(options.queueLimit ?? 1000, () => this.retainedQueueLimit());
    this.homeAssistantResend = new AtMostEvery(options.homeAssistantResendIntervalMs ?? HOME_ASSISTANT_RESEND_INTERVAL_MS, () => this.resendForHomeAssistant());
    this.acknowledgements = new AcknowledgementWatch(options.unacknowledgedLimitMs ?? UNACKNOWLEDGED_LIMIT_MS, {
      stalled: (unacknowledged) =>
        this.log.warn(
          `MQTT broker ${this.broker} has not acknowledged a message for more than ${durationText(this.acknowledgements.limitMs)} ` +
            `(${unacknowledged} unacknowledged, ${this.stats().queued} waiting behind them) although the connection is open; ` +
            `/health says Degraded until it does`,
        ),
      resumed: () => this.log.info(`MQTT broker ${this.broker} acknowledges messages again`),
      abandoned: () => this.log.info(`MQTT broker ${this.broker}: the connection that left messages unacknowledged has closed`),
    });
    this.backlog = new RetainedBacklog(
      (item) => this.resolve(item),
      (item) => (item.kind === 'deviceDiscovery' ? SENSOR_OBJECTS.length : item.kind === 'hubDiscovery' ? HUB_SENSOR_OBJECTS.length : 1),
    );
    // An address that is no host (stored before such addresses were refused) may hold a login: never shown.
    this.broker = !BROKER_HOST.test(options.brokerAddress)
      ? `(Mqtt.BrokerAddress, not a host name or address):${options.port}`
      : `${urlHost(options.brokerAddress)}:${options.port}`;
    this.clientId = `voice-hub-${options.instanceId}`;
    const reconnectMaxMs = options.reconnectMaxMs ?? 30_000;
    // Twice the longest a twin with this client id waits before it takes the connection back.
    this.staleConfigs = new StaleConfigSweep(2 * reconnectMaxMs, (topic, object, stateTopic) => this.clearIfStale(topic, object, stateTopic));
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
  }

  /** Starts connecting in the background. Publishing before that (or while the broker is down) queues. */
  start(): void {
    if (this.closing) return;
    const refused = this.unsendableSetting();
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
    const stalled = this.acknowledgements.stall();
    return stalled ? { connected, broker: this.broker, stalled } : { connected, broker: this.broker };
  }

  stats(): MqttStats {
    return {
      published: this.published,
      dropped: this.queue.dropped + this.refused,
      queued: this.queue.size + this.backlog.size,
      inFlight: this.inFlight,
    };
  }

  /** Retained state of a device; on first sight (or a new name/type) its discovery configs too. */
  publishDeviceState(device: MqttDevice): void {
    this.guard('publish device state', () => {
      if (this.closing) return;
      const snapshot = pickDevice(device);
      const before = this.known.get(snapshot.id);
      this.known.set(snapshot.id, snapshot);
      if (before === undefined) this.knownTopics = undefined;
      this.mostKnown = Math.max(this.mostKnown, this.known.size);
      // A device deleted and registered again before its clearing messages went out: they must not follow its new state.
      if (before === undefined) for (const topic of retainedTopicsOf(this.names, snapshot.id)) this.queue.discardRetained(topic);
      if (this.options.homeAssistantDiscovery && discoveryChanged(before, snapshot)) this.backlog.owe({ kind: 'deviceDiscovery', id: snapshot.id });
      this.backlog.owe({ kind: 'deviceState', id: snapshot.id });
      this.pump();
    });
  }

  /** The hub's own state (retained); sent when it changes, and again with everything else on a reconnect. */
  publishHubState(state: HubState): void {
    this.guard('publish hub state', () => {
      if (this.closing) return;
      this.hubState = { ...state };
      this.backlog.owe({ kind: 'hubState' });
      this.pump();
    });
  }

  /** A session start/end event, not retained: it is news, not state. */
  publishSessionEvent(sessionId: string, event: Record<string, unknown>): void {
    this.guard('publish session event', () => {
      this.send({ topic: sessionEventTopic(this.names.topicPrefix, sessionId), payload: JSON.stringify(event), retain: false });
    });
  }

  /** Clears every retained topic of a deleted device (an empty retained payload deletes it at the broker). */
  removeDevice(deviceId: string): void {
    this.guard('remove device', () => {
      this.known.delete(deviceId);
      this.knownTopics = undefined;
      this.backlog.forget(deviceId);
      // Discovery configs are cleared even when discovery is now off: they may be left from when it was on.
      for (const topic of retainedTopicsOf(this.names, deviceId)) this.send({ topic, payload: '', retain: true });
    });
  }

  /** Replaces the known devices (at start-up, from the store) and publishes each one's state and discovery. */
  syncDevices(devices: readonly MqttDevice[]): void {
    this.known.clear();
    this.knownTopics = undefined;
    for (const device of devices) this.publishDeviceState(device);
  }

  /**
   * What the queue still holds (session events and the clearing of deleted devices' topics, in publish
   * order), for the publisher that replaces this one after `close`; the queue is empty afterwards.
   */
  undelivered(): OutgoingMessage[] {
    return this.queue.drain();
  }

  /**
   * Messages a replaced publisher could not deliver (its `undelivered`), sent as if published here.
   * The clearing of a topic a known device has now (registered again since) is left out: it would
   * delete that device's state.
   */
  takeOver(messages: readonly OutgoingMessage[]): void {
    this.guard('take over undelivered messages', () => {
      const live = new Set(Array.from(this.known.keys(), (id) => retainedTopicsOf(this.names, id)).flat());
      for (const message of messages) if (!(message.retain && live.has(message.topic))) this.send(message);
    });
  }

  /** Clean shutdown: `offline` (retained) then DISCONNECT; idempotent. Queued messages wait for `undelivered`. */
  close(): Promise<void> {
    this.homeAssistantResend.close();
    this.staleConfigs.disconnected();
    this.acknowledgements.close();
    for (const log of [this.skippedLog, this.clearingLog, this.retainedDropLog, this.eventDropLog]) log.flush();
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
    // Messages in flight on the old connection are mqtt.js' to resend; they no longer hold our slots.
    this.generation++;
    this.inFlight = 0;
    this.acknowledgements.reset();
    this.staleConfigs.connected();
    this.clearedStates.clear();
    if (this.options.homeAssistantDiscovery) this.connection.subscribe(haStatusTopic(this.names.discoveryPrefix));
    // This hub's own node only (it carries the instance id): the broker answers with what an earlier run
    // left there, all of it stale once discovery is switched off.
    this.connection.subscribe(`${this.ownNode()}/+/config`);
    // `online` first, ahead of anything queued during the outage.
    this.transmit({ topic: statusTopic(this.names.topicPrefix), payload: 'online', retain: true });
    // The broker may have restarted without persistence and lost every retained message: all known
    // state is owed again.
    this.oweAll();
    this.pump();
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
    this.acknowledgements.reset();
    this.staleConfigs.disconnected();
  }

  private onMessage(topic: string, payload: Buffer, retained: boolean): void {
    if (this.closing) return;
    if (retained && payload.length > 0 && this.foundOwnConfig(topic, payload)) return;
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

  /**
   * A broker whose ACL denies a subscription answers the SUBACK with a failure code and delivers nothing
   * (mosquitto instead grants it and drops what the ACL denies): without a line here, Home Assistant's
   * restarts or an earlier run's configs would go unanswered with no trace of why.
   */
  private onSubscriptionRefused(topic: string, reason: string): void {
    const consequence = topic === haStatusTopic(this.names.discoveryPrefix)
      ? 'discovery is not sent again when Home Assistant restarts'
      : 'discovery configs an earlier run left under the hub\'s node are not cleared';
    this.log.warn(`MQTT broker ${this.broker} refused the subscription to ${topic}: ${reason}; ${consequence} (check the broker's ACL for ${this.clientId}${this.options.username ? ` / user ${this.options.username}` : ''})`);
  }

  /** Everything again for Home Assistant's birth message (at most once per HOME_ASSISTANT_RESEND_INTERVAL_MS). */
  private resendForHomeAssistant(): void {
    if (this.closing) return;
    this.log.debug(`Home Assistant came online; re-sending discovery for the hub and ${this.known.size} device(s)`);
    this.oweAll();
    this.pump();
  }

  /** `<discoveryPrefix>/sensor/voice-hub_<instanceId>`: every config of this hub is right below it. */
  private ownNode(): string {
    return `${this.names.discoveryPrefix}/sensor/${haHubNode(this.names.instanceId)}`;
  }

  /**
   * A retained config of the hub's node, read or not: judged once the connection settles (stale-configs.ts),
   * or at once when its object id is longer than any a hub names, so no twin of this hub can have
   * published it. Held until then, such configs (any client of the broker can leave thousands, each
   * topic up to 64 KiB) took hundreds of MiB for the first minute of every connection.
   */
  private foundOwnConfig(topic: string, payload?: Buffer): boolean {
    const node = this.ownNode();
    if (!topic.startsWith(`${node}/`) || !topic.endsWith('/config')) return false;
    const object = topic.slice(node.length + 1, -'/config'.length);
    if (object.length > LONGEST_DEVICE_OBJECT) this.clearIfStale(topic, object, undefined);
    else this.staleConfigs.found(topic, object, payload && deviceStateTopicOf(payload, this.names.topicPrefix));
    return true;
  }

  /**
   * A message over the size limit, skipped unread. A retained one under the hub's own node still takes
   * part in the sweep: no config of ours is near the limit, so unless it has one of our names (which the
   * hub publishes again over it) it is stale, and left there Home Assistant would keep reading it.
   */
  private onSkipped(m: SkippedMessage): void {
    this.skippedLog.warn(
      `skipped an MQTT message of ${m.bytes} bytes on '${shownTopic(m.topic)}' (QoS ${m.qos}) unread: over the ${MAX_INCOMING_PACKET_BYTES / 1024} KiB limit for incoming MQTT packets`);
    if (m.retained && !this.closing) this.foundOwnConfig(m.topic);
  }

  /**
   * A retained config of this hub's node that neither the hub nor a known device accounts for was left
   * by an earlier run (a device deleted while the broker was away, whose clearing a restart abandoned;
   * a restored backup): left there, Home Assistant would show that device, available, for good. With
   * discovery switched off, every config an earlier run left is such a one.
   */
  private clearIfStale(topic: string, object: string, stateTopic: string | undefined): void {
    this.knownTopics ??= {
      nodes: new Set(Array.from(this.known.keys(), haNodeId)),
      states: new Set(Array.from(this.known.keys(), (id) => deviceStateTopic(this.names.topicPrefix, id))),
    };
    const { nodes, states } = this.knownTopics;
    // The retained state of the device a config of this hub's node was for, if the hub has it no more:
    // its deletion's clearing never reached the broker (the broker away, then a restart or a kill -9).
    if (stateTopic !== undefined && !states.has(stateTopic) && !this.clearedStates.has(stateTopic)) {
      this.clearedStates.add(stateTopic);
      this.clearingLog.info(`clearing ${shownTopic(stateTopic)}: the retained state of a device this hub no longer has (its discovery config was left by an earlier run)`);
      this.send({ topic: stateTopic, payload: '', retain: true });
    }
    if (!this.options.homeAssistantDiscovery) {
      // Switched off: Home Assistant must not keep showing the hub and its devices from what was left.
      this.clearingLog.info(`clearing ${shownTopic(topic)}: Home Assistant discovery is off (Mqtt.HomeAssistantDiscovery)`);
      this.send({ topic, payload: '', retain: true });
      return;
    }
    if (HUB_SENSOR_OBJECTS.some((s) => haHubObject(s) === object)) return;
    if (SENSOR_OBJECTS.some((s) => object.endsWith(`_${s}`) && nodes.has(object.slice(0, -s.length - 1)))) return;
    this.clearingLog.info(`clearing ${shownTopic(topic)}: a Home Assistant discovery config left by an earlier run, of no device this hub has`);
    this.send({ topic, payload: '', retain: true });
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

  /**
   * Through the bounded queue, straight on to the broker when connected and it keeps up. mqtt.js holds
   * every unacknowledged QoS 1 message, so a broker that stalls with the socket still open would grow
   * that store without limit: at most MAX_IN_FLIGHT messages are handed to it at a time.
   */
  private send(message: OutgoingMessage): void {
    if (this.closing) return;
    const dropped = this.queue.push(message);
    if (dropped && !dropped.retain) {
      // News lost for good (a down broker's queue keeps the newest): the count alone was in /health only.
      this.eventDropLog.warn(
        `MQTT queue full: ${this.queue.capacity} session events already wait for broker ${this.broker}; ` +
          `dropped the oldest, on ${shownTopic(dropped.topic)}, which no subscriber will get`,
      );
    } else if (dropped) {
      this.retainedDropLog.warn(
        `MQTT queue full: ${this.retainedQueueLimit()} retained topics already wait for broker ${this.broker}; ` +
          `dropped the oldest, ${shownTopic(dropped.topic)}, whose retained message stays at the broker`,
      );
    }
    this.pump();
  }

  /** Distinct retained topics the queue holds at most (RETAINED_QUEUE_MIN_DEVICES). */
  private retainedQueueLimit(): number {
    return this.options.retainedQueueLimit ?? TOPICS_PER_DEVICE * Math.max(RETAINED_QUEUE_MIN_DEVICES, this.mostKnown);
  }

  /** Moves queued and owed messages to the broker, taking turns, while it is connected and keeping up. */
  private pump(): void {
    while (!this.closing && this.connection.connected && this.inFlight < MAX_IN_FLIGHT) {
      this.backlogTurn = !this.backlogTurn;
      const next = this.backlogTurn ? (this.backlog.next() ?? this.queue.shift()) : (this.queue.shift() ?? this.backlog.next());
      if (next === undefined) return;
      this.transmit(next);
    }
  }

  private transmit(message: OutgoingMessage): void {
    const generation = this.generation;
    this.inFlight++;
    const acknowledged = this.acknowledgements.sent();
    this.connection.publish(message, (error) => {
      if (generation === this.generation) {
        this.inFlight--;
        acknowledged();
      }
      if (error === undefined) this.published++;
      else if (!this.closing) {
        this.refused++;
        this.log.debug(`MQTT publish to ${message.topic} failed: ${error.message}`);
      }
      this.pump();
    });
  }

  /** Why the settings cannot make a connection the broker accepts (a character MQTT does not allow), if they cannot. */
  private unsendableSetting(): string | undefined {
    if (!BROKER_HOST.test(this.options.brokerAddress)) {
      return 'Mqtt.BrokerAddress is not a host name or address (it is not shown: it may hold a login): set a host name or address, the port in Mqtt.Port and the login in Mqtt.Username and Mqtt.Password';
    }
    const settings: Array<[string, string, string]> = [
      ['Mqtt.Username', this.options.username, 'a user name'],
      ['Mqtt.TopicPrefix', this.names.topicPrefix, 'a topic'],
      ['Mqtt.DiscoveryPrefix', this.names.discoveryPrefix, 'a topic'],
    ];
    for (const [key, value, what] of settings) {
      const found = NOT_MQTT_TEXT.exec(value);
      if (!found) continue;
      const code = found[0].codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0');
      return `${key} holds U+${code}, which MQTT does not allow in ${what} (the broker would refuse every connection): set it without control characters or Unicode non-characters`;
    }
    return undefined;
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
