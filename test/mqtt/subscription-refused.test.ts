// A broker whose ACL denies the hub a topic it subscribes to answers the SUBACK with a failure code
// (0x80 in MQTT 3.1.1; EMQX, HiveMQ and others do, where mosquitto grants and delivers nothing). The hub
// then never hears Home Assistant's birth message nor an earlier run's configs: it must say so. A broker
// of a few lines made with mqtt-packet (as mqtt.js parses and writes packets) answers what the hub sends.
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import net, { type AddressInfo } from 'node:net';
import { after, describe, it } from 'node:test';
import { MqttPublisher } from '../../src/mqtt/publisher.js';
import { waitUntil } from '../support/wait.js';
import { capturedLog, publisherOptions } from './helpers.js';

interface Packet { cmd: string; messageId?: number; qos?: number; subscriptions?: { topic: string }[] }
const mqttPacket = createRequire(import.meta.url)('mqtt-packet') as {
  parser(): { on(event: 'packet', listener: (p: Packet) => void): void; parse(b: Buffer): void };
  generate(p: Record<string, unknown>): Buffer;
};

/** Accepts every connection and publish; refuses each subscription whose topic `refuse` names. */
async function refusingBroker(refuse: (topic: string) => boolean): Promise<{ port: number; close(): Promise<void> }> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => {});
    const parser = mqttPacket.parser();
    parser.on('packet', (p) => {
      if (p.cmd === 'connect') socket.write(mqttPacket.generate({ cmd: 'connack', returnCode: 0, sessionPresent: false }));
      else if (p.cmd === 'publish' && p.qos === 1) socket.write(mqttPacket.generate({ cmd: 'puback', messageId: p.messageId }));
      else if (p.cmd === 'pingreq') socket.write(mqttPacket.generate({ cmd: 'pingresp' }));
      else if (p.cmd === 'subscribe') {
        const granted = p.subscriptions!.map((s) => (refuse(s.topic) ? 0x80 : 1));
        socket.write(mqttPacket.generate({ cmd: 'suback', messageId: p.messageId, granted }));
      }
    });
    socket.on('data', (d: Buffer) => parser.parse(d));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

describe('a subscription the broker refuses', () => {
  const cleanup: (() => Promise<unknown>)[] = [];
  after(async () => {
    for (const c of cleanup.reverse()) await c();
  });

  /** A hub on a broker that refuses the subscriptions `refuses` picks, once it has logged a refusal. */
  async function refusedBy(options: ReturnType<typeof publisherOptions>, refuses: (topic: string) => boolean) {
    const broker = await refusingBroker(refuses);
    cleanup.push(() => broker.close());
    const { lines, logger } = capturedLog();
    const hub = new MqttPublisher({ ...options, port: broker.port, logger });
    cleanup.push(() => hub.close());
    hub.start();
    await waitUntil(() => lines.some((l) => l.includes('refused the subscription')), 'the refusal to be logged');
    return { broker, hub, lines };
  }

  it('is logged with the topic, the reason and what the hub then misses; a granted one is not', async () => {
    const options = publisherOptions(0, { username: 'hub', password: 'hub-password' });
    const haStatus = `${options.discoveryPrefix}/status`;
    const { broker, hub, lines } = await refusedBy(options, (topic) => topic === haStatus);
    await new Promise((resolve) => setTimeout(resolve, 300));
    assert.deepEqual(lines.filter((l) => l.includes('subscription')), [
      `warn: Mqtt: MQTT broker 127.0.0.1:${broker.port} refused the subscription to ${haStatus}: Subscribe error: Unspecified error (SUBACK 0x80); ` +
        `discovery is not sent again when Home Assistant restarts (check the broker's ACL for voice-hub-${options.instanceId} / user hub)`,
    ]);
    assert.equal(hub.state().connected, true, 'the connection stays up and the hub publishes on');
    assert.ok(lines.every((l) => !l.includes('hub-password')));
  });

  it('the hub\'s own node refused: says the stale configs are not cleared', async () => {
    const options = publisherOptions(0);
    const { broker, lines } = await refusedBy(options, (topic) => topic.endsWith('/+/config'));
    assert.deepEqual(lines.filter((l) => l.includes('subscription')), [
      `warn: Mqtt: MQTT broker 127.0.0.1:${broker.port} refused the subscription to ${options.discoveryPrefix}/sensor/voice-hub_${options.instanceId}/+/config: ` +
        `Subscribe error: Unspecified error (SUBACK 0x80); discovery configs an earlier run left under the hub's node are not cleared ` +
        `(check the broker's ACL for voice-hub-${options.instanceId})`,
    ]);
  });
});
