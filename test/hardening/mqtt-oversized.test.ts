// A client of the hub's MQTT broker publishes huge messages, retained, to the topics the hub subscribes
// to (Home Assistant's status, the hub's own discovery node). MQTT lets a PUBLISH carry 256 MiB, and the
// broker hands it to every subscriber on each (re)connect. The built bundle, against a real mosquitto,
// skips such a message as it arrives: its memory does not grow by the message, it says so in one line,
// it stays connected (no reconnect at the broker) and reads the next message on the same topic.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import mqtt, { type MqttClient } from 'mqtt';
import { silentLogger } from '../../src/log/logger.js';
import { startEchoServer, type EchoServer } from '../../src/upstream/echo-server.js';
import { instanceIdOf, Subscriber } from '../mqtt/helpers.js';
import { call } from '../support/http.js';
import { startMosquitto, type Mosquitto } from '../support/mosquitto.js';
import { waitUntil } from '../support/wait.js';
import { assertHealthyProcess, startDaemon, type Daemon } from './daemon.js';

const MiB = 1024 * 1024;
const HA_STATUS = 'homeassistant/status';

let broker: Mosquitto;
let echo: EchoServer;
let daemon: Daemon;
let hostile: MqttClient;

/** Peak RSS of the daemon so far (VmHWM), in MiB. */
const peakMb = (): number => Number(/VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${daemon.pid}/status`, 'utf8'))![1]) / 1024;
/** The hub's connections the broker has seen (its notice log names each client id). */
const hubConnects = (): number => broker.output().split('\n').filter((l) => /New client connected .* as voice-hub-/.test(l)).length;
/** The size a PUBLISH's fixed header announces: type byte, length bytes, topic length, topic, packet id, payload. */
function publishBytes(topic: string, payload: number, qos: number): number {
  const remaining = 2 + Buffer.byteLength(topic) + (qos > 0 ? 2 : 0) + payload;
  let lengthBytes = 1;
  while (remaining >= 128 ** lengthBytes) lengthBytes++;
  return 1 + lengthBytes + remaining;
}
const skippedLines = (): string[] => daemon.svc.output().split('\n').filter((l) => l.includes('skipped an MQTT message'));

before(async () => {
  broker = await startMosquitto({ logNotices: true });
  echo = await startEchoServer({ host: '127.0.0.1', port: 0, logger: silentLogger });
  daemon = await startDaemon({
    settings: { Mqtt: { BrokerAddress: '127.0.0.1', Port: broker.port }, VoiceService: { ServerUrl: `ws://127.0.0.1:${echo.port}/voice` } },
  });
  await waitUntil(async () => (await call(daemon.url, 'GET', '/health')).json.entries.mqtt.status === 'Healthy', 'mqtt Healthy', 15_000, 100);
  hostile = await mqtt.connectAsync({ host: '127.0.0.1', port: broker.port, clientId: `hostile-${randomUUID()}`, reconnectPeriod: 0 });
});

after(async () => {
  // Retained messages of this size would outlive the test in a persistent broker: clear them.
  await hostile?.publishAsync(HA_STATUS, '', { qos: 1, retain: true }).catch(() => {});
  await hostile?.endAsync(true).catch(() => {});
  await daemon?.stop();
  await broker?.stop();
  await echo?.close();
});

describe('huge MQTT messages on the topics the hub subscribes to', () => {
  it('a 100 MiB retained QoS 1 message on Home Assistant\'s status topic is skipped unread', async () => {
    const connects = hubConnects();
    assert.equal(connects, 1, `the hub connected once: ${broker.output()}`);
    const peakBefore = peakMb();
    await hostile.publishAsync(HA_STATUS, Buffer.alloc(100 * MiB, 0x61), { qos: 1, retain: true });
    const line = `skipped an MQTT message of ${publishBytes(HA_STATUS, 100 * MiB, 1)} bytes on '${HA_STATUS}' (QoS 1) unread: over the 256 KiB limit for incoming MQTT packets`;
    await waitUntil(() => skippedLines().length > 0, 'the skip line', 30_000);
    assert.deepEqual(skippedLines().map((l) => l.slice(l.indexOf('skipped'))), [line]);
    const grown = peakMb() - peakBefore;
    assert.ok(grown < 32, `peak RSS grew by ${grown.toFixed(1)} MiB for a 100 MiB message`);
    // Acknowledged (the broker would otherwise resend it), so no reconnect and no second delivery.
    await new Promise((resolve) => setTimeout(resolve, 1000));
    assert.equal(hubConnects(), connects, 'no reconnect');
    assert.equal(skippedLines().length, 1, 'delivered once');
    assert.equal((await call(daemon.url, 'GET', '/health')).json.entries.mqtt.status, 'Healthy');
    assertHealthyProcess(daemon);
  });

  it('the next message on the topic is read: "online" makes the hub send its discovery again', async () => {
    const configs = await Subscriber.connect(broker.port, [`homeassistant/sensor/voice-hub_${instanceIdOf(daemon.dataDir)}/+/config`]);
    try {
      await waitUntil(() => configs.messages.length > 0, 'the retained configs');
      const retained = configs.messages.length;
      await hostile.publishAsync(HA_STATUS, 'online', { qos: 1 });
      await configs.waitFor((m) => !m.retain && m.payload.startsWith('{'), 'discovery sent again after "online"');
      assert.ok(configs.messages.length > retained);
    } finally {
      await configs.end();
    }
  });

  it('a 20 MiB QoS 0 message under the hub\'s own discovery node is skipped too', async () => {
    const topic = `homeassistant/sensor/voice-hub_${instanceIdOf(daemon.dataDir)}/x/config`;
    const peakBefore = peakMb();
    await hostile.publishAsync(topic, Buffer.alloc(20 * MiB, 0x7b), { qos: 0, retain: false });
    await waitUntil(() => skippedLines().length > 1, 'the second skip line', 30_000);
    const last = skippedLines().at(-1)!;
    assert.equal(last.slice(last.indexOf('skipped')), `skipped an MQTT message of ${publishBytes(topic, 20 * MiB, 0)} bytes on '${topic}' (QoS 0) unread: over the 256 KiB limit for incoming MQTT packets`);
    assert.ok(peakMb() - peakBefore < 16, `peak RSS grew by ${(peakMb() - peakBefore).toFixed(1)} MiB for a 20 MiB message`);
    assert.equal(hubConnects(), 1, 'no reconnect');
    assertHealthyProcess(daemon);
  });
});
