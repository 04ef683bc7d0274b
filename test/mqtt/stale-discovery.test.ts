// Retained discovery configs under this hub's own Home Assistant node that no known device accounts for,
// left by an earlier run: a device deleted while the broker was away and the service restarted before
// it came back (the clearing messages waited in a queue that a restart abandons), or a restored backup.
// They would keep a device in Home Assistant, shown available, for good. Real mosquitto throughout.
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { MAX_INCOMING_PACKET_BYTES } from '../../src/mqtt/packet-limit.js';
import { MqttPublisher, type MqttPublisherOptions } from '../../src/mqtt/publisher.js';
import { startMosquitto, type Mosquitto } from '../support/mosquitto.js';
import { waitUntil } from '../support/wait.js';
import { capturedLog, connectedPublisher, device, publisherOptions, Subscriber } from './helpers.js';

describe('retained discovery configs an earlier run left behind', () => {
  let broker: Mosquitto | undefined;
  const cleanup: (() => Promise<unknown> | void)[] = [];
  after(async () => {
    for (const c of cleanup.reverse()) await c();
    await broker?.stop();
  });
  const retainedConfigs = async (node: string): Promise<string[]> => {
    const sub = await Subscriber.connect(broker!.port, [`${node}/#`]);
    cleanup.push(() => sub.end());
    await sub.barrier(`${node}/barrier`);
    return sub.messages.filter((m) => m.retain && m.topic.endsWith('/config') && m.payload !== '').map((m) => m.topic.slice(node.length + 1, -'/config'.length)).sort();
  };

  it('are cleared at connect; the hub\'s, the known devices\' and another hub\'s stay', async () => {
    broker = await startMosquitto();
    const options = publisherOptions(broker.port);
    const other = publisherOptions(broker.port, { discoveryPrefix: options.discoveryPrefix });
    const node = `${options.discoveryPrefix}/sensor/voice-hub_${options.instanceId}`;
    const otherNode = `${options.discoveryPrefix}/sensor/voice-hub_${other.instanceId}`;

    const neighbour = await connectedPublisher(other);
    cleanup.push(() => neighbour.close());
    neighbour.syncDevices([device('gone')]);
    const earlier = await connectedPublisher(options);
    earlier.syncDevices([device('kept'), device('gone'), device('gone/2')]);
    await waitUntil(() => earlier.stats().queued + earlier.stats().inFlight + neighbour.stats().queued + neighbour.stats().inFlight === 0, 'the first run to be delivered');
    await earlier.close();

    const live = await Subscriber.connect(broker.port, [`${node}/+/config`]);
    cleanup.push(() => live.end());
    const { lines, logger } = capturedLog();
    // As the service does (mqtt/configured.ts): the known devices first, then the connection, so that
    // the retained configs the broker answers with are judged against them whenever they arrive.
    const later = new MqttPublisher({ ...options, logger });
    cleanup.push(() => later.close());
    later.syncDevices([device('kept')]);
    later.start();
    await waitUntil(() => later.state().connected, 'the later run to connect');
    const hub = ['hub_active_sessions', 'hub_devices_online', 'hub_upstream', 'hub_version'];
    const kept = ['kept_battery', 'kept_cpu', 'kept_memory', 'kept_status', 'kept_temperature'];
    const cleared = (): number => live.messages.filter((m) => !m.retain && m.payload === '').length;
    await waitUntil(() => cleared() >= 10, 'the stale configs to be cleared', 5000).catch(() => {});
    assert.deepEqual(await retainedConfigs(node), [...hub, ...kept].sort());
    const gone = ['gone', 'gone_2_b6e089de791b64f4'].flatMap((n) => ['battery', 'cpu', 'memory', 'status', 'temperature'].map((s) => `${n}_${s}`));
    assert.deepEqual(
      lines.filter((l) => l.includes('clearing') && l.endsWith('/config: a Home Assistant discovery config left by an earlier run, of no device this hub has')).sort(),
      gone.map((o) => `info: Mqtt: clearing ${node}/${o}/config: a Home Assistant discovery config left by an earlier run, of no device this hub has`).sort(),
    );
    assert.deepEqual(await retainedConfigs(otherNode), [...hub, 'gone_battery', 'gone_cpu', 'gone_memory', 'gone_status', 'gone_temperature'].sort());
  });

  it('the retained state of a device whose stale config is cleared goes with it (a deletion a kill -9 cut off); another hub\'s stays', async () => {
    broker ??= await startMosquitto();
    const options = publisherOptions(broker.port);
    // Another hub on the same topic prefix: its device's state carries no instance id, and no config of ours names it.
    const other = publisherOptions(broker.port, { topicPrefix: options.topicPrefix, discoveryPrefix: options.discoveryPrefix });
    const neighbour = await connectedPublisher(other);
    cleanup.push(() => neighbour.close());
    neighbour.syncDevices([device('theirs')]);
    // The store has deleted 'gone' and 'gone/2', and the process died before their clearing went out.
    const earlier = await connectedPublisher(options);
    earlier.syncDevices([device('kept'), device('gone'), device('gone/2')]);
    await waitUntil(() => earlier.stats().queued + earlier.stats().inFlight + neighbour.stats().queued + neighbour.stats().inFlight === 0, 'the first run to be delivered');
    await earlier.close();

    const states = async (): Promise<string[]> => {
      const sub = await Subscriber.connect(broker!.port, [`${options.topicPrefix}/devices/+/state`]);
      try {
        await sub.barrier(`${options.topicPrefix}/devices/barrier/state`);
        return sub.messages.filter((m) => m.retain && m.payload !== '').map((m) => m.topic).sort();
      } finally {
        await sub.end();
      }
    };
    const topic = (id: string): string => `${options.topicPrefix}/devices/${id}/state`;
    assert.deepEqual(await states(), [topic('gone'), topic('gone%2F2'), topic('kept'), topic('theirs')].sort());

    const { lines, logger } = capturedLog();
    const later = new MqttPublisher({ ...options, logger });
    cleanup.push(() => later.close());
    later.syncDevices([device('kept')]);
    later.start();
    const clearing = (): string[] => lines.filter((l) => l.includes('the retained state of a device')).sort();
    await waitUntil(() => clearing().length === 2 && later.stats().queued + later.stats().inFlight === 0, 'the stale states to be cleared', 10_000);
    assert.deepEqual(await states(), [topic('kept'), topic('theirs')]);
    assert.deepEqual(clearing(), ['gone', 'gone%2F2'].map((id) =>
      `info: Mqtt: clearing ${topic(id)}: the retained state of a device this hub no longer has (its discovery config was left by an earlier run)`).sort());
  });

  it('with discovery switched off, every config of the hub\'s node is cleared at connect; another hub\'s stay', async () => {
    broker ??= await startMosquitto();
    const options = publisherOptions(broker.port);
    const other = publisherOptions(broker.port, { discoveryPrefix: options.discoveryPrefix });
    const node = `${options.discoveryPrefix}/sensor/voice-hub_${options.instanceId}`;
    const otherNode = `${options.discoveryPrefix}/sensor/voice-hub_${other.instanceId}`;
    const neighbour = await connectedPublisher(other);
    cleanup.push(() => neighbour.close());
    const earlier = await connectedPublisher(options);
    earlier.syncDevices([device('kept')]);
    await waitUntil(() => earlier.stats().queued + earlier.stats().inFlight + neighbour.stats().queued + neighbour.stats().inFlight === 0, 'the first run to be delivered');
    await earlier.close();
    assert.equal((await retainedConfigs(node)).length, 9);

    const { lines, logger } = capturedLog();
    const later = new MqttPublisher({ ...options, homeAssistantDiscovery: false, logger });
    cleanup.push(() => later.close());
    later.syncDevices([device('kept')]);
    later.start();
    await waitUntil(async () => (await retainedConfigs(node)).length === 0, 'the configs to be cleared', 10_000, 200);
    assert.ok(lines.includes(`info: Mqtt: clearing ${node}/kept_battery/config: Home Assistant discovery is off (Mqtt.HomeAssistantDiscovery)`), lines.join('\n'));
    assert.deepEqual(await retainedConfigs(otherNode), ['hub_active_sessions', 'hub_devices_online', 'hub_upstream', 'hub_version']);
  });

  /** Options of a hub not started yet, its node, and a client of the broker that plants retained configs there. */
  const planting = async (): Promise<{ options: MqttPublisherOptions; node: string; planter: Subscriber }> => {
    broker ??= await startMosquitto();
    const options = publisherOptions(broker.port);
    const node = `${options.discoveryPrefix}/sensor/voice-hub_${options.instanceId}`;
    const planter = await Subscriber.connect(broker.port, [`${node}/barrier`]);
    cleanup.push(() => planter.end());
    return { options, node, planter };
  };

  /** The hub of `options`, started, its log captured. */
  const startedHub = (options: MqttPublisherOptions): { lines: string[]; hub: MqttPublisher } => {
    const { lines, logger } = capturedLog();
    const hub = new MqttPublisher({ ...options, logger });
    cleanup.push(() => hub.close());
    hub.start();
    return { lines, hub };
  };

  it('one over the incoming size limit, skipped unread, is cleared too; one with a hub\'s own name is published over', async () => {
    const { options, node, planter } = await planting();
    const big = `{"name":"${'x'.repeat(MAX_INCOMING_PACKET_BYTES)}"}`;
    await planter.publish(`${node}/planted_status/config`, big, true);
    await planter.publish(`${node}/hub_version/config`, big, true);
    const { lines } = startedHub(options);
    await waitUntil(async () => !(await retainedConfigs(node)).includes('planted_status'), 'the planted config to be cleared', 10_000, 200);
    assert.deepEqual(lines.filter((l) => l.includes(': clearing ')), [
      `info: Mqtt: clearing ${node}/planted_status/config: a Home Assistant discovery config left by an earlier run, of no device this hub has`,
    ]);
    assert.equal(lines.filter((l) => l.includes('skipped an MQTT message')).length, 2);
    const sub = await Subscriber.connect(options.port, [`${node}/hub_version/config`, `${node}/barrier`]);
    cleanup.push(() => sub.end());
    await sub.barrier(`${node}/barrier`);
    const version = sub.messages.find((m) => m.topic === `${node}/hub_version/config`);
    assert.ok(version !== undefined && version.payload.length < 4096, `the hub's own config again, not the planted one (${version?.payload.length} bytes)`);
  });

  it('one whose object id is longer than any a hub names is cleared at once, not held until the connection settles; the log cuts its topic', async () => {
    const { options, node, planter } = await planting();
    // The longest object id a hub gives a device's sensor is 285 characters; a topic level may be 64 KiB.
    const object = `planted_${'a'.repeat(60_000)}_status`;
    await planter.publish(`${node}/${object}/config`, '{"name":"x"}', true);
    // Settling takes twice the longest reconnect delay: a minute here, as in the service.
    const { lines } = startedHub({ ...options, reconnectMaxMs: 30_000 });
    await waitUntil(async () => !(await retainedConfigs(node)).includes(object), 'the planted config to be cleared before the connection settles', 5000, 200);
    assert.deepEqual(lines.filter((l) => l.includes(': clearing ')), [
      `info: Mqtt: clearing ${`${node}/${object}/config`.slice(0, 200)}...: a Home Assistant discovery config left by an earlier run, of no device this hub has`,
    ]);
  });

  it('many of them, as any client of the broker could publish: all cleared, 20 lines logged for them', async () => {
    const { options, node, planter } = await planting();
    for (let i = 0; i < 60; i++) await planter.publish(`${node}/planted${i}_status/config`, '{"name":"x"}', true);
    const { lines, hub } = startedHub(options);
    await waitUntil(async () => (await retainedConfigs(node)).every((o) => !o.startsWith('planted')), 'the planted configs to be cleared', 10_000, 200);
    assert.equal(lines.filter((l) => l.includes(': clearing ')).length, 20);
    // The other 40 in one line, with the last of them, as every summed-up line says it (docs/operations.md).
    await hub.close();
    const summary = lines.filter((l) => l.includes('more stale Home Assistant discovery configs cleared'));
    assert.equal(summary.length, 1, lines.join('\n'));
    assert.match(summary[0]!, new RegExp(`: 40 more stale Home Assistant discovery configs cleared in the last \\d+ s; the last: clearing ${node}/planted\\d+_status/config: a Home Assistant discovery config left by an earlier run, of no device this hub has$`));
  });
});
