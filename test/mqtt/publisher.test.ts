// MqttPublisher against a real mosquitto: what a subscriber such as Home Assistant actually sees.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startMosquitto, type Mosquitto } from '../support/mosquitto.js';
import { connectedPublisher, device, publisherOptions, Subscriber, waitUntil } from './helpers.js';

describe('MqttPublisher with a live broker', () => {
  let broker: Mosquitto;
  const cleanup: (() => Promise<unknown>)[] = [];
  before(async () => {
    broker = await startMosquitto();
  });
  after(async () => {
    for (const c of cleanup.reverse()) await c();
    await broker.stop();
  });
  const subscribe = async (filters: string[]) => {
    const sub = await Subscriber.connect(broker.port, filters);
    cleanup.push(() => sub.end());
    return sub;
  };
  const publisher = async (over = {}) => {
    const options = publisherOptions(broker.port, over);
    const pub = await connectedPublisher(options);
    cleanup.push(() => pub.close());
    return { pub, prefix: options.topicPrefix, ha: options.discoveryPrefix };
  };

  it('announces itself online and keeps device state retained', async () => {
    const { pub, prefix } = await publisher();
    pub.publishDeviceState(device('d1'));
    await waitUntil(() => pub.stats().published >= 7, 'online, 5 discovery configs and the state to be acknowledged');
    const sub = await subscribe([`${prefix}/#`]);
    await sub.barrier(`${prefix}/barrier`);
    assert.deepEqual(sub.on(`${prefix}/status`), [{ topic: `${prefix}/status`, payload: 'online', retain: true }]);
    const [state] = sub.on(`${prefix}/devices/d1/state`);
    assert.equal(state?.retain, true);
    assert.deepEqual(JSON.parse(state!.payload), {
      status: 'online',
      lastSeen: '2025-01-02T03:04:05.000Z',
      batteryLevel: 87,
      temperature: 41.5,
      memoryUsage: 33,
      cpuUsage: 12.5,
    });
    assert.deepEqual(pub.state(), { connected: true, broker: `127.0.0.1:${broker.port}` });
  });

  it('publishes retained Home Assistant discovery configs for a new device', async () => {
    const { pub, prefix, ha } = await publisher();
    pub.publishDeviceState(device('kitchen', { name: 'Kitchen', type: 'rpi-zero' }));
    await waitUntil(() => pub.stats().published >= 7, 'messages to be acknowledged');
    const sub = await subscribe([`${ha}/#`]);
    await sub.barrier(`${ha}/barrier`);
    const configs = sub.messages.filter((m) => m.topic.endsWith('/config'));
    assert.deepEqual(
      configs.map((m) => m.topic).sort(),
      ['battery', 'cpu', 'memory', 'status', 'temperature'].map((o) => `${ha}/sensor/kitchen/${o}/config`),
    );
    assert.ok(configs.every((m) => m.retain));
    const temperature = sub.on(`${ha}/sensor/kitchen/temperature/config`)[0]!;
    assert.deepEqual(JSON.parse(temperature.payload), {
      name: 'Temperature',
      unique_id: 'voice-hub_kitchen_temperature',
      state_topic: `${prefix}/devices/kitchen/state`,
      value_template: '{{ value_json.temperature }}',
      unit_of_measurement: '°C',
      state_class: 'measurement',
      device_class: 'temperature',
      availability_topic: `${prefix}/status`,
      payload_available: 'online',
      payload_not_available: 'offline',
      device: { identifiers: ['voice-hub_kitchen'], name: 'Kitchen', model: 'rpi-zero', manufacturer: 'voice-hub' },
    });
  });

  it('does not send discovery when it is turned off', async () => {
    const { pub, prefix, ha } = await publisher({ homeAssistantDiscovery: false });
    pub.publishDeviceState(device('d1'));
    await waitUntil(() => pub.stats().published >= 2, 'online and state to be acknowledged');
    const sub = await subscribe([`${ha}/#`, `${prefix}/#`]);
    await sub.barrier(`${prefix}/barrier`);
    assert.equal(sub.on(`${prefix}/devices/d1/state`).length, 1);
    assert.equal(sub.messages.filter((m) => m.topic.startsWith(`${ha}/`)).length, 0);
  });

  it('publishes session events, not retained', async () => {
    const { pub, prefix } = await publisher();
    const live = await subscribe([`${prefix}/sessions/#`]);
    const event = { type: 'started', sessionId: 's/1', deviceId: 'd1', timestamp: '2025-01-02T03:04:05.000Z' };
    pub.publishSessionEvent('s/1', event);
    const got = await live.waitFor((m) => m.topic === `${prefix}/sessions/s%2F1/event`, 'the session event');
    assert.deepEqual(JSON.parse(got.payload), event);
    assert.equal(got.retain, false);
    const late = await subscribe([`${prefix}/sessions/#`]);
    await late.barrier(`${prefix}/sessions/barrier`);
    assert.equal(late.on(`${prefix}/sessions/s%2F1/event`).length, 0, 'a later subscriber must not get old events');
  });

  it('removeDevice clears its retained state and discovery, and only its own', async () => {
    const { pub, prefix, ha } = await publisher();
    pub.publishDeviceState(device('gone/1'));
    pub.publishDeviceState(device('stays'));
    await waitUntil(() => pub.stats().published >= 13, 'both devices to be published');
    pub.removeDevice('gone/1');
    await waitUntil(() => pub.stats().published >= 19, 'the six clearing messages to be acknowledged');
    const sub = await subscribe([`${prefix}/#`, `${ha}/#`]);
    await sub.barrier(`${prefix}/barrier`);
    const leftovers = sub.messages.filter((m) => m.topic.includes('gone'));
    assert.deepEqual(leftovers, [], 'a new subscriber gets nothing retained for the removed device');
    assert.equal(sub.on(`${prefix}/devices/stays/state`).length, 1);
    assert.equal(sub.messages.filter((m) => m.topic.startsWith(`${ha}/sensor/stays/`)).length, 5);
  });

  it("re-sends discovery when Home Assistant's birth message arrives", async () => {
    const { pub, ha } = await publisher();
    pub.publishDeviceState(device('d1'));
    await waitUntil(() => pub.stats().published >= 7, 'messages to be acknowledged');
    const sub = await subscribe([`${ha}/sensor/#`]);
    await sub.barrier(`${ha}/sensor/barrier`);
    const live = () => sub.messages.filter((m) => m.topic.endsWith('/config') && !m.retain);
    assert.equal(live().length, 0);
    await sub.publish(`${ha}/status`, 'offline');
    await sub.publish(`${ha}/status`, 'online');
    await waitUntil(() => live().length >= 5, 'discovery configs sent again');
    assert.deepEqual(live().map((m) => m.topic.split('/')[3]).sort(), ['battery', 'cpu', 'memory', 'status', 'temperature']);
  });

  it('syncDevices publishes every known device', async () => {
    const { pub, prefix } = await publisher({ homeAssistantDiscovery: false });
    pub.syncDevices([device('a'), device('b', { status: 'offline' })]);
    await waitUntil(() => pub.stats().published >= 3, 'the states to be acknowledged');
    const sub = await subscribe([`${prefix}/devices/#`]);
    await sub.barrier(`${prefix}/devices/barrier`);
    assert.deepEqual(sub.messages.filter((m) => m.retain).map((m) => [m.topic, JSON.parse(m.payload).status]).sort(), [
      [`${prefix}/devices/a/state`, 'online'],
      [`${prefix}/devices/b/state`, 'offline'],
    ]);
  });

  it('close() leaves offline retained, and is idempotent', async () => {
    const { pub, prefix } = await publisher();
    await Promise.all([pub.close(), pub.close()]);
    await pub.close();
    assert.equal(pub.state().connected, false);
    pub.publishDeviceState(device('after-close')); // must neither throw nor queue
    assert.equal(pub.stats().queued, 0);
    const sub = await subscribe([`${prefix}/status`]);
    await sub.barrier(`${prefix}/status`);
    assert.equal(sub.messages[0]?.payload, 'offline');
    assert.equal(sub.messages[0]?.retain, true);
  });
});
