// Topic names of the MQTT publisher (docs/protocol.md, "MQTT"). Pure functions, table-tested.
import { createHash } from 'node:crypto';
import { NOT_IN_MQTT_TEXT } from '../config/schema.js';

/** What `topicLevel` percent-encodes: what MQTT refuses in its strings (config/schema.ts) and the topic syntax. */
const ENCODED_IN_TOPICS = new RegExp(`[%+#/${NOT_IN_MQTT_TEXT}]`, 'gu');

/**
 * One topic level made from a device or session id. MQTT forbids `+` and `#` in topic names
 * [MQTT-4.7.1-1], `/` would split the id into several levels, and U+0000 is forbidden [MQTT-4.7.3-2];
 * the other control characters (C0 and C1) and Unicode non-characters a broker may refuse, and
 * mosquitto closes the connection for one in any topic (one device id with U+0085 did that to every
 * connection, each of which published everything again). We percent-encode all of those (and `%`
 * itself) as `%XX` of their UTF-8 bytes, as URLs do: ordinary ids stay readable (`kitchen-01` ->
 * `kitchen-01`), `a/b` becomes `a%2Fb`, and the mapping is one-to-one, so two different ids can never
 * share a topic. (Unpaired surrogates never get here: every transport refuses them, src/well-formed.ts.)
 */
export function topicLevel(id: string): string {
  return id.replace(ENCODED_IN_TOPICS, (ch) =>
    Array.from(Buffer.from(ch, 'utf8'), (b) => '%' + b.toString(16).toUpperCase().padStart(2, '0')).join(''),
  );
}

/** Hex digits of the hash in a replaced id: 64 bits, so no one can craft an id that hashes like another. */
const HASH_DIGITS = 16;
const HA_ALPHABET = /^[A-Za-z0-9_-]+$/;
/** The tail every replaced id ends with, and so no id kept as it is may end with. */
const HASH_TAIL = new RegExp(`_[0-9a-f]{${HASH_DIGITS}}$`);

/**
 * A Home Assistant node id / object id: HA accepts only `[a-zA-Z0-9_-]` there. Ids already in that
 * alphabet are used as they are; any other id has each foreign character replaced by `_` and a hash of
 * the original appended, so `a/b` and `a+b` still get different node ids. An id in the alphabet that
 * already ends like a replaced one (`a_b_` and 16 hex digits) is replaced too: kept as it was, a device
 * registered under that id would take over the entities of the device `a/b`. So the mapping is
 * one-to-one, and with device sensor names free of `_`, so is `<node>_<sensor>`.
 */
export function haNodeId(id: string): string {
  if (HA_ALPHABET.test(id) && !HASH_TAIL.test(id)) return id;
  const hash = createHash('sha256').update(id, 'utf8').digest('hex').slice(0, HASH_DIGITS);
  return `${id.replace(/[^A-Za-z0-9_-]/g, '_')}_${hash}`;
}

/**
 * Characters of `haNodeId(id)` for an id of `idChars` code points, at most: a code point outside the
 * BMP is two UTF-16 units, each replaced by `_`, and the hash tail follows.
 */
export const haNodeIdMaxLength = (idChars: number): number => 2 * idChars + 1 + HASH_DIGITS;

/** `<prefix>/status`: `online` while connected, `offline` as the last will and on clean shutdown. */
export const statusTopic = (prefix: string): string => `${prefix}/status`;

/** `<prefix>/devices/<id>/state`: retained JSON state of one device. */
export const deviceStateTopic = (prefix: string, deviceId: string): string =>
  `${prefix}/devices/${topicLevel(deviceId)}/state`;

/** `<prefix>/sessions/<id>/event`: session start/end events, not retained. */
export const sessionEventTopic = (prefix: string, sessionId: string): string =>
  `${prefix}/sessions/${topicLevel(sessionId)}/event`;

/** Home Assistant's birth/will topic: `online` when HA (re)starts and wants discovery again. */
export const haStatusTopic = (discoveryPrefix: string): string => `${discoveryPrefix}/status`;

/** `<prefix>/hub/state`: retained JSON state of the hub itself (version, sessions, devices online, upstream). */
export const hubStateTopic = (prefix: string): string => `${prefix}/hub/state`;

/** Home Assistant node id of one hub: all its entities, its own and its devices', are under it. */
export const haHubNode = (instanceId: string): string => `voice-hub_${instanceId}`;

/** Object id of a device's sensor; no hub sensor name is a device sensor name or ends in `_<one>`, so they never meet. */
export const haDeviceObject = (deviceId: string, sensor: string): string => `${haNodeId(deviceId)}_${sensor}`;

/** Object id of one of the hub's own sensors. */
export const haHubObject = (sensor: string): string => `hub_${sensor}`;

/** `<discoveryPrefix>/sensor/voice-hub_<instanceId>/<object>/config` */
export const discoveryTopic = (discoveryPrefix: string, instanceId: string, object: string): string =>
  `${discoveryPrefix}/sensor/${haHubNode(instanceId)}/${object}/config`;

/** Characters of a topic the log shows: one another client chose may be 65,535 bytes. */
const TOPIC_CHARS_LOGGED = 200;
export const shownTopic = (topic: string): string => (topic.length > TOPIC_CHARS_LOGGED ? `${topic.slice(0, TOPIC_CHARS_LOGGED)}...` : topic);
