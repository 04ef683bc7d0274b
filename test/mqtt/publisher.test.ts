// MqttPublisher against a real mosquitto: what a subscriber such as Home Assistant actually sees; session
// events as the running service publishes them (sessions started over HTTP, ended in each way).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { call } from '../support/http.js';
import { startMosquitto, type Mosquitto } from '../support/mosquitto.js';
import { startService } from '../support/service.js';
import { registerDevice } from '../support/tokens.js';
import { joinedClient, startEcho, startSession } from '../support/voice.js';
import { connectedPublisher, device, publisherOptions, Subscriber } from './helpers.js';
import { waitUntil } from '../support/wait.js';

describe('MqttPublisher with a live broker', () => {
  let broker: Mosquitto;
  const cleanup: (() => Promise<unknown>)[] = [];
  before(async () => {
    broker = await startMosquitto();
  });
  after(async () => {
    for (const c of cleanup.reverse()) await c();
    await broker.stop();
  });
  const subscribe = async (filters: string[]) => {
    const sub = await Subscriber.connect(broker.port, filters);
    cleanup.push(() => sub.end());
    return sub;
  };
  const publisher = async (over = {}) => {
    const options = publisherOptions(broker.port, over);
    const pub = await connectedPublisher(options);
    cleanup.push(() => pub.close());
    return { pub, prefix: options.topicPrefix, ha: options.discoveryPrefix, node: `${options.discoveryPrefix}/sensor/voice-hub_${options.instanceId}`, instanceId: options.instanceId };
  };

  it('announces itself online and keeps device state retained', async () => {
    const { pub, prefix } = await publisher();
    pub.publishDeviceState(device('d1'));
    await waitUntil(() => pub.stats().published >= 11, 'online, 4 + 5 discovery configs and the state to be acknowledged');
    const sub = await subscribe([`${prefix}/#`]);
    await sub.barrier(`${prefix}/barrier`);
    assert.deepEqual(sub.on(`${prefix}/status`), [{ topic: `${prefix}/status`, payload: 'online', retain: true }]);
    const [state] = sub.on(`${prefix}/devices/d1/state`);
    assert.equal(state?.retain, true);
    assert.deepEqual(JSON.parse(state!.payload), {
      status: 'online',
      lastSeen: '2025-01-02T03:04:05.000Z',
      batteryLevel: 87,
      temperature: 41.5,
      memoryUsage: 33,
      cpuUsage: 12.5,
    });
    assert.deepEqual(pub.state(), { connected: true, broker: `127.0.0.1:${broker.port}` });
  });

  it('takes over what a replaced publisher could not deliver, but no clearing of a device it knows now', async () => {
    const { pub, prefix } = await publisher();
    pub.syncDevices([device('back')]);
    await waitUntil(() => pub.stats().queued + pub.stats().inFlight === 0, 'the device to be delivered');
    const sub = await subscribe([`${prefix}/#`]);
    await sub.barrier(`${prefix}/barrier`);
    // As the old publisher's queue held them: a device deleted there and registered again since.
    pub.takeOver([
      { topic: `${prefix}/devices/back/state`, payload: '', retain: true },
      { topic: `${prefix}/devices/gone/state`, payload: '', retain: true },
      { topic: `${prefix}/sessions/s1/event`, payload: '{"event":"ended"}', retain: false },
    ]);
    await sub.waitFor((m) => m.topic === `${prefix}/sessions/s1/event`, 'the event taken over');
    await sub.barrier(`${prefix}/barrier`);
    assert.deepEqual(sub.messages.filter((m) => !m.retain && !m.topic.endsWith('/barrier')).map((m) => [m.topic, m.payload]), [
      [`${prefix}/devices/gone/state`, ''],
      [`${prefix}/sessions/s1/event`, '{"event":"ended"}'],
    ]);
  });

  it('publishes retained Home Assistant discovery configs for a new device', async () => {
    const { pub, prefix, ha, node, instanceId } = await publisher();
    pub.publishDeviceState(device('kitchen', { name: 'Kitchen', type: 'rpi-zero' }));
    await waitUntil(() => pub.stats().published >= 11, 'messages to be acknowledged');
    const sub = await subscribe([`${ha}/#`]);
    await sub.barrier(`${ha}/barrier`);
    const configs = sub.messages.filter((m) => m.topic.endsWith('/config'));
    assert.deepEqual(
      configs.map((m) => m.topic).sort(),
      [
        ...['active_sessions', 'devices_online', 'upstream', 'version'].map((o) => `${node}/hub_${o}/config`),
        ...['battery', 'cpu', 'memory', 'status', 'temperature'].map((o) => `${node}/kitchen_${o}/config`),
      ].sort(),
    );
    assert.ok(configs.every((m) => m.retain));
    const temperature = sub.on(`${node}/kitchen_temperature/config`)[0]!;
    assert.deepEqual(JSON.parse(temperature.payload), {
      name: 'Temperature',
      unique_id: `voice-hub_${instanceId}_kitchen_temperature`,
      state_topic: `${prefix}/devices/kitchen/state`,
      value_template: "{{ value_json.temperature if value_json is defined else '' }}",
      unit_of_measurement: '°C',
      state_class: 'measurement',
      device_class: 'temperature',
      availability_topic: `${prefix}/status`,
      payload_available: 'online',
      payload_not_available: 'offline',
      origin: { name: 'voice-hub', sw_version: '9.8.7-test' },
      device: {
        identifiers: [`voice-hub_${instanceId}_kitchen`], name: 'Kitchen', model: 'rpi-zero', manufacturer: 'voice-hub',
        via_device: `voice-hub_${instanceId}`,
      },
    });
    const upstream = JSON.parse(sub.on(`${node}/hub_upstream/config`)[0]!.payload);
    assert.deepEqual(upstream, {
      name: 'Upstream',
      unique_id: `voice-hub_${instanceId}_hub_upstream`,
      state_topic: `${prefix}/hub/state`,
      value_template: '{{ value_json.upstream }}',
      device_class: 'enum',
      options: ['idle', 'connected', 'reconnecting', 'unreachable'],
      icon: 'mdi:cloud',
      availability_topic: `${prefix}/status`,
      payload_available: 'online',
      payload_not_available: 'offline',
      origin: { name: 'voice-hub', sw_version: '9.8.7-test' },
      device: {
        identifiers: [`voice-hub_${instanceId}`], name: upstream.device.name, model: 'voice-hub', manufacturer: 'voice-hub', sw_version: '9.8.7-test',
      },
    });
    assert.match(upstream.device.name, /^voice-hub test-/);
  });

  it('publishes under the prefix as given, a trailing slash dropped (no empty topic level)', async () => {
    const topicPrefix = `vh-${process.pid}-slash`;
    const { pub, ha, node } = await publisher({ topicPrefix: `${topicPrefix}//` });
    pub.publishDeviceState(device('d1'));
    await waitUntil(() => pub.stats().published >= 11, 'online, 4 + 5 discovery configs and the state to be acknowledged');
    const sub = await subscribe([`${topicPrefix}/#`, `${ha}/#`]);
    await sub.barrier(`${topicPrefix}/barrier`);
    assert.deepEqual(sub.messages.filter((m) => m.topic.startsWith(`${topicPrefix}/`)).map((m) => m.topic).sort(), [
      `${topicPrefix}/barrier`, `${topicPrefix}/devices/d1/state`, `${topicPrefix}/status`,
    ]);
    const battery = JSON.parse(sub.on(`${node}/d1_battery/config`)[0]!.payload);
    assert.equal(battery.state_topic, `${topicPrefix}/devices/d1/state`);
    assert.equal(battery.availability_topic, `${topicPrefix}/status`);
    assert.equal(JSON.parse(sub.on(`${node}/hub_version/config`)[0]!.payload).state_topic, `${topicPrefix}/hub/state`);
  });

  it('does not send discovery when it is turned off', async () => {
    const { pub, prefix, ha } = await publisher({ homeAssistantDiscovery: false });
    pub.publishDeviceState(device('d1'));
    await waitUntil(() => pub.stats().published >= 2, 'online and state to be acknowledged');
    const sub = await subscribe([`${ha}/#`, `${prefix}/#`]);
    await sub.barrier(`${prefix}/barrier`);
    assert.equal(sub.on(`${prefix}/devices/d1/state`).length, 1);
    assert.equal(sub.messages.filter((m) => m.topic.startsWith(`${ha}/`)).length, 0);
  });

  describe('session events from the running service', () => {
    const ISO_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
    let rigs = 0;
    /** The whole service with its own topic prefix on the test broker, pointed at its own echo server. */
    const rig = async (flags: Record<string, unknown>) => {
      const prefix = `sessions-${process.pid}-${++rigs}`;
      const echo = await startEcho();
      const svc = await startService({
        flags: {
          'Mqtt.BrokerAddress': '127.0.0.1',
          'Mqtt.Port': broker.port,
          'Mqtt.TopicPrefix': prefix,
          'VoiceService.ServerUrl': `ws://127.0.0.1:${echo.port}/voice`,
          ...flags,
        },
      });
      const sub = await subscribe([`${prefix}/sessions/#`]);
      await waitUntil(() => svc.app.mqtt.current()?.state().connected === true, 'the service to connect to the broker');
      const device = await registerDevice(svc);
      const topic = (sessionId: string) => `${prefix}/sessions/${sessionId}/event`;
      /** The events published for a session so far, parsed, each checked to be not retained. */
      const eventsOf = (sessionId: string) =>
        sub.on(topic(sessionId)).map((m) => {
          assert.equal(m.retain, false, 'session events are news, not state');
          return JSON.parse(m.payload) as Record<string, unknown>;
        });
      const waitForEvents = async (sessionId: string, count: number) => {
        await waitUntil(() => sub.on(topic(sessionId)).length >= count, `${count} event(s) of session ${sessionId}`);
        return eventsOf(sessionId);
      };
      return { prefix, echo, svc, sub, device, topic, eventsOf, waitForEvents };
    };

    /** Starts a session over HTTP; checks the `started` event names it, its device and a time in the call. */
    const startAndExpectStarted = async (r: Awaited<ReturnType<typeof rig>>) => {
      const before = Date.now();
      const { sessionId } = await startSession(r.svc, r.device.id, r.device.token);
      const after = Date.now();
      const [started] = await r.waitForEvents(sessionId, 1);
      assert.deepEqual(started, { event: 'started', sessionId, deviceId: r.device.id, timestamp: started!.timestamp });
      assert.match(String(started!.timestamp), ISO_UTC);
      const t = Date.parse(String(started!.timestamp));
      assert.ok(t >= before && t <= after, `started at ${String(started!.timestamp)}, during the start call`);
      return sessionId;
    };

    /** The `ended` event: the session, its device, the reason and the end time the service recorded. */
    const expectEnded = async (r: Awaited<ReturnType<typeof rig>>, sessionId: string, reason: string | RegExp) => {
      const events = await r.waitForEvents(sessionId, 2);
      assert.equal(events.length, 2, 'one started and one ended event per session');
      const ended = events[1]!;
      const record = r.svc.app.sessions.get(sessionId)!;
      assert.deepEqual(ended, { event: 'ended', sessionId, deviceId: r.device.id, timestamp: record.endTime, reason: ended.reason });
      assert.match(String(ended.timestamp), ISO_UTC);
      if (typeof reason === 'string') assert.equal(ended.reason, reason);
      else assert.match(String(ended.reason), reason);
    };

    it('started and ended (stopped over HTTP, idle timeout), not retained', async () => {
      const r = await rig({ 'VoiceService.SessionIdleTimeout': '00:00:01' });
      const stopped = await startAndExpectStarted(r);
      const res = await call(r.svc.url, 'POST', '/api/voice/stop', { token: r.device.token, body: { sessionId: stopped } });
      assert.equal(res.status, 200);
      await expectEnded(r, stopped, 'stopped by request');

      const idle = await startAndExpectStarted(r);
      await expectEnded(r, idle, 'idle timeout');
      assert.equal(r.svc.app.sessions.get(idle)?.state, 'Stopped');

      const late = await subscribe([`${r.prefix}/sessions/#`]);
      await late.barrier(`${r.prefix}/sessions/barrier`);
      assert.deepEqual(late.messages.filter((m) => m.topic !== `${r.prefix}/sessions/barrier`), [], 'a later subscriber gets no old events');
    });

    it('ended with the reason when the upstream voice server goes away (Failed)', async () => {
      const r = await rig({ 'VoiceService.ReconnectAttempts': 0 });
      const sessionId = await startAndExpectStarted(r);
      await r.echo.close();
      await expectEnded(r, sessionId, /^upstream connection lost/);
      assert.equal(r.svc.app.sessions.get(sessionId)?.state, 'Failed');
    });

    it('ended with the reason when the device lost its hub connection and did not rejoin in time; nothing in between', async () => {
      const r = await rig({ 'VoiceService.DeviceReconnectGracePeriod': '00:00:00.3000000' });
      const sessionId = await startAndExpectStarted(r);
      const { connection } = await joinedClient(r.svc, sessionId, r.device.token);
      await connection.stop();
      await expectEnded(r, sessionId, 'device did not rejoin within 300 ms of losing its connection');
      assert.equal(r.svc.app.sessions.get(sessionId)?.state, 'Stopped');
    });

    it('a start the upstream refuses (502) publishes nothing', async () => {
      const r = await rig({});
      await r.echo.close();
      const res = await call(r.svc.url, 'POST', '/api/voice/start', { token: r.device.token, body: { deviceId: r.device.id, userId: 'u' } });
      assert.equal(res.status, 502);
      const idle = () => r.svc.app.mqtt.current()!.stats();
      await waitUntil(() => idle().queued === 0 && idle().inFlight === 0, 'everything the service published to be acknowledged');
      await r.sub.barrier(`${r.prefix}/sessions/barrier`);
      assert.deepEqual(r.sub.messages.filter((m) => m.topic !== `${r.prefix}/sessions/barrier`), []);
    });
  });

  it('removeDevice clears its retained state and discovery, and only its own', async () => {
    const { pub, prefix, ha, node } = await publisher();
    pub.publishDeviceState(device('gone/1'));
    pub.publishDeviceState(device('stays'));
    await waitUntil(() => pub.stats().published >= 17, 'the hub and both devices to be published');
    pub.removeDevice('gone/1');
    await waitUntil(() => pub.stats().published >= 23, 'the six clearing messages to be acknowledged');
    const sub = await subscribe([`${prefix}/#`, `${ha}/#`]);
    await sub.barrier(`${prefix}/barrier`);
    const leftovers = sub.messages.filter((m) => m.topic.includes('gone'));
    assert.deepEqual(leftovers, [], 'a new subscriber gets nothing retained for the removed device');
    assert.equal(sub.on(`${prefix}/devices/stays/state`).length, 1);
    assert.equal(sub.messages.filter((m) => m.topic.startsWith(`${node}/stays_`)).length, 5);
  });

  it('removeDevice clears the discovery configs before the state their templates read', async () => {
    // Home Assistant hands an emptied state to every entity still subscribed to it; the configs first take
    // the entities away, and the template of one still there renders the empty payload as nothing.
    const { pub, prefix, node } = await publisher();
    pub.publishDeviceState(device('gone/1'));
    await waitUntil(() => pub.stats().published >= 11, 'the hub and the device to be published');
    const sub = await subscribe([`${prefix}/devices/#`, `${node}/#`]);
    await sub.barrier(`${prefix}/devices/barrier`);
    const live = () => sub.messages.filter((m) => !m.retain && !m.topic.endsWith('/barrier'));
    pub.removeDevice('gone/1');
    await waitUntil(() => live().length >= 6, 'the six clearing messages');
    const object = 'gone_1_1818356f9871db00';
    assert.deepEqual(live().map((m) => [m.topic, m.payload]), [
      ...['battery', 'temperature', 'memory', 'cpu', 'status'].map((o) => [`${node}/${object}_${o}/config`, '']),
      [`${prefix}/devices/gone%2F1/state`, ''],
    ]);
  });

  it("re-sends discovery when Home Assistant's birth message arrives", async () => {
    const { pub, ha, node } = await publisher();
    pub.publishDeviceState(device('d1'));
    await waitUntil(() => pub.stats().published >= 11, 'messages to be acknowledged');
    const sub = await subscribe([`${ha}/sensor/#`]);
    await sub.barrier(`${ha}/sensor/barrier`);
    const live = () => sub.messages.filter((m) => m.topic.endsWith('/config') && !m.retain);
    assert.equal(live().length, 0);
    await sub.publish(`${ha}/status`, 'offline');
    await sub.publish(`${ha}/status`, 'online');
    await waitUntil(() => live().length >= 9, 'discovery configs sent again');
    assert.deepEqual(live().map((m) => m.topic.slice(node.length + 1, -'/config'.length)).sort(), [
      'd1_battery', 'd1_cpu', 'd1_memory', 'd1_status', 'd1_temperature', 'hub_active_sessions', 'hub_devices_online', 'hub_upstream', 'hub_version',
    ]);
  });

  it('syncDevices publishes every known device', async () => {
    const { pub, prefix } = await publisher({ homeAssistantDiscovery: false });
    pub.syncDevices([device('a'), device('b', { status: 'offline' })]);
    await waitUntil(() => pub.stats().published >= 3, 'the states to be acknowledged');
    const sub = await subscribe([`${prefix}/devices/#`]);
    await sub.barrier(`${prefix}/devices/barrier`);
    assert.deepEqual(sub.messages.filter((m) => m.retain).map((m) => [m.topic, JSON.parse(m.payload).status]).sort(), [
      [`${prefix}/devices/a/state`, 'online'],
      [`${prefix}/devices/b/state`, 'offline'],
    ]);
  });

  it('close() leaves offline retained, and is idempotent', async () => {
    const { pub, prefix } = await publisher();
    await Promise.all([pub.close(), pub.close()]);
    await pub.close();
    assert.equal(pub.state().connected, false);
    pub.publishDeviceState(device('after-close')); // must neither throw nor queue
    assert.equal(pub.stats().queued, 0);
    const sub = await subscribe([`${prefix}/status`]);
    await sub.barrier(`${prefix}/status`);
    assert.equal(sub.messages[0]?.payload, 'offline');
    assert.equal(sub.messages[0]?.retain, true);
  });
});
