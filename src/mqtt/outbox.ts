// The way to the broker, kept apart from what is published: every limit that stops a slow or dead broker
// from growing the hub's memory (the bounded queue, the retained topics it holds, the messages handed to
// mqtt.js at once) and the counts /health reports from them are here, where they can be read together.
import type { Logger } from '../log/logger.js';
import { durationText } from '../log/duration.js';
import { ThrottledLog } from '../log/throttled.js';
import { monotonicMs } from '../monotonic-clock.js';
import { AcknowledgementWatch } from './acknowledgements.js';
import type { RetainedBacklog } from './backlog.js';
import type { BrokerConnection } from './client.js';
import { SENSOR_OBJECTS } from './discovery.js';
import { OutgoingQueue, type OutgoingMessage } from './queue.js';
import { shownTopic } from './topics.js';

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

export interface OutboxOptions {
  /** `host:port` of the broker, for the log. */
  broker: string;
  logger: Logger;
  /** MqttPublisherOptions.queueLimit and .unacknowledgedLimitMs, their defaults applied. */
  queueLimit: number;
  unacknowledgedLimitMs: number;
  /** MqttPublisherOptions.retainedQueueLimit as given: its default grows with `mostKnown`. */
  retainedQueueLimit: number | undefined;
  /** The most devices the hub has known at once. */
  mostKnown: () => number;
  /** Whether the publisher is closing: nothing more is queued or sent. */
  closing: () => boolean;
}

export class Outbox {
  private readonly queue: OutgoingQueue;
  /** Alternates the pump between the queue and the backlog, so a stream of either cannot starve the other. */
  private backlogTurn = false;
  private readonly log: Logger;
  private readonly retainedDropLog: ThrottledLog;
  private readonly eventDropLog: ThrottledLog;
  private publishedCount = 0;
  private inFlightCount = 0;
  /** Messages of the current connection the broker has not acknowledged. */
  private readonly acknowledgements: AcknowledgementWatch;
  /** Counts connections, so acknowledgements from an earlier one do not free slots of the current one. */
  private generation = 0;
  private refused = 0;
  /**
   * Messages from the queue handed to mqtt.js and not acknowledged, in the order sent. At close they are
   * undelivered as much as those still queued: a broker gone without a word (its host powered off) leaves
   * them in mqtt.js until the process ends. What came from the backlog is not among them: the next
   * publisher owes that state again from its latest values, and an older copy must not follow them.
   */
  private readonly unacknowledged = new Set<OutgoingMessage>();

  constructor(
    private readonly connection: BrokerConnection,
    private readonly backlog: RetainedBacklog,
    private readonly options: OutboxOptions,
  ) {
    this.log = options.logger;
    this.retainedDropLog = new ThrottledLog(options.logger, 1, 60_000, () => monotonicMs(),
      (count, seconds) => `${count} more retained MQTT topics dropped from the full queue in the last ${seconds} s; their retained messages stay at the broker`);
    this.eventDropLog = new ThrottledLog(options.logger, 1, 60_000, () => monotonicMs(),
      (count, seconds) => `${count} more MQTT session events dropped from the full queue in the last ${seconds} s`);
    this.queue = new OutgoingQueue(options.queueLimit, () => this.retainedQueueLimit());
    const broker = options.broker;
    this.acknowledgements = new AcknowledgementWatch(options.unacknowledgedLimitMs, {
      stalled: (unacknowledged) =>
        this.log.warn(
          `MQTT broker ${broker} has not acknowledged a message for more than ${durationText(this.acknowledgements.limitMs)} ` +
            `(${unacknowledged} unacknowledged, ${this.queued} waiting behind them) although the connection is open; ` +
            `/health says Degraded until it does`,
        ),
      resumed: () => this.log.info(`MQTT broker ${broker} acknowledges messages again`),
      abandoned: () => this.log.info(`MQTT broker ${broker}: the connection that left messages unacknowledged has closed`),
    });
  }

  /** Messages the broker acknowledged. */
  get published(): number {
    return this.publishedCount;
  }

  /** Messages given up: pushed out of a full queue, or refused by the broker. */
  get dropped(): number {
    return this.queue.dropped + this.refused;
  }

  /** Messages waiting for the broker: in the queue, and the retained configs and states owed to it. */
  get queued(): number {
    return this.queue.size + this.backlog.size;
  }

  /** Messages sent and not yet acknowledged by the broker. */
  get inFlight(): number {
    return this.inFlightCount;
  }

  /** While the connected broker has left the oldest message unacknowledged past the limit: how many wait. */
  stall(): { unacknowledged: number; limitMs: number } | undefined {
    return this.acknowledgements.stall();
  }

  /**
   * Through the bounded queue, straight on to the broker when connected and it keeps up. mqtt.js holds
   * every unacknowledged QoS 1 message, so a broker that stalls with the socket still open would grow
   * that store without limit: at most MAX_IN_FLIGHT messages are handed to it at a time.
   */
  send(message: OutgoingMessage): void {
    if (this.options.closing()) return;
    const dropped = this.queue.push(message);
    if (dropped && !dropped.retain) {
      // News lost for good (a down broker's queue keeps the newest): the count alone was in /health only.
      this.eventDropLog.warn(
        `MQTT queue full: ${this.queue.capacity} session events already wait for broker ${this.options.broker}; ` +
          `dropped the oldest, on ${shownTopic(dropped.topic)}, which no subscriber will get`,
      );
    } else if (dropped) {
      this.retainedDropLog.warn(
        `MQTT queue full: ${this.retainedQueueLimit()} retained topics already wait for broker ${this.options.broker}; ` +
          `dropped the oldest, ${shownTopic(dropped.topic)}, whose retained message stays at the broker`,
      );
    }
    this.pump();
  }

  /** A queued retained message is about to be superseded: it is not sent (nor counted as dropped). */
  discardRetained(topic: string): void {
    this.queue.discardRetained(topic);
  }

  /** Whether one of `messages` (the very objects given to `send`) is queued or not yet acknowledged. */
  holdsAny(messages: ReadonlySet<OutgoingMessage>): boolean {
    for (const message of this.unacknowledged) if (messages.has(message)) return true;
    return this.queue.holdsAny(messages);
  }

  /**
   * What the broker has not acknowledged of the queue's messages, sent or not, in publish order; none are
   * held afterwards. For after `close`.
   */
  drain(): OutgoingMessage[] {
    const sent = [...this.unacknowledged];
    this.unacknowledged.clear();
    return [...sent, ...this.queue.drain()];
  }

  /** Moves queued and owed messages to the broker, taking turns, while it is connected and keeping up. */
  pump(): void {
    while (!this.options.closing() && this.connection.connected && this.inFlightCount < MAX_IN_FLIGHT) {
      this.backlogTurn = !this.backlogTurn;
      const owed = this.backlogTurn ? this.backlog.next() : undefined;
      const queued = owed === undefined ? this.queue.shift() : undefined;
      const next = owed ?? queued ?? this.backlog.next();
      if (next === undefined) return;
      this.transmit(next, queued !== undefined);
    }
  }

  /** Straight to the broker, ahead of anything queued. `queued`: it came from the queue (see `unacknowledged`). */
  transmit(message: OutgoingMessage, queued = false): void {
    const generation = this.generation;
    this.inFlightCount++;
    const acknowledged = this.acknowledgements.sent();
    if (queued) this.unacknowledged.add(message);
    this.connection.publish(message, (error) => {
      if (generation === this.generation) {
        this.inFlightCount--;
        acknowledged();
      }
      // Refused by the broker, it is given up; failed because the connection is closing, it was not delivered.
      if (error === undefined || !this.options.closing()) this.unacknowledged.delete(message);
      if (error === undefined) this.publishedCount++;
      else if (!this.options.closing()) {
        this.refused++;
        this.log.debug(`MQTT publish to ${message.topic} failed: ${error.message}`);
      }
      this.pump();
    });
  }

  connected(): void {
    // Messages in flight on the old connection are mqtt.js' to resend; they no longer hold our slots.
    this.generation++;
    this.inFlightCount = 0;
    this.acknowledgements.reset();
  }

  disconnected(): void {
    this.acknowledgements.reset();
  }

  close(): void {
    this.acknowledgements.close();
    for (const log of [this.retainedDropLog, this.eventDropLog]) log.flush();
  }

  /** Distinct retained topics the queue holds at most (RETAINED_QUEUE_MIN_DEVICES). */
  private retainedQueueLimit(): number {
    return this.options.retainedQueueLimit ?? TOPICS_PER_DEVICE * Math.max(RETAINED_QUEUE_MIN_DEVICES, this.options.mostKnown());
  }
}
