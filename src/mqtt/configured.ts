// The MQTT publisher that matches the `mqtt` configuration category right now. A technician who fixes
// the broker address over `PUT /api/config/mqtt` expects it to apply at once, as voice and device
// values do, not at the next restart: the old connection says `offline` and closes, a new one starts
// and publishes every known device again. An empty broker address switches MQTT off.
import { errorText } from '../errors.js';
import { createMqttCheck, MQTT_TAGS, taggedCheck, type HealthCheck } from '../health/checks.js';
import type { Logger } from '../log/logger.js';
import type { MqttSettings } from '../settings/categories.js';
import type { BrokerMessageRepository } from '../store/types.js';
import type { SessionEvent } from '../voice/session-events.js';
import type { MqttDevice } from './discovery.js';
import { HubStatus } from './hub-status.js';
import type { MqttPublisher } from './publisher.js';
import type { OutgoingMessage } from './queue.js';
import type { SessionEventMessage } from './session-events.js';

export interface ConfiguredMqttDeps {
  /** A new, not yet started publisher for these settings. */
  create(settings: MqttSettings): MqttPublisher;
  /** Every device, to publish on a new connection. */
  devices(): readonly MqttDevice[];
  /** The running version, part of the hub's state. */
  version: string;
  /** Where messages the broker never got wait from a clean stop to the next start. */
  kept: BrokerMessageRepository;
  logger: Logger;
}

/** Session events held while no publisher is in place, at most: a publisher's own queue keeps no more (publisher.ts). */
const HELD_EVENTS_KEPT = 1000;

/** What is published while no publisher is in place, for the one that comes. */
type Held = { kind: 'event'; sessionId: string; event: SessionEventMessage } | { kind: 'removal'; deviceId: string };

/** "3 MQTT messages (2 session events)": events are news; the rest clear deleted devices' retained topics. */
function countText(messages: readonly OutgoingMessage[]): string {
  const events = messages.filter((m) => !m.retain).length;
  return `${messages.length} MQTT message(s) (${events} session event(s))`;
}

/** When kept messages are sent: by the next start's publisher, or by the next one a settings change opens. */
const AFTER_NEXT_START = 'sent after the next start';
const ONCE_A_BROKER_IS_SET = 'sent once a broker is set again';

/** How often the kept messages a publisher took over are looked for in its queue, until the broker has them all. */
const TAKEN_CHECK_MS = 1000;

/** Settings that connect alike: with no broker address nothing connects, whatever the port or user name. */
const sameSettings = (a: MqttSettings, b: MqttSettings): boolean =>
  a.brokerAddress === b.brokerAddress && (a.brokerAddress === '' || (a.port === b.port && a.username === b.username));

export class ConfiguredMqttPublisher {
  private publisher: MqttPublisher | undefined;
  private settings: MqttSettings | undefined;
  /** The settings of the latest `apply`. */
  private wanted: MqttSettings | undefined;
  /** Replacements run one after another: two quick PUTs must not leave two connections. */
  private changing: Promise<void> = Promise.resolve();
  private closed = false;
  /** Kept across publishers: sessions and devices do not start over when the broker settings change. */
  private readonly hub: HubStatus;
  /**
   * Session events and device removals while no publisher is in place: before `start` (the ends of
   * sessions a crash interrupted, recorded at start-up) and while a settings change closes the old
   * connection (up to twice its 2 s close timeout with a stuck broker). Handed to the next publisher;
   * undefined while one is in place (or MQTT is off). Events are capped at HELD_EVENTS_KEPT, the newest
   * kept; removals are bounded by the devices there are.
   */
  private held: Held[] | undefined = [];
  private heldEvents = 0;
  /**
   * The kept messages handed to a publisher (and on to the next one a settings change opens) that the
   * broker may not have yet: they stay in the database until it has them all.
   */
  private taken: OutgoingMessage[] = [];
  private takenWatch: NodeJS.Timeout | undefined;

  constructor(private readonly deps: ConfiguredMqttDeps) {
    this.hub = new HubStatus(deps.version);
  }

  /** The publisher in use; undefined while MQTT is off. */
  current(): MqttPublisher | undefined {
    return this.publisher;
  }

  /** Starts with the settings in effect at start-up. */
  start(settings: MqttSettings): void {
    for (const device of this.deps.devices()) this.hub.deviceChanged(device);
    this.settings = { ...settings };
    this.publisher = this.open(settings);
    this.handOver([]);
  }

  /**
   * Applies new settings: resolves once the old connection is closed and the new one started (not
   * connected: the broker may be down, and that is health's to report). Same settings: nothing happens.
   */
  apply(settings: MqttSettings): Promise<void> {
    this.wanted = { ...settings };
    // Always settles: a failed replacement is logged and must not block the ones after it.
    this.changing = this.changing
      .then(() => this.replace())
      .catch((e: unknown) => this.deps.logger.error(`applying the MQTT settings failed: ${errorText(e)}`));
    return this.changing;
  }

  /** Moves to the newest wanted settings; changes that arrive meanwhile are not connected to in turn. */
  private async replace(): Promise<void> {
    if (this.closed || !this.wanted || (this.settings && sameSettings(this.settings, this.wanted))) return;
    const old = this.publisher;
    this.publisher = undefined;
    this.held ??= [];
    this.settings = this.wanted;
    if (old) await old.close().catch((e: unknown) => this.deps.logger.warn(`closing the old MQTT connection: ${errorText(e)}`));
    // What the old broker never got (it was unreachable: often why its settings changed) goes to the new one.
    const undelivered = old?.undelivered() ?? [];
    // A stop came while the old connection closed, or MQTT is switched off: no publisher will send what
    // the old one never delivered, nor what was held meanwhile (the stop's own `ended` events among
    // them), so it is kept for the next start or the next broker, as a stop keeps it.
    if (this.closed || !this.wanted.brokerAddress) {
      const held = this.takeHeld();
      // The messages the old publisher would have sent for what was held (with MQTT off before, none).
      const unsent = old ? [...undelivered, ...held.flatMap((h) => (h.kind === 'event' ? [old.sessionEventMessage(h.sessionId, h.event)] : old.removalMessages(h.deviceId)))] : [];
      await this.keep(unsent, this.closed ? AFTER_NEXT_START : ONCE_A_BROKER_IS_SET);
      if (this.closed) return;
    }
    const next = (this.settings = this.wanted);
    this.publisher = this.open(next);
    this.handOver(this.publisher ? undelivered : []);
    this.deps.logger.info(next.brokerAddress ? `MQTT settings changed: now ${next.brokerAddress}:${next.port}` : 'MQTT switched off (broker address empty)');
  }

  publishDeviceState(device: MqttDevice): void {
    this.publisher?.publishDeviceState(device);
    if (this.hub.deviceChanged(device)) this.publisher?.publishHubState(this.hub.state);
  }

  publishSessionEvent(sessionId: string, event: SessionEventMessage): void {
    if (this.held) {
      this.held.push({ kind: 'event', sessionId, event });
      if (++this.heldEvents > HELD_EVENTS_KEPT) {
        this.held.splice(this.held.findIndex((h) => h.kind === 'event'), 1);
        this.heldEvents--;
      }
      return;
    }
    this.publisher?.publishSessionEvent(sessionId, event);
  }

  /** Every session event, for the hub's own state (active sessions, upstream). */
  sessionChanged(event: SessionEvent): void {
    if (this.hub.sessionEvent(event)) this.publisher?.publishHubState(this.hub.state);
  }

  removeDevice(deviceId: string): void {
    if (this.held) this.held.push({ kind: 'removal', deviceId });
    else this.publisher?.removeDevice(deviceId);
    if (this.hub.deviceDeleted(deviceId)) this.publisher?.publishHubState(this.hub.state);
  }

  /** The `mqtt` entry of /health, for whichever publisher is current when it runs. */
  healthCheck(): HealthCheck {
    return taggedCheck(MQTT_TAGS, async () => {
      const publisher = this.publisher;
      const settings = this.settings;
      if (!publisher && this.held && settings?.brokerAddress) {
        // Between publishers: "disabled" would be untrue, and nothing is connected yet.
        return { status: 'Degraded', description: `not connected: the MQTT settings are changing to ${settings.brokerAddress}:${settings.port} (closing the previous connection)`, tags: [...MQTT_TAGS] };
      }
      if (!publisher) return { status: 'Healthy', description: 'MQTT disabled (Mqtt.BrokerAddress is empty)', tags: [...MQTT_TAGS] };
      return createMqttCheck(publisher)();
    });
  }

  /**
   * Says `offline` and disconnects; no later `apply` opens anything. What the broker never got (it was
   * unreachable) is kept for the next start, which sends it before anything of its own.
   */
  async close(): Promise<void> {
    this.closed = true;
    await this.changing;
    const publisher = this.publisher;
    this.publisher = undefined;
    this.stopWatchingTaken();
    if (!publisher) return;
    try {
      await publisher.close();
    } finally {
      await this.keep(publisher.undelivered());
    }
  }

  private async keep(messages: OutgoingMessage[], until = AFTER_NEXT_START): Promise<void> {
    // Called with nothing to keep too: what was taken over and delivered since is kept no more (what was
    // taken and not delivered is among `messages`, drained from the publisher it went to).
    this.stopWatchingTaken();
    this.taken = [];
    const what = countText(messages);
    try {
      await this.deps.kept.keep(messages);
      if (messages.length > 0) this.deps.logger.info(`the MQTT broker did not get ${what}: kept in the database, ${until}`);
    } catch (e) {
      // With nothing new to keep, the messages taken stay kept: the next start sends them once more.
      if (messages.length > 0) this.deps.logger.warn(`the MQTT broker did not get ${what}, and keeping them for the next start failed: ${errorText(e)}`);
    }
  }

  /** Once the broker has every kept message taken over, they are no longer kept. */
  private watchTaken(): void {
    this.takenWatch ??= setInterval(() => {
      const publisher = this.publisher;
      if (!publisher || publisher.holdsAny(this.taken)) return;
      this.stopWatchingTaken();
      this.taken = [];
      try {
        this.deps.kept.delivered();
      } catch {
        // The store is closing: the stop's keep settles them.
      }
    }, TAKEN_CHECK_MS).unref();
  }

  private stopWatchingTaken(): void {
    clearInterval(this.takenWatch);
    this.takenWatch = undefined;
  }

  /**
   * Gives the publisher now in place what its predecessor never delivered, then what was held while
   * there was none. A removal of a device that exists again (registered meanwhile) is left out: the
   * publisher has just published it from the store.
   */
  private handOver(undelivered: OutgoingMessage[]): void {
    const held = this.takeHeld();
    const publisher = this.publisher;
    if (!publisher) return;
    // Kept by an earlier run's clean stop: older than anything of this run. Left kept while MQTT is off.
    const kept = this.deps.kept.take();
    if (kept.length > 0) {
      this.deps.logger.info(`sending ${countText(kept)} that the MQTT broker did not get before the last stop`);
      this.taken.push(...kept);
      this.watchTaken();
    }
    if (kept.length + undelivered.length > 0) publisher.takeOver([...kept, ...undelivered]);
    if (held.length === 0) return;
    const existing = new Set(this.deps.devices().map((d) => d.id));
    for (const h of held) {
      if (h.kind === 'event') publisher.publishSessionEvent(h.sessionId, h.event);
      else if (!existing.has(h.deviceId)) publisher.removeDevice(h.deviceId);
    }
  }

  /** What was held while no publisher was in place; none is held from now on. */
  private takeHeld(): Held[] {
    const held = this.held ?? [];
    this.held = undefined;
    this.heldEvents = 0;
    return held;
  }

  private open(settings: MqttSettings): MqttPublisher | undefined {
    if (!settings.brokerAddress) return undefined;
    const publisher = this.deps.create(settings);
    publisher.syncDevices(this.deps.devices());
    publisher.publishHubState(this.hub.state);
    publisher.start();
    return publisher;
  }
}
