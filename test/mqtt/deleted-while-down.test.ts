// Devices deleted while the broker is unreachable: the clearing of their retained topics (state and five
// discovery configs each) must reach the broker once it is back, however many devices were deleted and
// however many session events piled up meanwhile. The queue holds events and retained messages apart:
// events drop oldest first at the queue's limit; retained messages, one per topic, are never pushed out
// by them. The broker stays up (and keeps its retained messages) behind a TCP relay the test cuts.
import assert from 'node:assert/strict';
import net from 'node:net';
import { after, describe, it } from 'node:test';
import { createLogger } from '../../src/log/logger.js';
import { MqttPublisher } from '../../src/mqtt/publisher.js';
import { OutgoingQueue } from '../../src/mqtt/queue.js';
import { startMosquitto, type Mosquitto } from '../support/mosquitto.js';
import { waitUntil } from '../support/wait.js';
import { device, publisherOptions, Subscriber } from './helpers.js';

/** A loopback relay to `port` that can be cut (open connections closed, new ones refused) and restored. */
class Relay {
  private readonly sockets = new Set<net.Socket>();
  private up = true;
  private constructor(
    private readonly server: net.Server,
    readonly port: number,
  ) {}

  static async to(target: number): Promise<Relay> {
    let relay: Relay | undefined;
    const server = net.createServer((client) => {
      if (!relay!.up) {
        client.destroy();
        return;
      }
      const upstream = net.connect(target, '127.0.0.1');
      for (const [a, b] of [[client, upstream], [upstream, client]] as const) {
        relay!.sockets.add(a);
        a.on('error', () => b.destroy());
        a.on('close', () => {
          relay!.sockets.delete(a);
          b.destroy();
        });
        a.pipe(b);
      }
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    relay = new Relay(server, (server.address() as net.AddressInfo).port);
    return relay;
  }

  cut(): void {
    this.up = false;
    for (const s of this.sockets) s.destroy();
  }

  restore(): void {
    this.up = true;
  }

  close(): Promise<void> {
    this.cut();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

const r = (topic: string, payload = '') => ({ topic, payload, retain: true });
const t = (topic: string, payload: string) => ({ topic, payload, retain: false });

describe('OutgoingQueue: retained messages and events bounded apart', () => {
  it('a full queue of events never pushes out a retained message', () => {
    const q = new OutgoingQueue(3);
    for (let i = 0; i < 10; i++) q.push(r(`clear/${i}`));
    for (let i = 0; i < 100; i++) q.push(t('event', String(i)));
    assert.equal(q.size, 13);
    assert.equal(q.retainedSize, 10);
    assert.equal(q.dropped, 97, 'the 97 oldest events');
    assert.deepEqual(q.drain(), [...Array.from({ length: 10 }, (_, i) => r(`clear/${i}`)), t('event', '97'), t('event', '98'), t('event', '99')]);
  });

  it('retained messages past the queue\'s event limit are all kept, one per topic, latest wins, in publish order', () => {
    const q = new OutgoingQueue(2);
    q.push(r('a', '1'));
    q.push(t('e', '1'));
    q.push(r('b', '1'));
    q.push(r('c', '1'));
    q.push(r('a', '2'));
    q.push(t('e', '2'));
    assert.deepEqual(q.drain(), [t('e', '1'), r('b', '1'), r('c', '1'), r('a', '2'), t('e', '2')]);
    assert.equal(q.dropped, 0);
  });

  it('past its own limit of distinct topics the oldest retained message goes, returned for the caller to report', () => {
    let limit = 2;
    const q = new OutgoingQueue(5, () => limit);
    assert.equal(q.push(r('a')), undefined);
    assert.equal(q.push(r('b')), undefined);
    assert.equal(q.push(r('b', 'again')), undefined, 'the same topic replaces, whatever the limit');
    assert.deepEqual(q.push(r('c')), r('a'));
    limit = 3; // read at each push: it may grow with what the caller knows
    assert.equal(q.push(r('d')), undefined);
    assert.equal(q.dropped, 1);
    assert.deepEqual(q.drain(), [r('b', 'again'), r('c'), r('d')]);
  });
});

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
    const relay = await Relay.to(b.port);
    cleanup.push(() => relay.close());
    // 40 devices are 240 retained topics to clear, twelve times the queue's 20 messages, and 300 events
    // push through it meanwhile.
    const DEVICES = 40;
    const QUEUE = 20;
    const EVENTS = 300;
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

    relay.cut();
    await waitUntil(() => !pub.state().connected, 'the publisher to lose the broker');
    const publishedBefore = pub.stats().published;
    for (const d of fleet) pub.removeDevice(d.id);
    for (let i = 0; i < EVENTS; i++) pub.publishSessionEvent('s1', { n: i });
    const whileDown = pub.stats();

    relay.restore();
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
    const lines: string[] = [];
    const logger = createLogger({ levels: { Default: 'Information' }, write: (l) => lines.push(l), journald: false, timestamps: false }, 'Mqtt');
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
      `warn: Mqtt: MQTT queue full: 12 retained topics already wait for broker 127.0.0.1:${port}; dropped the oldest, ${options.topicPrefix}/devices/a/state, whose retained message stays at the broker`,
    ]);
    assert.ok(!lines.some((l) => l.includes(node)), 'one line, not one a topic');
  });
});
