// Devices deleted while the broker is unreachable: the clearing of their retained topics (state and five
// discovery configs each) must reach the broker once it is back, however many devices were deleted and
// however many session events piled up meanwhile. The queue holds events and retained messages apart:
// events drop oldest first at the queue's limit; retained messages, one per topic, are never pushed out
// by them. The broker stays up (and keeps its retained messages) behind a TCP relay the test cuts.
import assert from 'node:assert/strict';
import net from 'node:net';
import { startDropRelay } from '../../src/cli/drop-relay.js';
import { after, describe, it } from 'node:test';
import { MqttPublisher } from '../../src/mqtt/publisher.js';
import { startMosquitto, type Mosquitto } from '../support/mosquitto.js';
import { waitUntil } from '../support/wait.js';
import { capturedLog, device, publisherOptions, Subscriber } from './helpers.js';

describe('devices deleted while the broker is unreachable', () => {
  const cleanup: (() => Promise<unknown> | void)[] = [];
  after(async () => {
    for (const c of cleanup.reverse()) await c();
  });

  /** Topics with a retained, non-empty message under `filters`, as a new subscriber gets them. */
  const retained = async (b: Mosquitto, filter: string, barrier: string): Promise<string[]> => {
    const sub = await Subscriber.connect(b.port, [filter]);
    try {
      await sub.barrier(barrier);
      return sub.messages.filter((m) => m.retain && m.payload !== '').map((m) => m.topic).sort();
    } finally {
      await sub.end();
    }
  };

  it('all their retained topics are cleared once it is back, whatever the events did to the queue', async () => {
    const b = await startMosquitto();
    cleanup.push(() => b.stop());
    const relay = await startDropRelay({ host: '127.0.0.1', port: b.port });
    cleanup.push(() => relay.close());
    // 40 devices are 240 retained topics to clear, twelve times the queue's 20 messages, and 300 events
    // push through it meanwhile.
    const DEVICES = 40;
    const QUEUE = 20;
    const EVENTS = 300;
    const OUTAGE_MS = 60_000;
    const options = publisherOptions(relay.port, { queueLimit: QUEUE });
    const pub = new MqttPublisher(options);
    cleanup.push(() => pub.close());
    const fleet = Array.from({ length: DEVICES }, (_, i) => device(`d${i}`));
    pub.syncDevices([...fleet, device('stays')]);
    pub.start();
    await waitUntil(() => pub.state().connected && pub.stats().queued === 0 && pub.stats().inFlight === 0, 'every device to be delivered');
    const node = `${options.discoveryPrefix}/sensor/voice-hub_${options.instanceId}`;
    const states = `${options.topicPrefix}/devices`;
    assert.equal((await retained(b, `${states}/#`, `${states}/barrier`)).length, DEVICES + 1);
    assert.equal((await retained(b, `${node}/#`, `${node}/barrier`)).length, 4 + 5 * (DEVICES + 1));
    const events = await Subscriber.connect(b.port, [`${options.topicPrefix}/sessions/#`]);
    cleanup.push(() => events.end());

    relay.dropAll(OUTAGE_MS); // connections meanwhile wait, no byte forwarded, until resume()
    await waitUntil(() => !pub.state().connected, 'the publisher to lose the broker');
    const publishedBefore = pub.stats().published;
    for (const d of fleet) pub.removeDevice(d.id);
    for (let i = 0; i < EVENTS; i++) pub.publishSessionEvent('s1', { n: i });
    const whileDown = pub.stats();

    relay.resume();
    await waitUntil(() => pub.state().connected, 'the publisher to reconnect', 15_000);
    await waitUntil(() => pub.stats().queued === 0 && pub.stats().inFlight === 0, 'the queue to be delivered');
    assert.deepEqual(await retained(b, `${states}/#`, `${states}/barrier`), [`${states}/stays/state`]);
    assert.deepEqual(await retained(b, `${node}/#`, `${node}/barrier`), [
      'hub_active_sessions', 'hub_devices_online', 'hub_upstream', 'hub_version', 'stays_battery', 'stays_cpu', 'stays_memory', 'stays_status', 'stays_temperature',
    ].map((o) => `${node}/${o}/config`));
    await events.waitFor((m) => JSON.parse(m.payload).n === EVENTS - 1, 'the newest event');
    assert.deepEqual(events.messages.map((m) => JSON.parse(m.payload).n), Array.from({ length: QUEUE }, (_, i) => EVENTS - QUEUE + i));
    // Every clearing waited (six topics a device); of the events only the newest QUEUE.
    assert.deepEqual(whileDown, { published: publishedBefore, dropped: EVENTS - QUEUE, queued: 6 * DEVICES + QUEUE, inFlight: 0 });
    assert.equal(pub.stats().dropped, EVENTS - QUEUE);
  });

  it('past its limit of retained topics the queue drops the oldest, and says so in one line a minute', async () => {
    const { lines, logger } = capturedLog();
    // Nothing listens there: the publisher is never connected.
    const port = await new Promise<number>((resolve) => {
      const s = net.createServer().listen(0, '127.0.0.1', () => {
        const p = (s.address() as net.AddressInfo).port;
        s.close(() => resolve(p));
      });
    });
    const options = publisherOptions(port, { retainedQueueLimit: 12, logger, homeAssistantDiscovery: false });
    const pub = new MqttPublisher(options);
    cleanup.push(() => pub.close());
    for (const id of ['a', 'b', 'c']) pub.removeDevice(id);
    assert.equal(pub.stats().queued, 12);
    assert.equal(pub.stats().dropped, 6);
    const node = `${options.discoveryPrefix}/sensor/voice-hub_${options.instanceId}`;
    assert.deepEqual(lines, [
      `warn: Mqtt: MQTT queue full: 12 retained topics already wait for broker 127.0.0.1:${port}; dropped the oldest, ${node}/a_battery/config, whose retained message stays at the broker`,
    ]);
    assert.ok(!lines.some((l) => l.includes(`${options.topicPrefix}/devices/a/state`)), 'one line, not one a topic');
  });
});
