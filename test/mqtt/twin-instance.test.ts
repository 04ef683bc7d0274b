// Two hubs with one instance id on one broker: a data directory copied to a second Pi (a cloned SD card, a
// restored backup). They take the connection from each other (the broker closes the older of two
// connections with one client id), and each used to clear the other's Home Assistant device configs as
// "left by an earlier run" at every takeover, so the devices came and went in Home Assistant and could end
// up gone. Configs are now cleared only once a connection has outlasted the twin's longest reconnect
// delay twice over, which a twin never lets happen; once the twin is gone they are cleared as before.
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { MqttPublisher } from '../../src/mqtt/publisher.js';
import { startMosquitto, type Mosquitto } from '../support/mosquitto.js';
import { sleep, waitUntil } from '../support/wait.js';
import { capturedLog, connectedPublisher, device, publisherOptions, Subscriber } from './helpers.js';

describe('two hubs with one instance id', () => {
  let broker: Mosquitto | undefined;
  const cleanup: (() => Promise<unknown> | void)[] = [];
  after(async () => {
    for (const c of cleanup.reverse()) await c();
    await broker?.stop();
  });

  it('do not clear each other\'s device configs while both run; the one left clears them once alone', async () => {
    broker = await startMosquitto();
    // A second of back-off at most: the configs wait 2 s, a margin of a second for a loaded machine's reconnect.
    const options = publisherOptions(broker.port, { reconnectMaxMs: 1000 });
    const node = `${options.discoveryPrefix}/sensor/voice-hub_${options.instanceId}`;
    const watch = await Subscriber.connect(broker.port, [`${node}/+/config`]);
    cleanup.push(() => watch.end());
    const kitchen = ['battery', 'cpu', 'memory', 'status', 'temperature'].map((s) => `${node}/kitchen_${s}/config`);

    const first = await connectedPublisher(options);
    cleanup.push(() => first.close());
    first.syncDevices([device('kitchen')]);
    await waitUntil(() => kitchen.every((t) => watch.messages.some((m) => m.topic === t && m.payload !== '')), 'the kitchen configs');

    const { lines, logger } = capturedLog();
    const twin = new MqttPublisher({ ...options, logger });
    cleanup.push(() => twin.close());
    twin.syncDevices([]);
    twin.start();
    // Both run through several takeovers: each waits at most reconnectMaxMs before taking the connection back.
    await waitUntil(() => lines.filter((l) => l.includes('connected to MQTT broker')).length >= 2, 'the twin to connect twice', 10_000);
    await sleep(4 * options.reconnectMaxMs!);
    const cleared = (): string[] => watch.messages.filter((m) => kitchen.includes(m.topic) && m.payload === '').map((m) => m.topic);
    assert.deepEqual(cleared(), [], 'a kitchen config was cleared while both hubs ran');
    assert.deepEqual(lines.filter((l) => l.includes('clearing')), []);

    await first.close();
    await waitUntil(() => cleared().length === kitchen.length, 'the twin, alone, to clear the configs of a device it does not have', 10_000);
    assert.deepEqual(cleared().sort(), [...kitchen].sort());
  });
});
