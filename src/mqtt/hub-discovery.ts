// Home Assistant discovery of the hub itself: one HA device per hub (named after its host, identified by
// its instance id) with four sensors read from `<prefix>/hub/state`. Device entities point to it with
// `via_device`, so HA shows which hub a speaker is attached to. Pure, no I/O.
import { commonConfig, hubIdentifier, type DiscoveryMessage, type TopicNames } from './discovery.js';
import { UPSTREAM_STATES } from './hub-status.js';
import { discoveryTopic, haHubObject, hubStateTopic } from './topics.js';

interface HubSensorSpec {
  object: string;
  name: string;
  field: string;
  extra: Record<string, unknown>;
}

const HUB_SENSORS: readonly HubSensorSpec[] = [
  { object: 'version', name: 'Version', field: 'version', extra: { entity_category: 'diagnostic', icon: 'mdi:tag' } },
  { object: 'active_sessions', name: 'Active sessions', field: 'activeSessions', extra: { state_class: 'measurement', icon: 'mdi:microphone' } },
  { object: 'devices_online', name: 'Devices online', field: 'devicesOnline', extra: { state_class: 'measurement', icon: 'mdi:speaker' } },
  { object: 'upstream', name: 'Upstream', field: 'upstream', extra: { device_class: 'enum', options: [...UPSTREAM_STATES], icon: 'mdi:cloud' } },
];

export const HUB_SENSOR_OBJECTS: readonly string[] = HUB_SENSORS.map((s) => s.object);

/** Retained discovery configs of the hub's own sensors. `hostName` names the HA device. */
export function hubDiscoveryMessages(names: TopicNames, hostName: string): DiscoveryMessage[] {
  const device = {
    identifiers: [hubIdentifier(names)],
    name: `voice-hub ${hostName}`,
    model: 'voice-hub',
    manufacturer: 'voice-hub',
    sw_version: names.version,
  };
  return HUB_SENSORS.map((s) => {
    const object = haHubObject(s.object);
    const config = {
      name: s.name,
      unique_id: `${hubIdentifier(names)}_${object}`,
      state_topic: hubStateTopic(names.topicPrefix),
      value_template: `{{ value_json.${s.field} }}`,
      ...s.extra,
      ...commonConfig(names),
      device,
    };
    return { topic: discoveryTopic(names.discoveryPrefix, names.instanceId, object), payload: JSON.stringify(config) };
  });
}
