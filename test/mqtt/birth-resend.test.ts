// Home Assistant's birth message (`online` on `<discovery>/status`) makes the hub send every config and
// state again; any client of the broker can publish it as often as it likes. At most one re-send per
// interval: the first at once, all that arrive within the interval together at its end. Real mosquitto.
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import mqtt from 'mqtt';
import { silentLogger, type Logger } from '../../src/log/logger.js';
import { MqttPublisher } from '../../src/mqtt/publisher.js';
import { startMosquitto } from '../support/mosquitto.js';
import { sleep, waitUntil } from '../support/wait.js';
import { capturedLog, connectedPublisher, device, publisherOptions, Subscriber } from './helpers.js';

describe("Home Assistant's birth message, sent too often", () => {
  const cleanup: (() => Promise<unknown> | void)[] = [];
  after(async () => {
    for (const c of cleanup.reverse()) await c();
  });

  /** A broker, and a publisher re-sending at most every `intervalMs` that has delivered these devices. */
  const deliveredTo = async (intervalMs: number, ids: string[], logger: Logger = silentLogger) => {
    const b = await startMosquitto();
    cleanup.push(() => b.stop());
    const options = publisherOptions(b.port, { homeAssistantResendIntervalMs: intervalMs, logger });
    const pub = await connectedPublisher(options);
    cleanup.push(() => pub.close());
    pub.syncDevices(ids.map((id) => device(id)));
    await waitUntil(() => pub.stats().queued === 0 && pub.stats().inFlight === 0, 'the devices to be delivered');
    return { b, options, pub };
  };

  it('a flood of 500 gets one re-send at once and one at the end of the interval, nothing more, and one log line', async () => {
    const INTERVAL = 2000;
    const { lines, logger } = capturedLog('Trace');
    const { b, options, pub } = await deliveredTo(INTERVAL, ['a', 'b', 'c'], logger);
    // A re-send: the hub's 4 configs, and each device's 5 configs and its state.
    const RESEND = 4 + 3 * 6;
    const ha = await Subscriber.connect(b.port, [`${options.discoveryPrefix}/sensor/#`, `${options.topicPrefix}/devices/#`]);
    cleanup.push(() => ha.end());
    await ha.barrier(`${options.topicPrefix}/devices/barrier`);
    const live = () => ha.messages.filter((m) => !m.retain && !m.topic.endsWith('/barrier')).length;

    const flooder = await mqtt.connectAsync({ host: '127.0.0.1', port: b.port, reconnectPeriod: 0 });
    cleanup.push(() => flooder.endAsync(true));
    const before = pub.stats().published;
    const resent = () => pub.stats().published - before;
    // The first re-send starts after this, and the second an interval after the first starts. Measured
    // from here, not from when the first was seen done: on a busy machine that was seen late, which
    // shortened the measured interval without the hub doing anything early.
    const flooded = performance.now();
    for (let i = 0; i < 500; i++) flooder.publish(`${options.discoveryPrefix}/status`, 'online', { qos: 0 });
    await waitUntil(() => resent() >= RESEND, 'the first re-send');
    await sleep(INTERVAL / 4);
    assert.equal(resent(), RESEND, 'one re-send within the interval');

    await waitUntil(() => resent() > RESEND, 'the re-send at the end of the interval', INTERVAL * 3);
    const second = performance.now();
    await waitUntil(() => resent() >= 2 * RESEND, 'the second re-send to complete');
    assert.ok(second - flooded >= INTERVAL, `the second re-send came ${Math.round(second - flooded)} ms after the flood began`);
    await sleep(INTERVAL + 500);
    assert.equal(resent(), 2 * RESEND, 'the 498 others were part of the second');
    await waitUntil(() => live() >= 2 * RESEND, 'Home Assistant to get both');
    assert.equal(live(), 2 * RESEND);
    assert.equal(pub.stats().dropped, 0);
    // Each run logged once, and the wait once for the 499 that came within the interval, not once each.
    assert.equal(lines.filter((l) => l.includes('Home Assistant came online again; re-sending discovery in')).length, 1, lines.join('\n'));
    assert.equal(lines.filter((l) => l.includes('Home Assistant came online; re-sending discovery for the hub')).length, 2);
  });

  it('a retained birth message, read as the hub subscribes, sends nothing twice: the connect itself sent everything', async () => {
    const b = await startMosquitto();
    cleanup.push(() => b.stop());
    const options = publisherOptions(b.port);
    // Left retained by a Home Assistant configured so, or by any client: the broker hands it to every new subscription.
    const ha = await Subscriber.connect(b.port, [`${options.discoveryPrefix}/sensor/#`]);
    cleanup.push(() => ha.end());
    await ha.publish(`${options.discoveryPrefix}/status`, 'online', true);
    const pub = new MqttPublisher(options);
    cleanup.push(() => pub.close());
    pub.syncDevices([device('a'), device('b')]);
    pub.start();
    // `online`, the hub's 4 configs, and each device's 5 configs and its state.
    const CONNECT = 1 + 4 + 2 * 6;
    await waitUntil(() => pub.stats().published >= CONNECT, 'the connect\'s messages');
    await sleep(1000);
    assert.equal(pub.stats().published, CONNECT);
    assert.equal(ha.messages.filter((m) => m.topic.endsWith('/a_battery/config')).length, 1);

    // A birth while connected comes without the retain flag (MQTT 3.3.1-9), however it was published: answered.
    await ha.publish(`${options.discoveryPrefix}/status`, 'online', true);
    await waitUntil(() => pub.stats().published >= CONNECT + 4 + 2 * 6, 'the re-send for the new birth');
  });

  it('a birth message after a quiet interval is answered at once', async () => {
    const INTERVAL = 500;
    const { b, options, pub } = await deliveredTo(INTERVAL, ['a']);
    const ha = await Subscriber.connect(b.port, [`${options.discoveryPrefix}/#`]);
    cleanup.push(() => ha.end());
    const before = pub.stats().published;
    for (let round = 1; round <= 2; round++) {
      const sent = performance.now();
      await ha.publish(`${options.discoveryPrefix}/status`, 'online');
      await waitUntil(() => pub.stats().published - before >= round * (4 + 6), `re-send ${round}`);
      assert.ok(performance.now() - sent < INTERVAL, `re-send ${round} came at once`);
      await sleep(INTERVAL + 100);
    }
    assert.equal(pub.stats().published - before, 2 * (4 + 6));
  });
});
