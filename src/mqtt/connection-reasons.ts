// What the log and /health say about a broker connection that failed or closed: mqtt.js' own words
// (`connack timeout`, `Not authorized`) name neither the cause nor the setting to check.
import { connectionErrorText } from '../errors.js';
import { durationText } from '../log/duration.js';
import type { ConnectionOptions } from './client.js';

/** What is reported for the first connection in a row the broker closed soon after accepting it (client.ts, SHORT_LIVED_MS). */
export const closedSoonText = (ms: number): string => `the broker closed the connection ${durationText(ms)} after accepting it`;

/** What is reported for a connection closed that soon by a broker that refused new connections just then. */
export const stoppedListeningText = (ms: number): string =>
  `${closedSoonText(ms)} and refused new connections right after (it is restarting or shutting down)`;

/** What is reported for the second and later connections in a row the broker closed that soon. */
export const takenOverText = (clientId: string): string =>
  `the broker closed the connection right after accepting it: another client may be connected as ${clientId} ` +
  `(a hub started from a copy of this one's data directory shares its instance-id file: delete that file on one of them and restart it)`;

/** mqtt.js' whole message when nothing answered the CONNECT within connectTimeout. */
const CONNACK_TIMEOUT = 'connack timeout';

/** Why a connection failed, in words a technician can act on. */
export function reasonOf(e: unknown, o: ConnectionOptions): string {
  const text = connectionErrorText(e);
  // Something accepted the TCP connection and never answered in MQTT: another service on that port (a web
  // server waits for a request it can read), or a broker too busy to answer. mqtt.js' two words named neither.
  if (text === CONNACK_TIMEOUT) {
    return `no answer to the MQTT connection request within ${durationText(o.connectTimeoutMs)} (${CONNACK_TIMEOUT}): ` +
      `is port ${o.port} the broker's MQTT port, not another service's?`;
  }
  return text + loginAdvice(e, o.username);
}

/**
 * What to check when the broker refuses the login: its CONNACK says only `Not authorized` (return code 5,
 * what mosquitto answers a wrong password) or `Bad username or password` (4), and which user the hub
 * tried, and where that is set, is in no other line. Never the password.
 */
function loginAdvice(e: unknown, username: string): string {
  const code = (e as { code?: unknown } | null)?.code;
  if (code !== 4 && code !== 5) return '';
  return username === ''
    ? ' (the broker refused a connection without a user name: set Mqtt.Username and Mqtt.Password)'
    : ` (the broker refused the login as user ${username}: check Mqtt.Username and Mqtt.Password)`;
}
