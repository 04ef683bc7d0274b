// `<prefix>/status` is the availability topic of every entity the hub announces to Home Assistant, and any
// client of a shared broker can publish to it. An `offline` left there by someone else (another hub with
// the same prefix stopping, a forged or stray message) made Home Assistant show the hub and all its devices
// unavailable for as long as the hub's connection lasted, Home Assistant's own restarts included. The hub
// answers it with `online` at the end of an interval, once however many come, if still connected then.
// Real mosquitto.
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import mqtt from 'mqtt';
import { MqttPublisher } from '../../src/mqtt/publisher.js';
import { startMosquitto } from '../support/mosquitto.js';
import { sleep, waitUntil } from '../support/wait.js';
import { capturedLog, connectedPublisher, device, publisherOptions, Subscriber } from './helpers.js';

describe("another client's word on the hub's availability topic", () => {
  const cleanup: (() => Promise<unknown> | void)[] = [];
  after(async () => {
    for (const c of cleanup.reverse()) await c();
  });

  /** What the broker keeps retained on `topic`, as a client subscribing now (Home Assistant starting) reads it. */
  const retainedOn = async (port: number, topic: string): Promise<string | undefined> => {
    const reader = await Subscriber.connect(port, [topic]);
    try {
      await reader.barrier(topic);
      return reader.messages.find((m) => m.retain)?.payload;
    } finally {
      await reader.end();
    }
  };

  it('a retained `offline` another client leaves there is answered with a retained `online`; a live one too', async () => {
    const b = await startMosquitto();
    cleanup.push(() => b.stop());
    const options = publisherOptions(b.port);
    const pub = await connectedPublisher(options);
    cleanup.push(() => pub.close());
    pub.syncDevices([device('kitchen')]);
    const status = `${options.topicPrefix}/status`;
    await waitUntil(async () => (await retainedOn(b.port, status)) === 'online', 'the hub to say online');

    const other = await Subscriber.connect(b.port, [`${options.topicPrefix}/unused`]);
    cleanup.push(() => other.end());
    await other.publish(status, 'offline', true);
    await waitUntil(async () => (await retainedOn(b.port, status)) === 'online', 'online again after a retained offline', 10_000);

    // A live (not retained) `offline`: Home Assistant marks the entities unavailable for it all the same.
    const watcher = await Subscriber.connect(b.port, [status]);
    cleanup.push(() => watcher.end());
    await watcher.barrier(status);
    await sleep(1100); // past the interval of the first answer
    const before = watcher.messages.length;
    await other.publish(status, 'offline', false);
    await watcher.waitFor((m) => watcher.messages.indexOf(m) > before && m.payload === 'online', 'online after a live offline');
    assert.equal(await retainedOn(b.port, status), 'online');
    // An empty retained payload deletes the retained message: Home Assistant restarting would read nothing.
    await other.publish(status, '', true);
    await waitUntil(async () => (await retainedOn(b.port, status)) === 'online', 'online again after the retained message was cleared', 10_000);
  });

  it('a flood of them costs one answer per interval and a few log lines; the hub\'s own `offline` at its stop stays', async () => {
    const INTERVAL = 1000;
    const b = await startMosquitto();
    cleanup.push(() => b.stop());
    const { lines, logger } = capturedLog('Information');
    const options = publisherOptions(b.port, { logger, availabilityResendIntervalMs: INTERVAL });
    const pub = await connectedPublisher(options);
    cleanup.push(() => pub.close());
    const status = `${options.topicPrefix}/status`;
    await waitUntil(async () => (await retainedOn(b.port, status)) === 'online', 'the hub to say online');
    await waitUntil(() => pub.stats().inFlight === 0 && pub.stats().queued === 0, 'the connect to be delivered');
    const published = pub.stats().published;

    const flooder = await mqtt.connectAsync({ host: '127.0.0.1', port: b.port, reconnectPeriod: 0 });
    cleanup.push(() => flooder.endAsync(true));
    const started = performance.now();
    for (let i = 0; i < 2000; i++) flooder.publish(status, 'offline', { qos: 0, retain: i % 2 === 0 });
    await flooder.publishAsync(status, 'offline', { qos: 1, retain: true });
    const flooded = performance.now() - started;
    await sleep(2 * INTERVAL + 500);
    const answers = pub.stats().published - published;
    // One at once, then at most one per interval while the flood lasted, and one at the end of it.
    assert.ok(answers >= 1 && answers <= 3 + Math.ceil(flooded / INTERVAL), `${answers} answers to 2001 messages in ${Math.round(flooded)} ms`);
    assert.equal(await retainedOn(b.port, status), 'online');
    const said = lines.filter((l) => l.includes("published something other than 'online'"));
    assert.ok(said.length >= 1 && said.length <= 5, said.join('\n'));

    await pub.close();
    assert.equal(await retainedOn(b.port, status), 'offline', 'the hub\'s own offline at its stop is not answered');
  });

  it("a broker shutting down hands the hub its own last will: neither answered nor logged as another client's", async () => {
    const b = await startMosquitto();
    cleanup.push(() => b.stop());
    const { lines, logger } = capturedLog('Information');
    const options = publisherOptions(b.port, { logger, reconnectMinMs: 5000, reconnectMaxMs: 5000 });
    const pub = await connectedPublisher(options);
    cleanup.push(() => pub.close());
    await waitUntil(() => pub.stats().published >= 5 && pub.stats().inFlight === 0, 'the connect to be delivered');
    await b.stop();
    await waitUntil(() => !pub.state().connected, 'the publisher to see the broker gone');
    await sleep(1500);
    assert.equal(pub.stats().inFlight, 0, 'nothing handed to a connection that is gone');
    assert.deepEqual(lines.filter((l) => l.includes("something other than 'online'")), []);
  });

  it('a publisher that never saw the topic change publishes `online` once, at connect', async () => {
    const b = await startMosquitto();
    cleanup.push(() => b.stop());
    const options = publisherOptions(b.port);
    const watcher = await Subscriber.connect(b.port, [`${options.topicPrefix}/status`]);
    cleanup.push(() => watcher.end());
    const pub = new MqttPublisher(options);
    cleanup.push(() => pub.close());
    pub.start();
    await watcher.waitFor((m) => m.payload === 'online', 'online at connect');
    await sleep(1500);
    assert.deepEqual(watcher.messages.map((m) => m.payload), ['online']);
  });
});
