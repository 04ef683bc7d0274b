// A broker that keeps the connection open and acknowledges nothing delivers nothing: health must not say
// Healthy "connected" then. The mqtt check is Degraded once the oldest QoS 1 message the broker has not
// acknowledged has waited longer than the limit (30 s as shipped; shortened here), and the hub logs
// it once when it starts and once when it ends. A real mosquitto, stopped with SIGSTOP (its socket
// stays open, nothing is answered; the keepalive is long enough not to notice during the test).
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { createMqttCheck } from '../../src/health/checks.js';
import { MqttPublisher } from '../../src/mqtt/publisher.js';
import { startMosquitto, type Mosquitto } from '../support/mosquitto.js';
import { sleep, waitUntil } from '../support/wait.js';
import { capturedLog, device, publisherOptions, STOPPED_LISTENING } from './helpers.js';

describe('a connected broker that acknowledges nothing', () => {
  const cleanup: (() => Promise<unknown> | void)[] = [];
  after(async () => {
    for (const c of cleanup.reverse()) await c();
  });

  const LIMIT = 400;
  const setUp = async (): Promise<{ b: Mosquitto; pub: MqttPublisher; lines: string[]; where: string; prefix: string }> => {
    const b = await startMosquitto();
    cleanup.push(() => b.stop());
    const { lines, logger } = capturedLog();
    const options = publisherOptions(b.port, { logger, keepaliveSeconds: 60, unacknowledgedLimitMs: LIMIT });
    const pub = new MqttPublisher(options);
    cleanup.push(() => pub.close());
    pub.start();
    await waitUntil(() => pub.state().connected && pub.stats().queued === 0 && pub.stats().inFlight === 0, 'online and the hub\'s configs to be delivered');
    lines.length = 0;
    return { b, pub, lines, where: `127.0.0.1:${b.port}`, prefix: options.topicPrefix };
  };

  it('is Degraded once the oldest unacknowledged message waited longer than the limit, Healthy again once acknowledgements flow', async () => {
    const { b, pub, lines, where } = await setUp();
    const check = createMqttCheck(pub);
    assert.deepEqual(await check(), {
      status: 'Healthy', description: `connected to ${where}`, data: { broker: where, published: 5, dropped: 0, queued: 0, inFlight: 0 }, tags: ['mqtt'],
    });

    b.pause();
    // Read before the messages go out, so that none can have been sent earlier than this.
    const sent = performance.now();
    for (let i = 0; i < 3; i++) pub.publishSessionEvent('s1', { n: i });
    assert.equal((await check()).status, 'Healthy', 'within the limit');
    await waitUntil(async () => (await check()).status === 'Degraded', 'the check to say Degraded', 5000);
    assert.ok(performance.now() - sent >= LIMIT, 'not before the limit');
    assert.deepEqual(await check(), {
      status: 'Degraded',
      description: `connected to ${where}, but the oldest of the 3 messages it has not acknowledged was sent more than 400 ms ago`,
      data: { broker: where, published: 5, dropped: 0, queued: 0, inFlight: 3 },
      tags: ['mqtt'],
    });
    assert.deepEqual(pub.state(), { connected: true, broker: where, stalled: { unacknowledged: 3, limitMs: LIMIT } });
    await waitUntil(() => lines.length > 0, 'the log line');
    await sleep(3 * LIMIT);
    const stalled = `warn: Mqtt: MQTT broker ${where} has not acknowledged a message for more than 400 ms (3 unacknowledged, 0 waiting behind them) ` +
      'although the connection is open; /health says Degraded until it does';
    assert.deepEqual(lines, [stalled], 'logged once');

    b.resume();
    await waitUntil(() => pub.stats().inFlight === 0, 'the acknowledgements');
    assert.deepEqual(await check(), {
      status: 'Healthy', description: `connected to ${where}`, data: { broker: where, published: 8, dropped: 0, queued: 0, inFlight: 0 }, tags: ['mqtt'],
    });
    assert.deepEqual(lines, [stalled, `info: Mqtt: MQTT broker ${where} acknowledges messages again`]);
  });

  // A broker gone without a word (its host powered off) looks the same until the keepalive: the session
  // events handed to it are not delivered, and a stop must keep them (ConfiguredMqttPublisher.close).
  it('closed with messages unacknowledged: the events sent are undelivered, in order, before those still queued; state owed is not', async () => {
    const { b, pub, prefix } = await setUp();
    b.pause();
    pub.publishSessionEvent('s1', { n: 1 });
    pub.publishDeviceState(device('d1'));
    pub.publishSessionEvent('s2', { n: 2 });
    await waitUntil(() => pub.stats().queued === 0 && pub.stats().inFlight >= 3, 'everything handed to mqtt.js');
    await pub.close();
    b.resume();
    const event = (id: string, n: number) => ({ topic: `${prefix}/sessions/${id}/event`, payload: JSON.stringify({ n }), retain: false });
    assert.deepEqual(pub.undelivered(), [event('s1', 1), event('s2', 2)]);
    assert.deepEqual(pub.undelivered(), [], 'handed over once');
  });

  it('the one message left unacknowledged, then the connection closed: logged as ended, Degraded for the connection', async () => {
    const { b, pub, lines, where } = await setUp();
    const check = createMqttCheck(pub);
    b.pause();
    pub.publishSessionEvent('s1', { n: 1 });
    await waitUntil(async () => (await check()).status === 'Degraded', 'the check to say Degraded', 5000);
    assert.equal((await check()).description, `connected to ${where}, but the message it has not acknowledged was sent more than 400 ms ago`);
    // Killed, not stopped: resumed to take SIGTERM, mosquitto sometimes read and acknowledged the message
    // first (under load; a CI run failed on it twice), and the connection ended with nothing unacknowledged.
    await b.crash();
    await waitUntil(() => !pub.state().connected, 'the connection to close');
    // How the broker's end shows is the socket's to say: a reset (our message unread in its buffer), or a
    // close, which after a connection this short reads as one by a broker that stopped listening (client.ts,
    // said once that is checked), or as a plain close past 5 s.
    await waitUntil(() => lines.some((l) => l.includes(' unavailable: ')), 'the line saying why');
    const unavailable = lines.find((l) => l.includes(' unavailable: '));
    assert.match(unavailable ?? '', new RegExp(`^warn: Mqtt: MQTT broker ${where} unavailable: (read ECONNRESET|${STOPPED_LISTENING}|connection closed); retrying$`));
    assert.deepEqual(lines.slice(0, 3), [
      `warn: Mqtt: MQTT broker ${where} has not acknowledged a message for more than 400 ms (1 unacknowledged, 0 waiting behind them) ` +
        'although the connection is open; /health says Degraded until it does',
      unavailable,
      `info: Mqtt: MQTT broker ${where}: the connection that left messages unacknowledged has closed`,
    ]);
    assert.equal((await check()).status, 'Degraded');
    assert.equal(pub.state().stalled, undefined);
  });
});
