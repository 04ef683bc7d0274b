// Home Assistant discovery configs under this hub's own node that no device of the hub accounts for: an
// earlier run left them (a device deleted while the broker was away, a restored backup, discovery since
// switched off), and Home Assistant keeps showing what they describe until they are cleared. Finding and
// judging them needs the known devices but nothing else of the publisher, so it is kept out of publisher.ts.
import type { Logger } from '../log/logger.js';
import { ThrottledLog } from '../log/throttled.js';
import { monotonicMs } from '../monotonic-clock.js';
import { LONGEST_DEVICE_OBJECT, SENSOR_OBJECTS, type TopicNames } from './discovery.js';
import { HUB_SENSOR_OBJECTS } from './hub-discovery.js';
import { MAX_INCOMING_PACKET_BYTES, type SkippedMessage } from './packet-limit.js';
import type { OutgoingMessage } from './queue.js';
import { deviceStateTopicOf, StaleConfigSweep } from './stale-configs.js';
import { deviceStateTopic, haHubNode, haHubObject, haNodeId, shownTopic } from './topics.js';

export interface StaleDiscoveryOptions {
  names: TopicNames;
  homeAssistantDiscovery: boolean;
  logger: Logger;
  /** The devices the hub publishes for, by id (the publisher's own map, read when a config is judged). */
  known: ReadonlyMap<string, unknown>;
  /** How long a connection must last before anything is cleared (stale-configs.ts). */
  settleMs: number;
  /** Through the publisher's bounded queue. */
  send: (message: OutgoingMessage) => void;
  /** Whether the publisher is closing: a skipped message is then not judged. */
  closing: () => boolean;
}

export class StaleDiscovery {
  /**
   * Lines about what other clients of the broker publish to the hub's subscriptions (oversized messages,
   * stale discovery configs): any client can publish them as fast as the network carries.
   */
  private readonly skippedLog: ThrottledLog;
  private readonly clearingLog: ThrottledLog;
  /** Home Assistant node ids and state topics of the known devices, built when a retained config needs checking. */
  private knownTopics: { nodes: Set<string>; states: Set<string> } | undefined;
  /** Device state topics cleared on this connection for stale configs (a device has a config per sensor). */
  private readonly clearedStates = new Set<string>();
  /** Stale configs of the hub's node, cleared once a connection has settled (stale-configs.ts). */
  private readonly staleConfigs: StaleConfigSweep;

  constructor(private readonly options: StaleDiscoveryOptions) {
    this.skippedLog = new ThrottledLog(options.logger, 5, 60_000, () => monotonicMs(),
      (count, seconds, last) => `${count} more MQTT messages over the size limit skipped in the last ${seconds} s; the last: ${last}`);
    this.clearingLog = new ThrottledLog(options.logger, 20, 60_000, () => monotonicMs(),
      (count, seconds, last) => `${count} more stale Home Assistant discovery configs cleared in the last ${seconds} s; the last: ${last}`);
    this.staleConfigs = new StaleConfigSweep(options.settleMs, (topic, object, stateTopic) => this.clearIfStale(topic, object, stateTopic));
  }

  /** The known devices changed (one added or removed): their topics are built again when next needed. */
  knownChanged(): void {
    this.knownTopics = undefined;
  }

  connected(): void {
    this.staleConfigs.connected();
    this.clearedStates.clear();
  }

  disconnected(): void {
    this.staleConfigs.disconnected();
  }

  close(): void {
    this.disconnected();
    for (const log of [this.skippedLog, this.clearingLog]) log.flush();
  }

  /** `<discoveryPrefix>/sensor/voice-hub_<instanceId>`: every config of this hub is right below it. */
  ownNode(): string {
    return `${this.options.names.discoveryPrefix}/sensor/${haHubNode(this.options.names.instanceId)}`;
  }

  /**
   * A retained config of the hub's node, read or not: judged once the connection settles (stale-configs.ts),
   * or at once when its object id is longer than any a hub names, so no twin of this hub can have
   * published it. Held until then, such configs (any client of the broker can leave thousands, each
   * topic up to 64 KiB) took hundreds of MiB for the first minute of every connection.
   */
  foundOwnConfig(topic: string, payload?: Buffer): boolean {
    const node = this.ownNode();
    if (!topic.startsWith(`${node}/`) || !topic.endsWith('/config')) return false;
    const object = topic.slice(node.length + 1, -'/config'.length);
    if (object.length > LONGEST_DEVICE_OBJECT) this.clearIfStale(topic, object, undefined);
    else this.staleConfigs.found(topic, object, payload && deviceStateTopicOf(payload, this.options.names.topicPrefix));
    return true;
  }

  /**
   * A message over the size limit, skipped unread. A retained one under the hub's own node still takes
   * part in the sweep: no config of ours is near the limit, so unless it has one of our names (which the
   * hub publishes again over it) it is stale, and left there Home Assistant would keep reading it.
   */
  onSkipped(m: SkippedMessage): void {
    this.skippedLog.warn(
      `skipped an MQTT message of ${m.bytes} bytes on '${shownTopic(m.topic)}' (QoS ${m.qos}) unread: over the ${MAX_INCOMING_PACKET_BYTES / 1024} KiB limit for incoming MQTT packets`);
    if (m.retained && !this.options.closing()) this.foundOwnConfig(m.topic);
  }

  /**
   * A retained config of this hub's node that neither the hub nor a known device accounts for was left
   * by an earlier run (a device deleted while the broker was away, whose clearing a restart abandoned;
   * a restored backup): left there, Home Assistant would show that device, available, for good. With
   * discovery switched off, every config an earlier run left is such a one.
   */
  private clearIfStale(topic: string, object: string, stateTopic: string | undefined): void {
    const { known, names, send } = this.options;
    this.knownTopics ??= {
      nodes: new Set(Array.from(known.keys(), haNodeId)),
      states: new Set(Array.from(known.keys(), (id) => deviceStateTopic(names.topicPrefix, id))),
    };
    const { nodes, states } = this.knownTopics;
    // The retained state of the device a config of this hub's node was for, if the hub has it no more:
    // its deletion's clearing never reached the broker (the broker away, then a restart or a kill -9).
    if (stateTopic !== undefined && !states.has(stateTopic) && !this.clearedStates.has(stateTopic)) {
      this.clearedStates.add(stateTopic);
      this.clearingLog.info(`clearing ${shownTopic(stateTopic)}: the retained state of a device this hub no longer has (its discovery config was left by an earlier run)`);
      send({ topic: stateTopic, payload: '', retain: true });
    }
    if (!this.options.homeAssistantDiscovery) {
      // Switched off: Home Assistant must not keep showing the hub and its devices from what was left.
      this.clearingLog.info(`clearing ${shownTopic(topic)}: Home Assistant discovery is off (Mqtt.HomeAssistantDiscovery)`);
      send({ topic, payload: '', retain: true });
      return;
    }
    if (HUB_SENSOR_OBJECTS.some((s) => haHubObject(s) === object)) return;
    if (SENSOR_OBJECTS.some((s) => object.endsWith(`_${s}`) && nodes.has(object.slice(0, -s.length - 1)))) return;
    this.clearingLog.info(`clearing ${shownTopic(topic)}: a Home Assistant discovery config left by an earlier run, of no device this hub has`);
    send({ topic, payload: '', retain: true });
  }
}
