// What happens when things go wrong: the process dies, the broker goes away and comes back, the
// credentials are wrong. Real mosquitto instances and a real child process throughout.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import net from 'node:net';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { BrokerConnection } from '../../src/mqtt/client.js';
import { MqttPublisher } from '../../src/mqtt/publisher.js';
import { startMosquitto, type Mosquitto } from '../support/mosquitto.js';
import { capturedLog, connectedPublisher, device, publisherOptions, Subscriber } from './helpers.js';
import { waitUntil } from '../support/wait.js';

const ROOT = path.resolve(import.meta.dirname, '../..');
const CHILD = path.join(import.meta.dirname, 'fixtures/child-publisher.ts');

describe('MqttPublisher when things fail', () => {
  const cleanup: (() => Promise<unknown> | void)[] = [];
  after(async () => {
    for (const c of cleanup.reverse()) await c();
  });
  const broker = async (options = {}): Promise<Mosquitto> => {
    const b = await startMosquitto(options);
    cleanup.push(() => b.stop());
    return b;
  };

  it('a killed process is announced offline by the broker (last will)', async () => {
    const b = await broker();
    const prefix = `vh-${randomUUID().slice(0, 8)}`;
    const instanceId = randomBytes(6).toString('hex');
    const sub = await Subscriber.connect(b.port, [`${prefix}/status`]);
    cleanup.push(() => sub.end());
    const child = spawn(process.execPath, ['--import', 'tsx', CHILD, String(b.port), prefix, instanceId], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    cleanup.push(() => void child.kill('SIGKILL'));
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    await waitUntil(() => output.includes('ready') || child.exitCode !== null, 'the child to connect', 30_000);
    assert.match(output, /ready/);
    await sub.waitFor((m) => m.payload === 'online', 'online from the child');
    child.kill('SIGKILL');
    const offline = await sub.waitFor((m) => m.payload === 'offline', 'the last will');
    assert.equal(offline.topic, `${prefix}/status`);
  });

  it('a stopped broker neither slows nor fails publishing; the queue stays bounded; all is re-sent on restart', async (t) => {
    const b = await broker();
    const { lines, logger } = capturedLog();
    const options = publisherOptions(b.port, { queueLimit: 100, logger });
    const pub = await connectedPublisher(options);
    cleanup.push(() => pub.close());
    pub.publishDeviceState(device('d1'));
    await waitUntil(() => pub.stats().published >= 11, 'online, the hub\'s 4 and the device\'s 5 discovery configs and the state to be acknowledged');
    const publishedBefore = pub.stats().published;

    await b.stop();
    await waitUntil(() => /ECONNREFUSED/.test(pub.state().lastError ?? ''), 'the publisher to see the broker gone');
    assert.deepEqual(pub.state(), {
      connected: false,
      lastError: `connect ECONNREFUSED 127.0.0.1:${b.port}`,
      broker: `127.0.0.1:${b.port}`,
    });

    const started = performance.now();
    for (let i = 0; i < 1000; i++) {
      assert.equal(pub.publishDeviceState(device('d1', { batteryLevel: i % 100 })), undefined);
      assert.equal(pub.publishSessionEvent('s1', { type: 'audio', n: i }), undefined);
    }
    t.diagnostic(`2,000 publish calls with the broker down took ${(performance.now() - started).toFixed(1)} ms`);
    // The device's latest state, owed apart from the queue, plus the newest 100 events; the 900 older events were dropped.
    assert.deepEqual(pub.stats(), { published: publishedBefore, dropped: 900, queued: 101, inFlight: 0 });
    // Lost news is logged, once a minute at most, not only counted in /health.
    const dropLines = (): string[] => lines.filter((l) => l.includes('session event'));
    assert.deepEqual(dropLines(), [
      `warn: Mqtt: MQTT queue full: 100 session events already wait for broker 127.0.0.1:${b.port}; dropped the oldest, on ${options.topicPrefix}/sessions/s1/event, which no subscriber will get`,
    ]);

    await b.restart();
    await waitUntil(() => pub.state().connected, 'the publisher to reconnect', 15_000);
    await waitUntil(() => pub.stats().queued === 0 && pub.stats().published >= publishedBefore + 100 + 11, 'the queue to be flushed');
    const sub = await Subscriber.connect(b.port, [`${options.topicPrefix}/#`, `${options.discoveryPrefix}/#`]);
    cleanup.push(() => sub.end());
    await sub.barrier(`${options.topicPrefix}/barrier`);
    // The restarted broker had no persistence: everything retained came from the publisher again.
    assert.equal(sub.on(`${options.topicPrefix}/status`)[0]?.payload, 'online');
    assert.equal(JSON.parse(sub.on(`${options.topicPrefix}/devices/d1/state`)[0]!.payload).batteryLevel, 99);
    const node = `${options.discoveryPrefix}/sensor/voice-hub_${options.instanceId}`;
    assert.equal(sub.messages.filter((m) => m.topic.startsWith(`${node}/d1_`)).length, 5);
    assert.equal(sub.messages.filter((m) => m.topic.startsWith(`${node}/hub_`)).length, 4);
    await pub.close();
    assert.match(dropLines()[1] ?? '', /^warn: Mqtt: 899 more MQTT session events dropped from the full queue in the last \d+ s$/);
  });

  it('a device deleted and registered again while the broker is down keeps its new state, not the clearing', async () => {
    const b = await broker();
    const options = publisherOptions(b.port);
    const pub = await connectedPublisher(options);
    cleanup.push(() => pub.close());
    pub.syncDevices([device('back', { name: 'Old' })]);
    await waitUntil(() => pub.stats().queued === 0 && pub.stats().inFlight === 0, 'the device to be delivered');
    await b.stop();
    await waitUntil(() => !pub.state().connected, 'the publisher to see the broker gone');
    pub.removeDevice('back');
    pub.publishDeviceState(device('back', { name: 'New', batteryLevel: 5 }));
    await b.restart();
    await waitUntil(() => pub.state().connected, 'the publisher to reconnect', 15_000);
    await waitUntil(() => pub.stats().queued === 0 && pub.stats().inFlight === 0, 'everything to be delivered');
    const sub = await Subscriber.connect(b.port, [`${options.topicPrefix}/#`, `${options.discoveryPrefix}/#`]);
    cleanup.push(() => sub.end());
    await sub.barrier(`${options.topicPrefix}/barrier`);
    const node = `${options.discoveryPrefix}/sensor/voice-hub_${options.instanceId}`;
    assert.equal(JSON.parse(sub.on(`${options.topicPrefix}/devices/back/state`)[0]!.payload).batteryLevel, 5);
    const configs = sub.messages.filter((m) => m.topic.startsWith(`${node}/back_`));
    assert.equal(configs.length, 5);
    assert.deepEqual([...new Set(configs.map((m) => JSON.parse(m.payload).device.name))], ['New']);
  });

  it('a hung broker (socket open, no acks) does not grow what mqtt.js holds; all flows once it wakes', async () => {
    const b = await broker();
    const options = publisherOptions(b.port, { queueLimit: 500, keepaliveSeconds: 30 });
    const pub = await connectedPublisher(options);
    cleanup.push(() => pub.close());
    await waitUntil(() => pub.stats().published >= 5, 'online and the hub\'s 4 discovery configs to be acknowledged');
    const live = await Subscriber.connect(b.port, [`${options.topicPrefix}/sessions/#`]);
    cleanup.push(() => live.end());
    b.pause();
    for (let i = 0; i < 2000; i++) pub.publishSessionEvent('s1', { n: i });
    const stalled = pub.stats();
    assert.ok(stalled.inFlight <= 100, `at most 100 messages handed to mqtt.js, got ${stalled.inFlight}`);
    assert.equal(stalled.queued, 500);
    assert.equal(stalled.inFlight + stalled.queued + stalled.dropped + stalled.published - 5, 2000);
    b.resume();
    await waitUntil(() => pub.stats().queued === 0 && pub.stats().inFlight === 0, 'the backlog to be delivered', 15_000);
    await live.waitFor((m) => JSON.parse(m.payload).n === 1999, 'the newest event');
    // Only the oldest events were dropped: what arrived is the first in-flight batch and the newest 500.
    const received = live.messages.map((m) => JSON.parse(m.payload).n as number);
    assert.deepEqual(received.slice(-500), Array.from({ length: 500 }, (_, i) => 1500 + i));
  });

  it('wrong credentials: not connected, with the broker\'s reason', async () => {
    const b = await broker({ users: { hub: 'right-password' } });
    const wrong = new MqttPublisher(publisherOptions(b.port, { username: 'hub', password: 'wrong' }));
    cleanup.push(() => wrong.close());
    wrong.start();
    await waitUntil(() => wrong.state().lastError !== undefined, 'the connection to be refused');
    assert.equal(wrong.state().connected, false);
    // The reason names the user and the settings to check, never the password.
    assert.equal(wrong.state().lastError, 'Connection refused: Not authorized (the broker refused the login as user hub: check Mqtt.Username and Mqtt.Password)');
    // Anonymous is refused too; the right password gets in.
    const anonymous = new MqttPublisher(publisherOptions(b.port));
    cleanup.push(() => anonymous.close());
    anonymous.start();
    await waitUntil(() => anonymous.state().lastError !== undefined, 'the anonymous connection to be refused');
    assert.equal(anonymous.state().lastError, 'Connection refused: Not authorized (the broker refused a connection without a user name: set Mqtt.Username and Mqtt.Password)');
    const right = await connectedPublisher(publisherOptions(b.port, { username: 'hub', password: 'right-password' }));
    cleanup.push(() => right.close());
    assert.equal(right.state().connected, true);
  });

  it('a port that accepts the connection and never answers in MQTT (another service, a web server): says what to check', async () => {
    const sockets: net.Socket[] = [];
    const silent = net.createServer((socket) => {
      sockets.push(socket);
      socket.on('error', () => {});
    });
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    cleanup.push(() => new Promise((resolve) => {
      for (const s of sockets) s.destroy();
      silent.close(resolve);
    }));
    const port = (silent.address() as net.AddressInfo).port;
    const reasons: (string | undefined)[] = [];
    const connection = new BrokerConnection({
      host: '127.0.0.1', port, username: '', password: '', clientId: 'vh-silent-test',
      will: { topic: 'vh-silent-test/status', payload: 'offline', retain: true },
      keepaliveSeconds: 30, reconnectMinMs: 60_000, reconnectMaxMs: 60_000, connectTimeoutMs: 300,
    }, { connected: () => {}, disconnected: (reason) => reasons.push(reason), message: () => {}, skipped: () => {}, subscriptionRefused: () => {} });
    cleanup.push(() => connection.end(undefined, 1000));
    connection.start();
    await waitUntil(() => reasons.length > 0, 'the attempt to fail');
    assert.deepEqual(reasons, [
      `no answer to the MQTT connection request within 300 ms (connack timeout): is port ${port} the broker's MQTT port, not another service's?`,
    ]);
  });

  it('no broker at all: keeps retrying and says why', async () => {
    const port = await new Promise<number>((resolve) => {
      const s = net.createServer().listen(0, '127.0.0.1', () => {
        const p = (s.address() as net.AddressInfo).port;
        s.close(() => resolve(p));
      });
    });
    const pub = new MqttPublisher(publisherOptions(port));
    cleanup.push(() => pub.close());
    pub.start();
    pub.publishDeviceState(device('d1'));
    await waitUntil(() => pub.state().lastError !== undefined, 'a connection error');
    assert.deepEqual(pub.state(), { connected: false, lastError: `connect ECONNREFUSED 127.0.0.1:${port}`, broker: `127.0.0.1:${port}` });
    assert.equal(pub.stats().queued, 6, 'five discovery configs and the state wait for the broker');
  });
});
