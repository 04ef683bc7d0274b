// Payloads the publisher sends: a device's state and its Home Assistant MQTT discovery configs
// (docs/protocol.md, "MQTT"; HA's "MQTT Discovery" and "MQTT Sensor" documentation). Pure, no I/O.
// Every Home Assistant id and discovery topic carries the hub's instance id, so a device id that exists on
// two hubs sharing a broker gives two entities, each under the Home Assistant device of its own hub
// (`via_device`). State and availability topics are the hub's `<prefix>/...` ones.
import { DEVICE_ID_MAX_LENGTH } from '../devices/device-id.js';
import type { DeviceRecord } from '../store/types.js';
import { deviceStateTopic, discoveryTopic, haDeviceObject, haHubNode, haNodeId, haNodeIdMaxLength, statusTopic } from './topics.js';

/** What the publisher needs of a device. */
export type MqttDevice = Pick<
  DeviceRecord,
  'id' | 'name' | 'type' | 'status' | 'lastSeen' | 'batteryLevel' | 'temperature' | 'memoryUsage' | 'cpuUsage'
>;

export interface TopicNames {
  /** Mqtt.TopicPrefix without a trailing slash: this hub's own topics are under it. */
  topicPrefix: string;
  discoveryPrefix: string;
  instanceId: string;
  /** The running voice-hub's version, for Home Assistant's device and origin blocks. */
  version: string;
}

/** Body of `<prefix>/devices/<id>/state`. */
export function deviceStatePayload(device: MqttDevice): string {
  const { status, lastSeen, batteryLevel, temperature, memoryUsage, cpuUsage } = device;
  return JSON.stringify({ status, lastSeen, batteryLevel, temperature, memoryUsage, cpuUsage });
}

interface SensorSpec {
  object: string;
  name: string;
  field: keyof MqttDevice;
  unit?: string;
  deviceClass?: string;
  icon?: string;
}

/**
 * The five sensors of a device. Numeric sensors carry `state_class: measurement` so HA keeps
 * statistics; a metric the device never reported is JSON `null`, which the template renders as
 * `None`, which HA's MQTT sensor shows as "unknown" instead of rejecting it as a bad number.
 */
const SENSORS: readonly SensorSpec[] = [
  { object: 'battery', name: 'Battery', field: 'batteryLevel', unit: '%', deviceClass: 'battery' },
  { object: 'temperature', name: 'Temperature', field: 'temperature', unit: '°C', deviceClass: 'temperature' },
  { object: 'memory', name: 'Memory usage', field: 'memoryUsage', unit: '%', icon: 'mdi:memory' },
  { object: 'cpu', name: 'CPU usage', field: 'cpuUsage', unit: '%', icon: 'mdi:cpu-64-bit' },
  { object: 'status', name: 'Status', field: 'status', icon: 'mdi:lan-connect' },
];

export const SENSOR_OBJECTS: readonly string[] = SENSORS.map((s) => s.object);

/**
 * Characters of the longest object id a hub gives a device's sensor (`<node>_<sensor>`), for the longest
 * device id registration accepts. The hub's own sensors' are shorter.
 */
export const LONGEST_DEVICE_OBJECT = haNodeIdMaxLength(DEVICE_ID_MAX_LENGTH) + 1 + Math.max(...SENSOR_OBJECTS.map((o) => o.length));

export interface DiscoveryMessage {
  topic: string;
  payload: string;
}

/** Home Assistant's identifier of the hub's own device, which device entities name as `via_device`. */
export const hubIdentifier = (names: TopicNames): string => haHubNode(names.instanceId);

/** What published a discovery config (HA shows it in the entity's MQTT info). */
export const originBlock = (names: TopicNames): Record<string, string> => ({ name: 'voice-hub', sw_version: names.version });

/** The fields every entity of this hub shares: available while the hub says `online`, and the origin. */
export function commonConfig(names: TopicNames): Record<string, unknown> {
  return {
    availability_topic: statusTopic(names.topicPrefix),
    payload_available: 'online',
    payload_not_available: 'offline',
    origin: originBlock(names),
  };
}

/**
 * The value template of a device's sensor. The hub empties a device's retained state topic when the
 * device goes (deleted, or found stale at connect), and Home Assistant hands that empty payload to every
 * entity still subscribed to it: with no JSON there `value_json` is undefined, and `{{ value_json.x }}`
 * made HA log `Template variable error: 'value_json' is undefined when rendering ...` at error level, once
 * per sensor. Rendered empty instead, which HA's numeric sensors ignore; a metric that is JSON `null`
 * still renders `None`, shown as unknown.
 */
export const deviceValueTemplate = (field: string): string => `{{ value_json.${field} if value_json is defined else '' }}`;

/** Retained discovery configs for one device, one per sensor. */
export function discoveryMessages(names: TopicNames, device: MqttDevice): DiscoveryMessage[] {
  const deviceBlock = {
    identifiers: [`${hubIdentifier(names)}_${haNodeId(device.id)}`],
    name: device.name || device.id,
    model: device.type,
    manufacturer: 'voice-hub',
    via_device: hubIdentifier(names),
  };
  return SENSORS.map((s) => {
    const object = haDeviceObject(device.id, s.object);
    const config: Record<string, unknown> = {
      name: s.name,
      unique_id: `${haHubNode(names.instanceId)}_${object}`,
      state_topic: deviceStateTopic(names.topicPrefix, device.id),
      value_template: deviceValueTemplate(s.field),
    };
    if (s.unit !== undefined) {
      config.unit_of_measurement = s.unit;
      config.state_class = 'measurement';
    }
    if (s.deviceClass !== undefined) config.device_class = s.deviceClass;
    if (s.icon !== undefined) config.icon = s.icon;
    Object.assign(config, commonConfig(names));
    config.device = deviceBlock;
    return { topic: discoveryTopic(names.discoveryPrefix, names.instanceId, object), payload: JSON.stringify(config) };
  });
}

/**
 * Topics whose retained messages describe a device: cleared (empty retained payload) on removal, in this
 * order. The discovery configs go first, so Home Assistant removes the entities before the state they read
 * is emptied under them (deviceValueTemplate).
 */
export function retainedTopicsOf(names: TopicNames, deviceId: string): string[] {
  return [
    ...SENSOR_OBJECTS.map((o) => discoveryTopic(names.discoveryPrefix, names.instanceId, haDeviceObject(deviceId, o))),
    deviceStateTopic(names.topicPrefix, deviceId),
  ];
}

/** Whether a change of this device needs its discovery configs sent again (they embed name and type). */
export function discoveryChanged(before: MqttDevice | undefined, after: MqttDevice): boolean {
  return before === undefined || before.name !== after.name || before.type !== after.type;
}
