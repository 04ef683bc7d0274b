// A deletion the disk refuses (503) is undone: the device is back, in the API's list and in the hub's
// state. While its write was under way the device was missing from the store, and an MQTT broker switched
// to then (`PUT /api/config/mqtt`) was given every device there was: this one never reached it, neither
// its retained state nor its Home Assistant discovery, until its next status update or a restart. Real
// brokers and service; the deletion's write is made slow (1 s) and to fail (ENOTDIR) in-process.
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { call } from '../support/http.js';
import { startMosquitto } from '../support/mosquitto.js';
import { startService } from '../support/service.js';
import { slowDisk } from '../support/slow-disk.js';
import { adminToken, registerDevice } from '../support/tokens.js';
import { waitUntil } from '../support/wait.js';
import { Subscriber } from './helpers.js';

const PREFIX = 'vh-refused';

describe('a deletion refused by the disk while the MQTT broker is switched', () => {
  it('the device is published on the new broker: state and discovery', async () => {
    const first = await startMosquitto();
    const second = await startMosquitto();
    after(() => Promise.all([first.stop(), second.stop()]));
    // From the file, not the test default flag: a flag is the operator's and the API cannot override it.
    const svc = await startService({ file: { Mqtt: { TopicPrefix: PREFIX, BrokerAddress: '127.0.0.1', Port: first.port } }, flags: { 'Mqtt.Port': undefined } });
    after(() => svc.stop());
    const admin = await adminToken(svc);
    await registerDevice(svc, { deviceId: 'kitchen' });
    const disk = slowDisk(svc, 1000);

    // The old broker does not acknowledge `offline` while paused: the switch waits for it.
    first.pause();
    const switched = call(svc.url, 'PUT', '/api/config/mqtt', { token: admin, body: { port: second.port } });
    const changing = async (): Promise<boolean> =>
      String((await call(svc.url, 'GET', '/health')).json.entries.mqtt.description).startsWith('not connected: the MQTT settings are changing');
    await waitUntil(changing, 'the MQTT settings to be changing', 15_000, 50);
    disk.failNext();
    const deletion = call(svc.url, 'DELETE', '/api/device/kitchen', { token: admin });
    await waitUntil(() => disk.writing === 1, 'the deletion to be written');
    // The new connection opens while the deletion is still being written.
    first.resume();
    await waitUntil(async () => !(await changing()), 'the new connection to open', 15_000, 50);
    assert.equal(disk.writing, 1, 'the deletion is still being written');
    const refused = await deletion;
    assert.equal(refused.status, 503, refused.text);
    assert.match(refused.json.detail, /^storage is not writable: ENOTDIR: not a directory/);
    assert.equal((await switched).status, 200);
    const list = await call(svc.url, 'GET', '/api/device/list', { token: admin });
    assert.deepEqual(list.json.devices.map((d: { id: string }) => d.id), ['kitchen']);

    const sub = await Subscriber.connect(second.port, [`${PREFIX}/#`, 'homeassistant/#']);
    after(() => sub.end());
    const state = await sub.waitFor((m) => m.topic === `${PREFIX}/devices/kitchen/state`, 'the device state on the new broker');
    assert.equal(state.retain, true);
    assert.equal(JSON.parse(state.payload).status, 'online');
    await sub.waitFor((m) => /^homeassistant\/sensor\/voice-hub_[0-9a-f]+\/kitchen_status\/config$/.test(m.topic), 'the device discovery on the new broker');
    const hub = await sub.waitFor((m) => m.topic === `${PREFIX}/hub/state`, 'the hub state on the new broker');
    assert.equal(JSON.parse(hub.payload).devicesOnline, 1);
  });
});
