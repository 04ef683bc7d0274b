// A hub with more devices than the outgoing queue holds messages (six retained topics a device, 1,000
// queued messages): what the broker and Home Assistant get after a connect, a reconnect to a broker
// that lost its retained messages, and Home Assistant's birth message. Real mosquitto throughout.
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { MqttPublisher } from '../../src/mqtt/publisher.js';
import { startMosquitto, type Mosquitto } from '../support/mosquitto.js';
import { waitUntil } from '../support/wait.js';
import { connectedPublisher, device, publisherOptions, Subscriber } from './helpers.js';

// Above 1,000 retained messages in all, below the 1,000 messages mosquitto queues for one subscriber
// (max_queued_messages) in each subscription the tests read them through.
const DEVICES = 190;
const fleet = Array.from({ length: DEVICES }, (_, i) => device(`dev-${i}`, { batteryLevel: i % 100 }));
/** Every device's five configs and the hub's four. */
const CONFIGS = DEVICES * 5 + 4;

describe(`a hub with ${DEVICES} devices and the default queue of 1,000 messages`, () => {
  const cleanup: (() => Promise<unknown> | void)[] = [];
  after(async () => {
    for (const c of cleanup.reverse()) await c();
  });
  const broker = async (): Promise<Mosquitto> => {
    const b = await startMosquitto();
    cleanup.push(() => b.stop());
    return b;
  };
  const subscribe = async (b: Mosquitto, filters: string[]): Promise<Subscriber> => {
    const sub = await Subscriber.connect(b.port, filters);
    cleanup.push(() => sub.end());
    return sub;
  };
  const distinct = (topics: string[]): number => new Set(topics).size;
  let states: Subscriber;
  /** What a new subscriber gets retained: every config and every state. */
  const assertAllRetained = async (b: Mosquitto, options: { topicPrefix: string; discoveryPrefix: string }): Promise<void> => {
    states = await subscribe(b, [`${options.topicPrefix}/devices/#`]);
    await states.barrier(`${options.topicPrefix}/devices/barrier`);
    assert.equal(states.messages.filter((m) => m.retain && m.topic.endsWith('/state')).length, DEVICES);
    const configs = await subscribe(b, [`${options.discoveryPrefix}/#`]);
    await configs.barrier(`${options.discoveryPrefix}/barrier`);
    assert.equal(distinct(configs.messages.filter((m) => m.retain && m.topic.endsWith('/config')).map((m) => m.topic)), CONFIGS);
  };

  it('every device state and discovery config is retained after the first connect', async () => {
    const b = await broker();
    const options = publisherOptions(b.port);
    // As the service does: the devices of the store first, then the connection.
    const pub = new MqttPublisher(options);
    cleanup.push(() => pub.close());
    pub.syncDevices(fleet);
    pub.start();
    await waitUntil(() => pub.state().connected && pub.stats().queued === 0 && pub.stats().inFlight === 0, 'everything to be delivered', 20_000);
    await assertAllRetained(b, options);
    assert.equal(JSON.parse(states.on(`${options.topicPrefix}/devices/dev-150/state`)[0]!.payload).batteryLevel, 50);
    assert.equal(pub.stats().dropped, 0);
  });

  it('a broker restarted without its retained messages gets all of them again', async () => {
    const b = await broker();
    const options = publisherOptions(b.port);
    const pub = await connectedPublisher(options);
    cleanup.push(() => pub.close());
    pub.syncDevices(fleet);
    await waitUntil(() => pub.stats().queued === 0 && pub.stats().inFlight === 0, 'the first round', 20_000);
    await b.restart();
    await waitUntil(() => pub.state().connected, 'the publisher to reconnect', 15_000);
    await waitUntil(() => pub.stats().queued === 0 && pub.stats().inFlight === 0, 'the resync', 20_000);
    await assertAllRetained(b, options);
    assert.equal(pub.stats().dropped, 0);
  });

  it("Home Assistant's birth message brings every discovery config again", async () => {
    const b = await broker();
    const options = publisherOptions(b.port);
    const pub = await connectedPublisher(options);
    cleanup.push(() => pub.close());
    pub.syncDevices(fleet);
    await waitUntil(() => pub.stats().queued === 0 && pub.stats().inFlight === 0, 'the first round', 20_000);
    const ha = await subscribe(b, [`${options.discoveryPrefix}/sensor/#`]);
    await ha.barrier(`${options.discoveryPrefix}/sensor/barrier`);
    const live = () => ha.messages.filter((m) => m.topic.endsWith('/config') && !m.retain).map((m) => m.topic);
    await ha.publish(`${options.discoveryPrefix}/status`, 'online');
    await waitUntil(() => distinct(live()) === CONFIGS, `all ${CONFIGS} configs sent again`, 10_000).catch(() => {});
    assert.equal(distinct(live()), CONFIGS);
    assert.equal(pub.stats().dropped, 0);
  });
});
