// A registration the disk refuses (503) is undone: the device never was, and the API does not list it.
// While its write was under way the device was in the store, and an MQTT broker switched to then
// (`PUT /api/config/mqtt`) was given every device there was: this one's retained state and Home Assistant
// discovery stayed on the new broker, a device Home Assistant showed that did not exist. Real brokers and
// service; the registration's write is made slow (1 s) and to fail (ENOTDIR) in-process.
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { call } from '../support/http.js';
import { startMosquitto } from '../support/mosquitto.js';
import { startService } from '../support/service.js';
import { slowDisk } from '../support/slow-disk.js';
import { adminToken, registerDevice } from '../support/tokens.js';
import { waitUntil } from '../support/wait.js';
import { Subscriber } from './helpers.js';

const PREFIX = 'vh-unregistered';

describe('a registration refused by the disk while the MQTT broker is switched', () => {
  it('leaves nothing of the device on the new broker', async () => {
    const first = await startMosquitto();
    const second = await startMosquitto();
    after(() => Promise.all([first.stop(), second.stop()]));
    // From the file, not the test default flag: a flag is the operator's and the API cannot override it.
    const svc = await startService({ file: { Mqtt: { TopicPrefix: PREFIX, BrokerAddress: '127.0.0.1', Port: first.port } }, flags: { 'Mqtt.Port': undefined } });
    after(() => svc.stop());
    const admin = await adminToken(svc);
    await registerDevice(svc, { deviceId: 'hall' });
    const disk = slowDisk(svc, 1000);

    // The old broker does not acknowledge `offline` while paused: the switch waits for it.
    first.pause();
    const switched = call(svc.url, 'PUT', '/api/config/mqtt', { token: admin, body: { port: second.port } });
    const changing = async (): Promise<boolean> =>
      String((await call(svc.url, 'GET', '/health')).json.entries.mqtt.description).startsWith('not connected: the MQTT settings are changing');
    await waitUntil(changing, 'the MQTT settings to be changing', 15_000, 50);
    disk.failNext();
    const registration = call(svc.url, 'POST', '/api/device/register', { body: { deviceId: 'kitchen', deviceName: 'Kitchen', deviceType: 'speaker' } });
    await waitUntil(() => disk.writing === 1, 'the registration to be written');
    // The new connection opens while the registration is still being written.
    first.resume();
    await waitUntil(async () => !(await changing()), 'the new connection to open', 15_000, 50);
    assert.equal(disk.writing, 1, 'the registration is still being written');
    const refused = await registration;
    assert.equal(refused.status, 503, refused.text);
    assert.match(refused.json.detail, /^storage is not writable: ENOTDIR: not a directory/);
    assert.equal((await switched).status, 200);
    const list = await call(svc.url, 'GET', '/api/device/list', { token: admin });
    assert.deepEqual(list.json.devices.map((d: { id: string }) => d.id), ['hall']);

    await waitUntil(async () => (await call(svc.url, 'GET', '/health')).json.entries.mqtt.data?.queued === 0, 'the new broker to have everything', 15_000, 50);
    const sub = await Subscriber.connect(second.port, [`${PREFIX}/#`, 'homeassistant/#']);
    after(() => sub.end());
    await sub.barrier(`${PREFIX}/barrier`);
    const retained = sub.messages.filter((m) => m.retain).map((m) => m.topic);
    assert.ok(retained.includes(`${PREFIX}/devices/hall/state`), retained.join('\n'));
    assert.deepEqual(retained.filter((t) => t.includes('kitchen')), []);
  });
});
