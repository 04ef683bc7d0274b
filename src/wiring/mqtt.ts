// MQTT is optional: an empty broker address switches it off, and a PUT of its category applies at once.
import type { AppConfig } from '../config/types.js';
import type { Logger } from '../log/logger.js';
import { ConfiguredMqttPublisher } from '../mqtt/configured.js';
import { MqttPublisher } from '../mqtt/publisher.js';
import type { ConfigCategories } from '../settings/categories.js';
import type { Store } from '../store/types.js';
import { builtVersion } from '../version.js';

/** `instanceId`: this installation's (src/process/instance-id.ts), in the client id and discovery ids. */
export function createMqtt(config: AppConfig, store: Store, categories: ConfigCategories, instanceId: string, logger: Logger): ConfiguredMqttPublisher {
  const mqttLogger = logger.child('Mqtt');
  const version = builtVersion();
  const mqtt = new ConfiguredMqttPublisher({
    create: (settings) =>
      new MqttPublisher({
        ...settings,
        password: config.Mqtt.Password,
        topicPrefix: config.Mqtt.TopicPrefix,
        homeAssistantDiscovery: config.Mqtt.HomeAssistantDiscovery,
        discoveryPrefix: config.Mqtt.DiscoveryPrefix,
        instanceId,
        version,
        logger: mqttLogger,
      }),
    devices: () => store.devices.list(),
    version,
    kept: store.brokerMessages,
    logger: mqttLogger,
  });
  categories.onChange((category) => {
    if (category === 'mqtt') void mqtt.apply(categories.mqtt());
  });
  return mqtt;
}
