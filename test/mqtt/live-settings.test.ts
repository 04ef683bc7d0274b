// PUT /api/config/mqtt applies at once: the service leaves the old broker (retained `offline`), joins
// the new one and publishes every device there; a PUT that changes nothing keeps the connection; a
// service started with MQTT off is switched on by setting a broker. Real mosquitto brokers and the
// real service throughout.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { call } from '../support/http.js';
import { startMosquitto, type Mosquitto } from '../support/mosquitto.js';
import { startService, type TestService } from '../support/service.js';
import { adminToken, registerDevice } from '../support/tokens.js';
import { startEcho, startSession } from '../support/voice.js';
import { freePort } from '../support/ports.js';
import { Subscriber } from './helpers.js';

// Each test's service has its own topic prefix: the brokers are shared and earlier services keep running.
let PREFIX = '';
let services_started = 0;
const statusIs = (payload: string) => {
  const topic = `${PREFIX}/status`;
  return (m: { topic: string; payload: string }) => m.topic === topic && m.payload === payload;
};

describe('MQTT settings changed over the API', () => {
  let first: Mosquitto;
  let second: Mosquitto;
  const services: TestService[] = [];
  const subscribers: Subscriber[] = [];

  before(async () => {
    first = await startMosquitto();
    second = await startMosquitto();
  });
  after(async () => {
    for (const s of subscribers) await s.end();
    for (const s of services) await s.stop();
    await first?.stop();
    await second?.stop();
  });

  const start = async (mqtt: Record<string, unknown>, flags: Record<string, unknown> = {}): Promise<{ svc: TestService; admin: string }> => {
    PREFIX = `live-settings-${++services_started}`;
    // From the file, not the test default flag: a flag is the operator's and the API cannot override it.
    const svc = await startService({ file: { Mqtt: { TopicPrefix: PREFIX, ...mqtt } }, flags: { 'Mqtt.Port': undefined, ...flags } });
    services.push(svc);
    return { svc, admin: await adminToken(svc) };
  };
  const subscribe = async (broker: Mosquitto): Promise<Subscriber> => {
    const sub = await Subscriber.connect(broker.port, [`${PREFIX}/#`]);
    subscribers.push(sub);
    return sub;
  };
  /** Polls /health until its mqtt entry has this description (10 s at most); returns the entry. */
  const mqttHealthBecomes = async (svc: TestService, description: string): Promise<{ status: string; description: string }> => {
    let entry = { status: '', description: '' };
    for (const deadline = Date.now() + 10_000; Date.now() < deadline; await new Promise((r) => setTimeout(r, 100))) {
      entry = (await call(svc.url, 'GET', '/health')).json.entries.mqtt;
      if (entry.description === description) break;
    }
    return { status: entry.status, description: entry.description };
  };
  const putMqtt = async (svc: TestService, admin: string, body: Record<string, unknown>): Promise<void> => {
    const res = await call(svc.url, 'PUT', '/api/config/mqtt', { token: admin, body });
    assert.equal(res.status, 200, res.text);
  };

  it('a new port: offline on the old broker, online and every device retained on the new one, health names it', async () => {
    const { svc, admin } = await start({ BrokerAddress: '127.0.0.1', Port: first.port });
    const device = await registerDevice(svc);
    const onFirst = await subscribe(first);
    await onFirst.waitFor(statusIs('online'), 'online on the first broker');
    await onFirst.waitFor((m) => m.topic === `${PREFIX}/devices/${device.id}/state`, 'the device on the first broker');

    await putMqtt(svc, admin, { port: second.port });
    await onFirst.waitFor(statusIs('offline'), 'offline on the first broker');
    assert.deepEqual(await mqttHealthBecomes(svc, `connected to 127.0.0.1:${second.port}`), {
      status: 'Healthy',
      description: `connected to 127.0.0.1:${second.port}`,
    });

    const onSecond = await subscribe(second);
    await onSecond.barrier(`${PREFIX}/barrier`);
    const retained = new Map(onSecond.messages.filter((m) => m.retain).map((m) => [m.topic, m.payload]));
    assert.equal(retained.get(`${PREFIX}/status`), 'online');
    assert.equal(JSON.parse(retained.get(`${PREFIX}/devices/${device.id}/state`) ?? '{}').status, 'online', 'the device registered before the change');

    // Later changes go to the new broker only.
    const res = await call(svc.url, 'PUT', `/api/device/${device.id}/status`, { token: device.token, body: { status: 'busy', batteryLevel: 42 } });
    assert.equal(res.status, 200, res.text);
    const busy = (m: { topic: string; payload: string }): boolean => m.topic === `${PREFIX}/devices/${device.id}/state` && JSON.parse(m.payload).status === 'busy';
    assert.equal(JSON.parse((await onSecond.waitFor(busy, 'the update on the second broker')).payload).batteryLevel, 42);
    assert.equal(onFirst.messages.some(busy), false, 'nothing more on the first broker');

    // The same settings again change nothing: no offline/online cycle on the broker.
    await onSecond.barrier(`${PREFIX}/barrier`);
    const statusMessages = onSecond.on(`${PREFIX}/status`).length;
    await putMqtt(svc, admin, { port: second.port, brokerAddress: '127.0.0.1' });
    await new Promise((r) => setTimeout(r, 300));
    await onSecond.barrier(`${PREFIX}/barrier`);
    assert.equal(onSecond.on(`${PREFIX}/status`).length, statusMessages);
  });

  it('what the unreachable old broker never got goes to the new one: session events and the clearing of a deleted device', async () => {
    const echo = await startEcho();
    try {
      const { svc, admin } = await start({ BrokerAddress: '127.0.0.1', Port: await freePort() }, { 'VoiceService.ServerUrl': `ws://127.0.0.1:${echo.port}/voice` });
      // What an earlier run left on the broker the service is moved to.
      const planter = await subscribe(second);
      await planter.publish(`${PREFIX}/devices/gone/state`, '{"status":"online"}', true);
      await planter.publish(`${PREFIX}/devices/back/state`, '{"status":"online"}', true);

      await registerDevice(svc, { deviceId: 'gone' });
      const speaker = await registerDevice(svc);
      const { sessionId } = await startSession(svc, speaker.id, speaker.token);
      assert.equal((await call(svc.url, 'POST', '/api/voice/stop', { token: speaker.token, body: { sessionId } })).status, 200);
      for (const id of ['gone', 'back']) {
        if (id === 'back') await registerDevice(svc, { deviceId: 'back' });
        assert.equal((await call(svc.url, 'DELETE', `/api/device/${id}`, { token: admin })).status, 200);
      }
      // Deleted and registered again: its clearing, still queued for the old broker, must not follow it.
      await registerDevice(svc, { deviceId: 'back', deviceName: 'Back again' });

      const onSecond = await subscribe(second);
      await putMqtt(svc, admin, { port: second.port });
      const events = `${PREFIX}/sessions/${sessionId}/event`;
      await onSecond.waitFor((m) => m.topic === events && m.payload.includes('"ended"'), 'the session\'s ended event on the new broker');
      assert.deepEqual(onSecond.on(events).map((m) => (JSON.parse(m.payload) as { event: string }).event), ['started', 'ended']);
      await onSecond.waitFor((m) => m.topic === `${PREFIX}/devices/gone/state` && m.payload === '', 'the deleted device\'s state cleared on the new broker');
      const after = await subscribe(second);
      await after.barrier(`${PREFIX}/barrier`);
      const retained = new Map(after.messages.filter((m) => m.retain).map((m) => [m.topic, m.payload]));
      assert.equal(retained.has(`${PREFIX}/devices/gone/state`), false);
      assert.equal(JSON.parse(retained.get(`${PREFIX}/devices/back/state`) ?? '{}').status, 'online', 'the device registered again keeps its state');
    } finally {
      await echo.close();
    }
  });

  it('while a stuck old broker\'s connection closes: health says so, and session events and deletions wait for the new one', async () => {
    const echo = await startEcho();
    const stuck = await startMosquitto();
    try {
      const { svc, admin } = await start({ BrokerAddress: '127.0.0.1', Port: stuck.port }, { 'VoiceService.ServerUrl': `ws://127.0.0.1:${echo.port}/voice` });
      const gone = await registerDevice(svc);
      const speaker = await registerDevice(svc);
      const { sessionId } = await startSession(svc, speaker.id, speaker.token);
      const planter = await subscribe(second);
      await planter.publish(`${PREFIX}/devices/${gone.id}/state`, '{"status":"online"}', true);
      await mqttHealthBecomes(svc, `connected to 127.0.0.1:${stuck.port}`);
      // Open sockets, no answers: closing waits for the acknowledgement of `offline`, then for DISCONNECT.
      stuck.pause();
      const onSecond = await subscribe(second);
      const changed = call(svc.url, 'PUT', '/api/config/mqtt', { token: admin, body: { port: second.port } });
      const health = await mqttHealthBecomes(svc, `not connected: the MQTT settings are changing to 127.0.0.1:${second.port} (closing the previous connection)`);
      assert.deepEqual(health, { status: 'Degraded', description: `not connected: the MQTT settings are changing to 127.0.0.1:${second.port} (closing the previous connection)` });
      assert.equal((await call(svc.url, 'POST', '/api/voice/stop', { token: speaker.token, body: { sessionId } })).status, 200);
      assert.equal((await call(svc.url, 'DELETE', `/api/device/${gone.id}`, { token: admin })).status, 200);
      assert.equal((await changed).status, 200);

      const events = `${PREFIX}/sessions/${sessionId}/event`;
      const ended = await onSecond.waitFor((m) => m.topic === events && m.payload.includes('"ended"'), 'the ended event on the new broker');
      assert.equal(JSON.parse(ended.payload).reason, 'stopped by request');
      await onSecond.waitFor((m) => m.topic === `${PREFIX}/devices/${gone.id}/state` && m.payload === '', 'the deleted device\'s state cleared on the new broker');
    } finally {
      stuck.resume();
      await stuck.stop();
      await echo.close();
    }
  });

  it('changes in quick succession end on the last one, with no connection left on the others', async () => {
    const { svc, admin } = await start({ BrokerAddress: '127.0.0.1', Port: first.port });
    await mqttHealthBecomes(svc, `connected to 127.0.0.1:${first.port}`);
    // The second change arrives while the first is still closing the old connection (a PUT does not wait
    // for the broker): it is queued, and the service ends on it.
    await putMqtt(svc, admin, { port: second.port });
    await putMqtt(svc, admin, { port: first.port });
    assert.deepEqual(await mqttHealthBecomes(svc, `connected to 127.0.0.1:${first.port}`), {
      status: 'Healthy',
      description: `connected to 127.0.0.1:${first.port}`,
    });
    const retainedStatus = async (broker: Mosquitto): Promise<string | undefined> => {
      const sub = await subscribe(broker);
      await sub.barrier(`${PREFIX}/barrier`);
      return sub.messages.filter((m) => m.retain && m.topic === `${PREFIX}/status`).at(-1)?.payload;
    };
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(await retainedStatus(first), 'online');
    // Never connected (undefined), or connected and closed again (offline): not left online.
    assert.notEqual(await retainedStatus(second), 'online', 'no connection left on the second broker');
  });

  it('started with MQTT off, a broker set over the API switches it on', async () => {
    const { svc, admin } = await start({ BrokerAddress: '' });
    const off = (await call(svc.url, 'GET', '/health')).json.entries.mqtt;
    assert.equal(off.description, 'MQTT disabled (Mqtt.BrokerAddress is empty)');
    assert.deepEqual(off.tags, ['mqtt'], 'the same tags as when it is on');
    const device = await registerDevice(svc);
    // A port or user name alone leaves it off, and says nothing changed: "switched off" was logged for it.
    await putMqtt(svc, admin, { port: second.port, username: 'hub' });
    await new Promise((r) => setTimeout(r, 100));
    assert.deepEqual(svc.logs.filter((l) => / Mqtt: /.test(l)), []);
    assert.equal((await call(svc.url, 'GET', '/health')).json.entries.mqtt.description, 'MQTT disabled (Mqtt.BrokerAddress is empty)');
    await putMqtt(svc, admin, { brokerAddress: '127.0.0.1', username: null });
    assert.deepEqual(await mqttHealthBecomes(svc, `connected to 127.0.0.1:${second.port}`), {
      status: 'Healthy',
      description: `connected to 127.0.0.1:${second.port}`,
    });
    const onSecond = await subscribe(second);
    await onSecond.waitFor((m) => m.retain && m.topic === `${PREFIX}/devices/${device.id}/state`, 'the device, registered while MQTT was off');
  });
});
