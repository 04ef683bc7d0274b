// Two hubs on one broker, each with a device of the same id. Configured alike except for their data
// dirs and ports (the same topic and discovery prefixes, both on one host name): before each hub had an
// instance id, both connected as `voice-hub-<hostname>` and the broker closed one connection for the
// other over and over, and both published the same discovery topics and unique ids, so the device of
// one hub replaced the other's in Home Assistant. The hubs' own topics stay `<Mqtt.TopicPrefix>/...`
// (subscribers rely on that layout), so hubs that should also keep their state and availability apart
// are given different prefixes: the second part. A real mosquitto and real services.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { call } from '../support/http.js';
import { startMosquitto, type Mosquitto } from '../support/mosquitto.js';
import { startService, type TestService } from '../support/service.js';
import { adminToken, registerDevice } from '../support/tokens.js';
import { sleep, waitUntil } from '../support/wait.js';
import { instanceIdOf, Subscriber, type Received } from './helpers.js';

const DEVICE = 'kitchen';
const SENSORS = ['battery', 'cpu', 'memory', 'status', 'temperature'];
const HUB_SENSORS = ['active_sessions', 'devices_online', 'upstream', 'version'];
/** How long both hubs must stay connected side by side. */
const SIDE_BY_SIDE_MS = 60_000;

interface Hub {
  svc: TestService;
  id: string;
  token: string;
}

/** The discovery configs a subscriber holds now, by topic (the latest message of each; empty = cleared). */
const latestByTopic = (messages: Received[], prefix: string): Map<string, string> => {
  const out = new Map<string, string>();
  for (const m of messages) if (m.topic.startsWith(prefix)) out.set(m.topic, m.payload);
  return out;
};

const connected = (svc: TestService): boolean => svc.app.mqtt.current()?.state().connected === true;

/** The fields of a discovery config these tests read. */
interface DiscoveryConfig {
  unique_id: string;
  state_topic: string;
  availability_topic: string;
  origin: unknown;
  device: { identifiers: string[]; via_device?: string; sw_version?: string };
}

/** A hub's discovery configs by object id (`kitchen_battery`, `hub_upstream`, ...), parsed. */
const configsOf = (configs: Map<string, string>, id: string): Map<string, DiscoveryConfig> => {
  const node = `homeassistant/sensor/voice-hub_${id}/`;
  const out = new Map<string, DiscoveryConfig>();
  for (const [topic, payload] of configs) {
    if (topic.startsWith(node) && payload !== '') out.set(topic.slice(node.length, -'/config'.length), JSON.parse(payload));
  }
  return out;
};

describe('two hubs on one broker, alike but for their data dirs and ports', () => {
  let broker: Mosquitto;
  let ha: Subscriber;
  const hubs: Hub[] = [];
  const flags = () => ({ 'Mqtt.BrokerAddress': '127.0.0.1', 'Mqtt.Port': broker.port });
  /** Lines that mean a hub lost its broker connection at some point. */
  const dropLines = (svc: TestService): string[] => svc.logs.filter((l) => /reconnected to MQTT broker|MQTT broker .* unavailable/.test(l));

  before(async () => {
    broker = await startMosquitto({ logNotices: true });
    // What Home Assistant subscribes to, and everything the hubs publish.
    ha = await Subscriber.connect(broker.port, ['homeassistant/#', 'voice-hub/#']);
    for (let i = 0; i < 2; i++) {
      const svc = await startService({ flags: flags() });
      await waitUntil(() => connected(svc), `hub ${i} to connect`);
      const device = await registerDevice(svc, { deviceId: DEVICE, deviceName: `Kitchen ${i}` });
      hubs.push({ svc, id: instanceIdOf(svc.dataDir), token: device.token });
    }
  });
  after(async () => {
    await ha?.end();
    for (const h of hubs) await h.svc.stop();
    await broker?.stop();
  });

  it('each hub has its own instance id and client id, and both stay connected for a minute', async () => {
    const [a, b] = hubs as [Hub, Hub];
    assert.match(a.id, /^[0-9a-f]{12}$/);
    assert.match(b.id, /^[0-9a-f]{12}$/);
    assert.notEqual(a.id, b.id);
    for (const h of hubs) {
      assert.ok(h.svc.logs.some((l) => l.includes(`hub instance id ${h.id} (new, kept in `)), 'the id is logged at start');
      assert.ok(h.svc.logs.some((l) => l.endsWith(`connecting to MQTT broker 127.0.0.1:${broker.port} as voice-hub-${h.id}`)), 'and the client id');
    }

    const deadline = Date.now() + SIDE_BY_SIDE_MS;
    while (Date.now() < deadline) {
      assert.ok(connected(a.svc) && connected(b.svc), 'both hubs connected');
      await sleep(1000);
    }
    assert.deepEqual(hubs.map((h) => dropLines(h.svc)), [[], []], 'neither hub lost its connection');
    // The broker saw one connection of each client id, and never closed one for another.
    const log = broker.output();
    for (const h of hubs) assert.equal(log.split(` as voice-hub-${h.id} `).length - 1, 1, `one connection of voice-hub-${h.id}:\n${log}`);
    assert.doesNotMatch(log, /already connected, closing old connection/);
  });

  it('Home Assistant sees two devices with their own entities, each via its own hub', async () => {
    await ha.barrier('voice-hub/barrier');
    const configs = latestByTopic(ha.messages, 'homeassistant/sensor/');
    for (const h of hubs) {
      const node = `homeassistant/sensor/voice-hub_${h.id}`;
      const topics = [...configs.keys()].filter((t) => t.startsWith(`${node}/`)).sort();
      assert.deepEqual(topics, [
        ...SENSORS.map((s) => `${node}/${DEVICE}_${s}/config`),
        ...HUB_SENSORS.map((s) => `${node}/hub_${s}/config`),
      ].sort());
      const own = configsOf(configs, h.id);
      const hubConfig = own.get('hub_devices_online')!;
      assert.deepEqual(hubConfig.device.identifiers, [`voice-hub_${h.id}`]);
      const battery = own.get(`${DEVICE}_battery`)!;
      assert.equal(battery.unique_id, `voice-hub_${h.id}_${DEVICE}_battery`);
      assert.deepEqual(battery.device.identifiers, [`voice-hub_${h.id}_${DEVICE}`]);
      assert.equal(battery.device.via_device, hubConfig.device.identifiers[0], 'the device points to its own hub');
      assert.deepEqual(battery.origin, { name: 'voice-hub', sw_version: hubConfig.device.sw_version });
      // The documented topics: one prefix, so both hubs' entities read the same state and status topics.
      for (const [object, config] of own) {
        const expected = object.startsWith('hub_') ? 'voice-hub/hub/state' : `voice-hub/devices/${DEVICE}/state`;
        assert.equal(config.state_topic, expected, object);
        assert.equal(config.availability_topic, 'voice-hub/status', object);
      }
    }
    const hubDevices = hubs.map((h) => configsOf(configs, h.id).get('hub_version')!.device.identifiers[0]);
    assert.notEqual(hubDevices[0], hubDevices[1], 'two hub devices');
    const uniqueIds = [...configs.values()].map((p) => JSON.parse(p).unique_id as string);
    assert.equal(uniqueIds.length, 2 * (SENSORS.length + HUB_SENSORS.length));
    assert.equal(new Set(uniqueIds).size, uniqueIds.length, 'every unique_id once');
  });

  it('a restart keeps the instance id, so the same discovery topics', async () => {
    const old = hubs[0]!;
    await old.svc.stop();
    await ha.waitFor((m) => m.topic === 'voice-hub/status' && m.payload === 'offline', 'the stopped hub offline');
    const sent = ha.messages.length;
    const svc = await startService({ dataDir: old.svc.dataDir, flags: flags() });
    hubs[0] = { ...old, svc };
    await waitUntil(() => connected(svc), 'the restarted hub to connect');
    assert.equal(instanceIdOf(svc.dataDir), old.id);
    assert.ok(svc.logs.some((l) => l.endsWith(`hub instance id ${old.id}`)), svc.logs.join('\n'));
    const node = `homeassistant/sensor/voice-hub_${old.id}`;
    await waitUntil(() => ha.messages.slice(sent).filter((m) => m.topic.startsWith(`${node}/`)).length >= 9, 'discovery again');
    assert.deepEqual([...new Set(ha.messages.slice(sent).filter((m) => m.topic.startsWith('homeassistant/sensor/')).map((m) => m.topic))].sort(), [
      ...SENSORS.map((s) => `${node}/${DEVICE}_${s}/config`),
      ...HUB_SENSORS.map((s) => `${node}/hub_${s}/config`),
    ].sort(), 'the same topics as before the restart, and only this hub\'s');
    assert.deepEqual(dropLines(hubs[1]!.svc), [], 'the other hub was not disturbed');
  });

  it('deleting the device on one hub clears exactly that hub\'s entities', async () => {
    const [a, b] = hubs as [Hub, Hub];
    const res = await call(a.svc.url, 'DELETE', `/api/device/${DEVICE}`, { token: await adminToken(a.svc) });
    assert.equal(res.status, 200, res.text);
    const cleared = SENSORS.map((s) => `homeassistant/sensor/voice-hub_${a.id}/${DEVICE}_${s}/config`);
    for (const topic of cleared) await ha.waitFor((m) => m.topic === topic && m.payload === '', `${topic} cleared`);

    // A subscriber arriving now (as Home Assistant after a restart) gets what is retained: b's device
    // entities and none of a's; both hubs' own entities.
    const late = await Subscriber.connect(broker.port, ['homeassistant/#']);
    try {
      await late.barrier('homeassistant/barrier');
      const topics = late.messages.filter((m) => m.retain).map((m) => m.topic);
      assert.deepEqual(topics.filter((t) => t.includes(`voice-hub_${a.id}/${DEVICE}_`)), []);
      assert.deepEqual(topics.filter((t) => t.includes(`voice-hub_${b.id}/${DEVICE}_`)).sort(), SENSORS.map((s) => `homeassistant/sensor/voice-hub_${b.id}/${DEVICE}_${s}/config`));
      for (const h of hubs) {
        assert.deepEqual(topics.filter((t) => t.includes(`voice-hub_${h.id}/hub_`)).sort(), HUB_SENSORS.map((s) => `homeassistant/sensor/voice-hub_${h.id}/hub_${s}/config`));
      }
    } finally {
      await late.end();
    }
  });
});

describe('two hubs on one broker with their own Mqtt.TopicPrefix', () => {
  const PREFIXES = ['hub-a', 'hub-b'];
  let broker: Mosquitto;
  let ha: Subscriber;
  const hubs: Hub[] = [];

  before(async () => {
    broker = await startMosquitto();
    ha = await Subscriber.connect(broker.port, ['homeassistant/#', ...PREFIXES.map((p) => `${p}/#`)]);
    for (const [i, prefix] of PREFIXES.entries()) {
      const svc = await startService({ flags: { 'Mqtt.BrokerAddress': '127.0.0.1', 'Mqtt.Port': broker.port, 'Mqtt.TopicPrefix': prefix } });
      await waitUntil(() => connected(svc), `hub ${i} to connect`);
      const device = await registerDevice(svc, { deviceId: DEVICE, deviceName: `Kitchen ${i}` });
      hubs.push({ svc, id: instanceIdOf(svc.dataDir), token: device.token });
    }
  });
  after(async () => {
    await ha?.end();
    for (const h of hubs) await h.svc.stop();
    await broker?.stop();
  });

  it('each hub\'s entities read their state and availability under its own prefix', async () => {
    // A hub publishes a registered device's entities after the registration's answer: a barrier only
    // orders what the broker already has, so wait for all of them.
    const complete = (): boolean => hubs.every((h) => configsOf(latestByTopic(ha.messages, 'homeassistant/sensor/'), h.id).size === SENSORS.length + HUB_SENSORS.length);
    await waitUntil(complete, 'both hubs\' discovery configs');
    const configs = latestByTopic(ha.messages, 'homeassistant/sensor/');
    for (const [i, h] of hubs.entries()) {
      const own = configsOf(configs, h.id);
      assert.equal(own.size, SENSORS.length + HUB_SENSORS.length);
      for (const [object, config] of own) {
        const expected = object.startsWith('hub_') ? `${PREFIXES[i]}/hub/state` : `${PREFIXES[i]}/devices/${DEVICE}/state`;
        assert.equal(config.state_topic, expected, object);
        assert.equal(config.availability_topic, `${PREFIXES[i]}/status`, object);
        assert.equal(config.device.via_device ?? config.device.identifiers[0], `voice-hub_${h.id}`, object);
      }
    }
  });

  it('each hub\'s device state, hub state and status are its own', async () => {
    for (const [i, h] of hubs.entries()) {
      const res = await call(h.svc.url, 'PUT', `/api/device/${DEVICE}/status`, { token: h.token, body: { status: 'online', batteryLevel: 10 + i } });
      assert.equal(res.status, 200, res.text);
    }
    for (const [i, prefix] of PREFIXES.entries()) {
      await ha.waitFor((m) => m.topic === `${prefix}/devices/${DEVICE}/state` && JSON.parse(m.payload).batteryLevel === 10 + i, `hub ${i}'s battery level`);
    }
    // One hub loses a device, the other stops: a late subscriber sees each hub's own retained values.
    const [a, b] = hubs as [Hub, Hub];
    const res = await call(a.svc.url, 'DELETE', `/api/device/${DEVICE}`, { token: await adminToken(a.svc) });
    assert.equal(res.status, 200, res.text);
    await ha.waitFor((m) => m.topic === 'hub-a/hub/state' && JSON.parse(m.payload).devicesOnline === 0, 'hub a counts no device');
    await b.svc.stop();
    await ha.waitFor((m) => m.topic === 'hub-b/status' && m.payload === 'offline', 'hub b offline');

    const late = await Subscriber.connect(broker.port, PREFIXES.map((p) => `${p}/#`));
    try {
      await late.barrier('hub-a/barrier');
      const retained = (topic: string): string | undefined => late.on(topic).find((m) => m.retain)?.payload;
      assert.equal(retained('hub-a/status'), 'online', 'the running hub stays available');
      assert.equal(retained('hub-b/status'), 'offline');
      assert.equal(retained(`hub-a/devices/${DEVICE}/state`), undefined, 'deleted on hub a');
      assert.equal(JSON.parse(retained(`hub-b/devices/${DEVICE}/state`)!).batteryLevel, 11, 'hub b\'s device untouched');
      assert.deepEqual(JSON.parse(retained('hub-a/hub/state')!), { version: 'dev', activeSessions: 0, devicesOnline: 0, upstream: 'idle' });
      assert.deepEqual(JSON.parse(retained('hub-b/hub/state')!), { version: 'dev', activeSessions: 0, devicesOnline: 1, upstream: 'idle' });
    } finally {
      await late.end();
    }
  });
});
