// Shared pieces of the MQTT tests: a recording subscriber (plain mqtt.js, as Home Assistant would
// be), bounded waits, and publishers with their own topic prefixes so tests never see each other.
import { randomBytes, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import mqtt, { type MqttClient } from 'mqtt';
import type { LogLevelName } from '../../src/config/types.js';
import { createLogger, silentLogger, type Logger } from '../../src/log/logger.js';
import { stoppedListeningText } from '../../src/mqtt/connection-reasons.js';
import type { MqttDevice } from '../../src/mqtt/discovery.js';
import { ConfiguredMqttPublisher } from '../../src/mqtt/configured.js';
import { MqttPublisher, type MqttPublisherOptions } from '../../src/mqtt/publisher.js';
import type { MqttSettings } from '../../src/settings/categories.js';
import type { BrokerMessageRepository } from '../../src/store/types.js';
import { waitUntil } from '../support/wait.js';

export interface Received {
  topic: string;
  payload: string;
  retain: boolean;
}

export class Subscriber {
  readonly messages: Received[] = [];
  private constructor(readonly client: MqttClient) {
    client.on('message', (topic, payload, packet) => {
      this.messages.push({ topic, payload: payload.toString('utf8'), retain: packet.retain });
    });
  }

  /** Connects and subscribes to `filters`; resolves once the broker has acknowledged the subscription. */
  static async connect(port: number, filters: string[]): Promise<Subscriber> {
    const client = await mqtt.connectAsync({
      host: '127.0.0.1',
      port,
      clientId: `test-sub-${randomUUID()}`,
      reconnectPeriod: 0,
      connectTimeout: 5000,
    });
    const sub = new Subscriber(client);
    await client.subscribeAsync(filters, { qos: 1 });
    return sub;
  }

  on(topic: string): Received[] {
    return this.messages.filter((m) => m.topic === topic);
  }

  async waitFor(predicate: (m: Received) => boolean, what: string, timeoutMs = 10_000): Promise<Received> {
    await waitUntil(() => this.messages.some(predicate), what, timeoutMs);
    return this.messages.find(predicate)!;
  }

  /**
   * Publishes a marker on `topic` (which the subscription must cover) and waits for it to come back.
   * The broker sends retained messages right after SUBACK, ahead of anything published later, so once
   * the marker is here every retained message this subscription will ever get has arrived.
   */
  async barrier(topic: string): Promise<void> {
    const marker = randomUUID();
    await this.client.publishAsync(topic, marker, { qos: 1 });
    await this.waitFor((m) => m.topic === topic && m.payload === marker, `barrier on ${topic}`);
  }

  publish(topic: string, payload: string, retain = false): Promise<unknown> {
    return this.client.publishAsync(topic, payload, { qos: 1, retain });
  }

  end(): Promise<void> {
    return this.client.endAsync(true);
  }
}

/** Options for a publisher against `port` with topic prefixes and client id unique to this call. */
export function publisherOptions(port: number, overrides: Partial<MqttPublisherOptions> = {}): MqttPublisherOptions {
  const tag = randomUUID().slice(0, 8);
  return {
    brokerAddress: '127.0.0.1',
    port,
    username: '',
    password: '',
    topicPrefix: `vh-${tag}`,
    homeAssistantDiscovery: true,
    discoveryPrefix: `ha-${tag}`,
    logger: silentLogger,
    instanceId: randomBytes(6).toString('hex'),
    version: '9.8.7-test',
    hostname: `test-${tag}`,
    keepaliveSeconds: 2,
    reconnectMinMs: 100,
    reconnectMaxMs: 500,
    ...overrides,
  };
}

/** A logger for the `Mqtt` category that keeps its lines (no timestamps), from `level` up. */
export function capturedLog(level: LogLevelName = 'Information'): { logger: Logger; lines: string[] } {
  const lines: string[] = [];
  return { lines, logger: createLogger({ levels: { Default: level }, write: (l) => lines.push(l), journald: false, timestamps: false }, 'Mqtt') };
}

/** A regular expression source for stoppedListeningText of any duration. */
export const STOPPED_LISTENING = stoppedListeningText(0).replace(/[()]/g, '\\$&').replace('0 ms', '(?:\\d+ ms|\\d+(?:\\.\\d+)? s)');

/** The instance id a service keeps in its data directory. */
export const instanceIdOf = (dataDir: string): string => readFileSync(path.join(dataDir, 'instance-id'), 'utf8').trim();

export async function connectedPublisher(options: MqttPublisherOptions): Promise<MqttPublisher> {
  const publisher = new MqttPublisher(options);
  publisher.start();
  await waitUntil(() => publisher.state().connected, 'publisher to connect');
  return publisher;
}

export const device = (id: string, over: Partial<MqttDevice> = {}): MqttDevice => ({
  id,
  name: `Device ${id}`,
  type: 'esp32-s3',
  status: 'online',
  lastSeen: '2025-01-02T03:04:05.000Z',
  batteryLevel: 87,
  temperature: 41.5,
  memoryUsage: 33,
  cpuUsage: 12.5,
  ...over,
});

/**
 * The service's MQTT side as wiring builds it, without devices: a ConfiguredMqttPublisher for the broker on
 * `port` that keeps what it could not deliver in `kept` (a store's broker messages), started. Its topic
 * prefix is a fresh one (publisherOptions).
 */
export function startedConfiguredPublisher(port: number, kept: BrokerMessageRepository, logger: Logger): { mqtt: ConfiguredMqttPublisher; settings: MqttSettings; prefix: string } {
  const options = publisherOptions(port, { logger });
  const mqtt = new ConfiguredMqttPublisher({
    create: (settings) => new MqttPublisher({ ...options, ...settings }),
    devices: () => [],
    version: options.version,
    kept,
    logger,
  });
  const settings: MqttSettings = { brokerAddress: '127.0.0.1', port, username: '' };
  mqtt.start(settings);
  return { mqtt, settings, prefix: options.topicPrefix };
}
