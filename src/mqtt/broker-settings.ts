// What the broker settings allow before any connection is tried: how the broker is named in the log and
// in /health, and whether the settings can make a connection the broker accepts at all. Settings stored
// before the configuration refused such values still reach the publisher, and its log must never show
// a login an address may hold. Pure, no I/O.
import { HOST_PATTERN, NOT_IN_MQTT_TEXT } from '../config/schema.js';
import { urlHost } from '../url-host.js';

/** A character MQTT does not allow in its strings, or lets a broker refuse (config/schema.ts). */
const NOT_MQTT_TEXT = new RegExp(`[${NOT_IN_MQTT_TEXT}]`, 'u');
const BROKER_HOST = new RegExp(HOST_PATTERN, 'u');

/** `host:port` of the broker, for messages such as "not connected to localhost:1883". */
export function brokerShown(brokerAddress: string, port: number): string {
  // An address that is no host (stored before such addresses were refused) may hold a login: never shown.
  return !BROKER_HOST.test(brokerAddress)
    ? `(Mqtt.BrokerAddress, not a host name or address):${port}`
    : `${urlHost(brokerAddress)}:${port}`;
}

export interface BrokerSettings {
  brokerAddress: string;
  username: string;
  /** Both prefixes as the publisher uses them (trailing slashes stripped). */
  topicPrefix: string;
  discoveryPrefix: string;
}

/** Why the settings cannot make a connection the broker accepts (a character MQTT does not allow), if they cannot. */
export function unsendableSetting(settings: BrokerSettings): string | undefined {
  if (!BROKER_HOST.test(settings.brokerAddress)) {
    return 'Mqtt.BrokerAddress is not a host name or address (it is not shown: it may hold a login): set a host name or address, the port in Mqtt.Port and the login in Mqtt.Username and Mqtt.Password';
  }
  const named: Array<[string, string, string]> = [
    ['Mqtt.Username', settings.username, 'a user name'],
    ['Mqtt.TopicPrefix', settings.topicPrefix, 'a topic'],
    ['Mqtt.DiscoveryPrefix', settings.discoveryPrefix, 'a topic'],
  ];
  for (const [key, value, what] of named) {
    const found = NOT_MQTT_TEXT.exec(value);
    if (!found) continue;
    const code = found[0].codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0');
    return `${key} holds U+${code}, which MQTT does not allow in ${what} (the broker would refuse every connection): set it without control characters or Unicode non-characters`;
  }
  return undefined;
}
