// A deletion or registration the disk refuses (503) is undone, and the MQTT broker switched to while its
// write was under way (`PUT /api/config/mqtt`) ends up agreeing with the API:
// - a refused deletion: the device was missing from the store meanwhile, so the new broker was given every
//   device but this one, neither its retained state nor its Home Assistant discovery, until its next
//   status update or a restart;
// - a refused registration: the device was in the store meanwhile, so its retained state and discovery
//   stayed on the new broker, a device Home Assistant showed that did not exist.
// Real brokers and service; the write is made slow (1 s) and to fail (ENOTDIR) in-process.
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { call, type HttpResult } from '../support/http.js';
import { startMosquitto } from '../support/mosquitto.js';
import { startService, type TestService } from '../support/service.js';
import { slowDisk } from '../support/slow-disk.js';
import { adminToken, registerDevice } from '../support/tokens.js';
import { waitUntil } from '../support/wait.js';
import { Subscriber } from './helpers.js';

/**
 * A service holding device `existing`, its MQTT broker being switched (the old one paused, so the switch
 * waits), the write `act` makes refused by the disk while the new connection opens. Returns once the
 * refusal and the switch are answered.
 */
async function refusedDuringSwitch(prefix: string, existing: string, act: (svc: TestService, admin: string) => Promise<HttpResult>) {
  const first = await startMosquitto();
  const second = await startMosquitto();
  after(() => Promise.all([first.stop(), second.stop()]));
  // From the file, not the test default flag: a flag is the operator's and the API cannot override it.
  const svc = await startService({ file: { Mqtt: { TopicPrefix: prefix, BrokerAddress: '127.0.0.1', Port: first.port } }, flags: { 'Mqtt.Port': undefined } });
  after(() => svc.stop());
  const admin = await adminToken(svc);
  await registerDevice(svc, { deviceId: existing });
  const disk = slowDisk(svc, 1000);

  first.pause();
  const switched = call(svc.url, 'PUT', '/api/config/mqtt', { token: admin, body: { port: second.port } });
  const changing = async (): Promise<boolean> =>
    String((await call(svc.url, 'GET', '/health')).json.entries.mqtt.description).startsWith('not connected: the MQTT settings are changing');
  await waitUntil(changing, 'the MQTT settings to be changing', 15_000, 50);
  disk.failNext();
  const write = act(svc, admin);
  await waitUntil(() => disk.writing === 1, 'the write to be under way');
  // The new connection opens while the write is still under way.
  first.resume();
  await waitUntil(async () => !(await changing()), 'the new connection to open', 15_000, 50);
  assert.equal(disk.writing, 1, 'the write is still under way');
  const refused = await write;
  assert.equal(refused.status, 503, refused.text);
  assert.match(refused.json.detail, /^storage is not writable: ENOTDIR: not a directory/);
  assert.equal((await switched).status, 200);
  const list = await call(svc.url, 'GET', '/api/device/list', { token: admin });
  assert.deepEqual(list.json.devices.map((d: { id: string }) => d.id), [existing]);
  return { svc, broker: second };
}

describe('a write refused by the disk while the MQTT broker is switched', () => {
  it('a deletion: the device is published on the new broker, state and discovery', async () => {
    const prefix = 'vh-refused';
    const { broker } = await refusedDuringSwitch(prefix, 'kitchen', (svc, admin) => call(svc.url, 'DELETE', '/api/device/kitchen', { token: admin }));
    const sub = await Subscriber.connect(broker.port, [`${prefix}/#`, 'homeassistant/#']);
    after(() => sub.end());
    const state = await sub.waitFor((m) => m.topic === `${prefix}/devices/kitchen/state`, 'the device state on the new broker');
    assert.equal(state.retain, true);
    assert.equal(JSON.parse(state.payload).status, 'online');
    await sub.waitFor((m) => /^homeassistant\/sensor\/voice-hub_[0-9a-f]+\/kitchen_status\/config$/.test(m.topic), 'the device discovery on the new broker');
    const hub = await sub.waitFor((m) => m.topic === `${prefix}/hub/state`, 'the hub state on the new broker');
    assert.equal(JSON.parse(hub.payload).devicesOnline, 1);
  });

  it('a registration: nothing of the device is left on the new broker', async () => {
    const prefix = 'vh-unregistered';
    const { svc, broker } = await refusedDuringSwitch(prefix, 'hall', (s) =>
      call(s.url, 'POST', '/api/device/register', { body: { deviceId: 'kitchen', deviceName: 'Kitchen', deviceType: 'speaker' } }));
    await waitUntil(async () => (await call(svc.url, 'GET', '/health')).json.entries.mqtt.data?.queued === 0, 'the new broker to have everything', 15_000, 50);
    const sub = await Subscriber.connect(broker.port, [`${prefix}/#`, 'homeassistant/#']);
    after(() => sub.end());
    await sub.barrier(`${prefix}/barrier`);
    const retained = sub.messages.filter((m) => m.retain).map((m) => m.topic);
    assert.ok(retained.includes(`${prefix}/devices/hall/state`), retained.join('\n'));
    assert.deepEqual(retained.filter((t) => t.includes('kitchen')), []);
  });
});
