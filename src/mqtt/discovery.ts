// Payloads the publisher sends: a device's state and its Home Assistant MQTT discovery configs
// (docs/protocol.md, "MQTT"; HA's "MQTT Discovery" and "MQTT Sensor" documentation). Pure, no I/O.
import type { DeviceRecord } from '../store/types.js';
import { deviceStateTopic, discoveryTopic, haNodeId, statusTopic } from './topics.js';

/** What the publisher needs of a device. */
export type MqttDevice = Pick<
  DeviceRecord,
  'id' | 'name' | 'type' | 'status' | 'lastSeen' | 'batteryLevel' | 'temperature' | 'memoryUsage' | 'cpuUsage'
>;

export interface TopicNames {
  topicPrefix: string;
  discoveryPrefix: string;
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

export interface DiscoveryMessage {
  topic: string;
  payload: string;
}

/** Retained discovery configs for one device, one per sensor. */
export function discoveryMessages(names: TopicNames, device: MqttDevice): DiscoveryMessage[] {
  const node = haNodeId(device.id);
  const deviceBlock = {
    identifiers: [`voice-hub_${node}`],
    name: device.name || device.id,
    model: device.type,
    manufacturer: 'voice-hub',
  };
  return SENSORS.map((s) => {
    const config: Record<string, unknown> = {
      name: s.name,
      unique_id: `voice-hub_${node}_${s.object}`,
      state_topic: deviceStateTopic(names.topicPrefix, device.id),
      value_template: `{{ value_json.${s.field} }}`,
    };
    if (s.unit !== undefined) {
      config.unit_of_measurement = s.unit;
      config.state_class = 'measurement';
    }
    if (s.deviceClass !== undefined) config.device_class = s.deviceClass;
    if (s.icon !== undefined) config.icon = s.icon;
    config.availability_topic = statusTopic(names.topicPrefix);
    config.payload_available = 'online';
    config.payload_not_available = 'offline';
    config.device = deviceBlock;
    return { topic: discoveryTopic(names.discoveryPrefix, device.id, s.object), payload: JSON.stringify(config) };
  });
}

/** Topics whose retained messages describe a device: cleared (empty retained payload) on removal. */
export function retainedTopicsOf(names: TopicNames, deviceId: string): string[] {
  return [
    deviceStateTopic(names.topicPrefix, deviceId),
    ...SENSOR_OBJECTS.map((o) => discoveryTopic(names.discoveryPrefix, deviceId, o)),
  ];
}

/** Whether a change of this device needs its discovery configs sent again (they embed name and type). */
export function discoveryChanged(before: MqttDevice | undefined, after: MqttDevice): boolean {
  return before === undefined || before.name !== after.name || before.type !== after.type;
}
