// Topic names and Home Assistant payloads: pure, table-driven.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DEVICE_ID_MAX_LENGTH } from '../../src/devices/device-id.js';
import { deviceStatePayload, discoveryChanged, discoveryMessages, LONGEST_DEVICE_OBJECT, retainedTopicsOf, SENSOR_OBJECTS } from '../../src/mqtt/discovery.js';
import { HUB_SENSOR_OBJECTS } from '../../src/mqtt/hub-discovery.js';
import {
  deviceStateTopic, discoveryTopic, haDeviceObject, haHubObject, haNodeId, hubStateTopic, sessionEventTopic, statusTopic, topicLevel,
} from '../../src/mqtt/topics.js';
import { device } from './helpers.js';

describe('topicLevel', () => {
  const cases: [string, string][] = [
    ['kitchen-01', 'kitchen-01'],
    ['a/b', 'a%2Fb'],
    ['a+b', 'a%2Bb'],
    ['a#b', 'a%23b'],
    ['100%', '100%25'],
    ['tab\there', 'tab%09here'],
    ['nul\u0000', 'nul%00'],
    ['küche', 'küche'],
    ['', ''],
  ];
  for (const [id, level] of cases) {
    it(`${JSON.stringify(id)} -> ${JSON.stringify(level)}`, () => {
      assert.equal(topicLevel(id), level);
      assert.doesNotMatch(topicLevel(id), /[+#/\u0000]/);
    });
  }
  it('never maps two ids to one level', () => {
    const ids = ['a/b', 'a%2Fb', 'a+b', 'a%2Bb', 'a_b', 'a b', 'a#b'];
    assert.equal(new Set(ids.map(topicLevel)).size, ids.length);
  });
});

describe('haNodeId', () => {
  it('keeps ids HA accepts', () => assert.equal(haNodeId('kitchen_01-B'), 'kitchen_01-B'));
  it('replaces foreign characters and adds a hash', () => {
    // The first 16 hex digits of SHA-256("a/b").
    assert.equal(haNodeId('a/b'), 'a_b_c14cddc033f64b9d');
    assert.notEqual(haNodeId('a/b'), haNodeId('a+b'));
    assert.match(haNodeId('küche 1'), /^[A-Za-z0-9_-]+$/);
  });
  it('an id that copies a replaced id is replaced too, so it cannot take over that device', () => {
    const crafted = haNodeId('a/b');
    assert.notEqual(haNodeId(crafted), crafted);
    assert.match(haNodeId(crafted), new RegExp(`^${crafted}_[0-9a-f]{16}$`));
    // Ids that only look a little like it are kept.
    for (const id of ['a_b_0123456789abcde', 'a_b_0123456789ABCDEF', 'a_b-0123456789abcdef', 'a_b_0123456789abcdef0x']) assert.equal(haNodeId(id), id);
    assert.notEqual(haNodeId('a_b_0123456789abcdef'), 'a_b_0123456789abcdef');
  });
  it('never gives two ids, or two sensors of two ids, the same name', () => {
    const base = ['a/b', 'a+b', 'a b', 'a_b', 'a-b', 'küche 1', 'k\u00fcche_1', 'a', 'a_cpu', 'hub', '_', '__', '-'];
    const ids = [...base, ...base.map(haNodeId), ...base.map((id) => haNodeId(haNodeId(id)))];
    const unique = [...new Set(ids)];
    const nodes = unique.map(haNodeId);
    assert.equal(new Set(nodes).size, unique.length);
    const objects = unique.flatMap((id) => SENSOR_OBJECTS.map((s) => haDeviceObject(id, s)));
    assert.equal(new Set(objects).size, objects.length);
  });
  it('names no sensor of the longest device id longer than LONGEST_DEVICE_OBJECT (configs past it are judged as no hub\'s)', () => {
    const longest = ['\u{1F600}', 'a', 'ü', '/'].map((c) => c.repeat(DEVICE_ID_MAX_LENGTH));
    const lengths = longest.flatMap((id) => SENSOR_OBJECTS.map((s) => haDeviceObject(id, s).length));
    assert.equal(Math.max(...lengths), LONGEST_DEVICE_OBJECT);
    assert.ok(HUB_SENSOR_OBJECTS.every((s) => haHubObject(s).length < LONGEST_DEVICE_OBJECT));
  });
});

describe('topics', () => {
  it('builds every topic from the prefix', () => {
    // The documented layout, which subscribers rely on: no instance id in the hub's own topics.
    assert.equal(statusTopic('voice-hub'), 'voice-hub/status');
    assert.equal(deviceStateTopic('voice-hub', 'd/1'), 'voice-hub/devices/d%2F1/state');
    assert.equal(sessionEventTopic('voice-hub', 's+1'), 'voice-hub/sessions/s%2B1/event');
    assert.equal(hubStateTopic('voice-hub'), 'voice-hub/hub/state');
    assert.equal(discoveryTopic('homeassistant', '0123456789ab', haDeviceObject('d1', 'cpu')), 'homeassistant/sensor/voice-hub_0123456789ab/d1_cpu/config');
    assert.equal(discoveryTopic('homeassistant', '0123456789ab', haHubObject('upstream')), 'homeassistant/sensor/voice-hub_0123456789ab/hub_upstream/config');
  });
  it('no device sensor of any device id has the object id of a hub sensor', () => {
    // <node>_<sensor> == hub_<hubSensor> would need a device sensor equal to a hub sensor name or to
    // the part of one after an underscore.
    const tails = HUB_SENSOR_OBJECTS.flatMap((h) => h.split('_').map((_, i, parts) => parts.slice(i).join('_')));
    for (const sensor of SENSOR_OBJECTS) assert.ok(!tails.includes(sensor), sensor);
  });
});

describe('discovery payloads', () => {
  const names = { topicPrefix: 'voice-hub', discoveryPrefix: 'homeassistant', instanceId: '0123456789ab', version: '1.2.3' };
  it('state carries status, lastSeen and the four metrics, nulls included', () => {
    assert.deepEqual(JSON.parse(deviceStatePayload(device('d1', { temperature: null }))), {
      status: 'online',
      lastSeen: '2025-01-02T03:04:05.000Z',
      batteryLevel: 87,
      temperature: null,
      memoryUsage: 33,
      cpuUsage: 12.5,
    });
  });
  it('one config per sensor; battery exactly', () => {
    const messages = discoveryMessages(names, device('d1'));
    assert.deepEqual(
      messages.map((m) => m.topic),
      ['battery', 'temperature', 'memory', 'cpu', 'status'].map((o) => `homeassistant/sensor/voice-hub_0123456789ab/d1_${o}/config`),
    );
    assert.deepEqual(JSON.parse(messages[0]!.payload), {
      name: 'Battery',
      unique_id: 'voice-hub_0123456789ab_d1_battery',
      state_topic: 'voice-hub/devices/d1/state',
      value_template: "{{ value_json.batteryLevel if value_json is defined else '' }}",
      unit_of_measurement: '%',
      state_class: 'measurement',
      device_class: 'battery',
      availability_topic: 'voice-hub/status',
      payload_available: 'online',
      payload_not_available: 'offline',
      origin: { name: 'voice-hub', sw_version: '1.2.3' },
      device: {
        identifiers: ['voice-hub_0123456789ab_d1'], name: 'Device d1', model: 'esp32-s3', manufacturer: 'voice-hub', via_device: 'voice-hub_0123456789ab',
      },
    });
    const status = JSON.parse(messages[4]!.payload);
    assert.equal(status.value_template, "{{ value_json.status if value_json is defined else '' }}");
    assert.equal(status.unit_of_measurement, undefined, 'a text sensor has no unit (HA would expect numbers)');
    assert.equal(JSON.parse(messages[1]!.payload).unit_of_measurement, '°C');
  });
  it('removal covers every discovery topic, then the state', () => {
    assert.deepEqual(retainedTopicsOf(names, 'a/b'), [
      ...discoveryMessages(names, device('a/b')).map((m) => m.topic),
      'voice-hub/devices/a%2Fb/state',
    ]);
  });
  it('discovery is resent only for new devices or a new name/type', () => {
    const d = device('d1');
    assert.equal(discoveryChanged(undefined, d), true);
    assert.equal(discoveryChanged(d, { ...d, batteryLevel: 1 }), false);
    assert.equal(discoveryChanged(d, { ...d, name: 'Other' }), true);
    assert.equal(discoveryChanged(d, { ...d, type: 'pi' }), true);
  });
});
