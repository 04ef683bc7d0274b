// GET/PUT /api/config/{category}: merge, ranges, persistence, effect, and precedence over the file.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { call } from '../support/http.js';
import { startService } from '../support/service.js';
import { adminToken, registerDevice } from '../support/tokens.js';
import { tmpDir } from '../support/tmp.js';

describe('configuration categories', () => {
  it('reads voice settings with a device token and merges writes by an admin', async () => {
    const svc = await startService();
    const admin = await adminToken(svc);
    const dev = await registerDevice(svc);
    const get = await call(svc.url, 'GET', '/api/config/voice', { token: dev.token });
    assert.equal(get.status, 200);
    assert.deepEqual(get.json, { enableVoice: true, audioSampleRate: 16000, audioChannels: 1, enableNoiseReduction: false, wakeWords: [] });
    const put = await call(svc.url, 'PUT', '/api/config/voice', { token: admin, body: { enableNoiseReduction: true, wakeWords: ['hey hub'] } });
    assert.equal(put.status, 200);
    assert.deepEqual(put.json, { enableVoice: true, audioSampleRate: 16000, audioChannels: 1, enableNoiseReduction: true, wakeWords: ['hey hub'] });
    const put2 = await call(svc.url, 'PUT', '/api/config/voice', { token: admin, body: { audioSampleRate: 48000 } });
    assert.deepEqual(put2.json, { enableVoice: true, audioSampleRate: 48000, audioChannels: 1, enableNoiseReduction: true, wakeWords: ['hey hub'] });
    const mqtt = await call(svc.url, 'GET', '/api/config/mqtt', { token: dev.token });
    assert.deepEqual(Object.keys(mqtt.json).sort(), ['brokerAddress', 'port', 'username']);
  });

  it('reads time spans back in the form they were configured in, from the default, the file, the environment and a PUT', async () => {
    const fromDefault = await startService();
    const read = async (svc: Awaited<ReturnType<typeof startService>>): Promise<unknown> =>
      (await call(svc.url, 'GET', '/api/config/device', { token: await adminToken(svc) })).json.tokenExpiration;
    assert.equal(await read(fromDefault), '24:00:00');
    assert.equal(await read(await startService({ file: { DeviceManagement: { TokenExpiration: '48:00:00' } } })), '48:00:00');
    assert.equal(await read(await startService({ env: { DeviceManagement__TokenExpiration: '2.00:00:00' } })), '2.00:00:00');
    assert.equal(await read(await startService({ env: { DeviceManagement__TokenExpiration: ' 12:30:00.5 ' } })), '12:30:00.5', 'trimmed as it is parsed');
    const put = await call(fromDefault.url, 'PUT', '/api/config/device', { token: await adminToken(fromDefault), body: { tokenExpiration: '36:00:00' } });
    assert.equal(put.json.tokenExpiration, '36:00:00');
    assert.equal(await read(fromDefault), '36:00:00');
    // Trimmed as it is parsed, as the environment's is above.
    const spaced = await call(fromDefault.url, 'PUT', '/api/config/device', { token: await adminToken(fromDefault), body: { tokenExpiration: ' \t12:00:00 ' } });
    assert.equal(spaced.json.tokenExpiration, '12:00:00');
    assert.equal(await read(fromDefault), '12:00:00');
  });

  it('refuses bad writes with exact problems', async () => {
    const svc = await startService();
    const admin = await adminToken(svc);
    const dev = await registerDevice(svc);
    const cases: Array<[string, unknown, Record<string, string[]>]> = [
      // null is in every key's range: it removes the stored value.
      ['voice', { audioSampleRate: 44100 }, { audioSampleRate: ['must be one of 8000, 12000, 16000, 24000, 48000, null'] }],
      ['voice', { enableNoiseReduction: 'on', wakeWords: 'hey' }, { enableNoiseReduction: ['must be boolean or null'], wakeWords: ['must be array or null'] }],
      ['voice', { wakeWords: [null] }, { 'wakeWords[0]': ['must be string'] }],
      ['voice', { audioChannels: 3, enableVoice: 'yes' }, { audioChannels: ['must be one of 1, 2, null'], enableVoice: ['must be boolean or null'] }],
      ['voice', { wakeWords: ['x'.repeat(65)] }, { 'wakeWords[0]': ['must NOT have more than 64 characters'] }],
      ['voice', { wakeWords: Array.from({ length: 33 }, (_, i) => `w${i}`) }, { wakeWords: ['must NOT have more than 32 items'] }],
      ['voice', { wakeWords: [''] }, { 'wakeWords[0]': ['must NOT have fewer than 1 characters'] }],
      // A wake word a device could never hear as written: twice, white space at an end or alone, a line break inside.
      ['voice', { wakeWords: ['hey hub', 'computer', 'hey hub'] }, { wakeWords: ['must NOT have duplicate items: item 2 repeats item 0'] }],
      ...[' hey hub', 'hey hub\u00a0', '   ', 'hey\nhub', 'hey\u2028hub', 'hey\u0085hub'].map((word): [string, unknown, Record<string, string[]>] => [
        'voice',
        { wakeWords: ['computer', word] },
        { 'wakeWords[1]': ['must be a word or phrase: no white space at its start or end, no control characters (U+0000 to U+001F, U+007F to U+009F) or line breaks'] },
      ]),
      ['voice', { volume: 3 }, { volume: ["Unknown setting 'volume'."] }],
      ['device', { maxDevices: -1 }, { maxDevices: ['must be >= 0'] }],
      // A time span is checked as DeviceManagement.TokenExpiration is in the configuration file, with its range.
      ['device', { tokenExpiration: '1 day' }, { tokenExpiration: ['must be a time span from 00:00:01 to 3650.00:00:00'] }],
      // Every problem of a body in one answer, the time span's range among them.
      ['device', { tokenExpiration: '00:00:00', maxDevices: 100_001 }, { tokenExpiration: ['must be a time span from 00:00:01 to 3650.00:00:00'], maxDevices: ['must be <= 100000'] }],
      ['mqtt', { brokerAddress: '', port: 0 }, { brokerAddress: ['must NOT have fewer than 1 characters'], port: ['must be >= 1'] }],
      ['mqtt', { password: 'secret' }, { password: ["Unknown setting 'password'."] }],
      // A pattern refused in the words of the configuration's problem lines, not as its regular expression.
      [
        'mqtt',
        { brokerAddress: 'mqtt://hub:secret@broker.lan:1883', username: 'hub\u0007' },
        {
          brokerAddress: ['must be a host name, an IPv4 address or an IPv6 address without brackets (no scheme, user name, password, port or path: the port is Mqtt.Port, the login Mqtt.Username and Mqtt.Password)'],
          username: ['must be a string without control characters (U+0000 to U+001F, U+007F to U+009F) or Unicode non-characters, which MQTT does not allow'],
        },
      ],
    ];
    for (const [category, body, errors] of cases) {
      const res = await call(svc.url, 'PUT', `/api/config/${category}`, { token: admin, body });
      assert.equal(res.status, 400, JSON.stringify(body));
      assert.equal(res.headers.get('content-type'), 'application/problem+json');
      assert.equal(res.json.title, 'One or more validation errors occurred.');
      assert.deepEqual(res.json.errors, errors);
    }
    const unknown = await call(svc.url, 'GET', '/api/config/lights', { token: admin });
    assert.equal(unknown.status, 404);
    assert.equal(unknown.json.detail, "configuration category 'lights' does not exist");
    assert.equal((await call(svc.url, 'PUT', '/api/config/lights', { token: admin, body: {} })).status, 404);
    const notAdmin = await call(svc.url, 'PUT', '/api/config/voice', { token: dev.token, body: { enableVoice: false } });
    assert.equal(notAdmin.status, 403);
    assert.equal((await call(svc.url, 'GET', '/api/config/voice')).status, 401);
  });

  it('takes effect at once: maxDevices and allowDeviceRegistration', async () => {
    const svc = await startService();
    const admin = await adminToken(svc);
    await registerDevice(svc);
    const body = { deviceId: 'late', deviceName: 'x', deviceType: 'y' };
    assert.equal((await call(svc.url, 'PUT', '/api/config/device', { token: admin, body: { maxDevices: 1 } })).status, 200);
    assert.equal((await call(svc.url, 'POST', '/api/device/register', { body })).status, 409);
    await call(svc.url, 'PUT', '/api/config/device', { token: admin, body: { maxDevices: 10, allowDeviceRegistration: false } });
    assert.equal((await call(svc.url, 'POST', '/api/device/register', { body })).status, 403);
    await call(svc.url, 'PUT', '/api/config/device', { token: admin, body: { allowDeviceRegistration: true, tokenExpiration: '01:00:00' } });
    const ok = await call(svc.url, 'POST', '/api/device/register', { body });
    assert.equal(ok.status, 200);
    const ttl = Date.parse(ok.json.expiresAt) - Date.parse(ok.json.deviceInfo.lastSeen);
    assert.ok(Math.abs(ttl - 3600_000) < 2000, `ttl ${ttl}`);
  });

  it('keeps stored values across restarts; env and flags still win over them', async () => {
    const dataDir = tmpDir();
    const first = await startService({ dataDir });
    const admin = await adminToken(first);
    await call(first.url, 'PUT', '/api/config/voice', { token: admin, body: { audioSampleRate: 24000, wakeWords: ['computer'] } });
    await call(first.url, 'PUT', '/api/config/device', { token: admin, body: { maxDevices: 7 } });
    await first.stop();

    const second = await startService({ dataDir, file: { VoiceService: { AudioSampleRate: 8000 } } });
    const voice = await call(second.url, 'GET', '/api/config/voice', { token: admin });
    assert.equal(voice.json.audioSampleRate, 24000, 'API value beats the file');
    assert.deepEqual(voice.json.wakeWords, ['computer']);
    await second.stop();

    const third = await startService({ dataDir, env: { VoiceService__AudioSampleRate: '12000' }, flags: { 'DeviceManagement.MaxDevices': 2 } });
    const v3 = await call(third.url, 'GET', '/api/config/voice', { token: admin });
    assert.equal(v3.json.audioSampleRate, 12000, 'env beats the API value');
    const d3 = await call(third.url, 'GET', '/api/config/device', { token: admin });
    assert.equal(d3.json.maxDevices, 2, 'flag beats the API value');
  });

  it('a null drops the stored value: the file, or the default, shows through again, also after a restart', async () => {
    const dataDir = tmpDir();
    const file = { VoiceService: { AudioSampleRate: 8000 }, DeviceManagement: { TokenExpiration: '48:00:00' } };
    const first = await startService({ dataDir, file });
    const admin = await adminToken(first);
    await call(first.url, 'PUT', '/api/config/voice', { token: admin, body: { audioSampleRate: 24000, wakeWords: ['computer'], enableNoiseReduction: true } });
    await call(first.url, 'PUT', '/api/config/device', { token: admin, body: { tokenExpiration: '01:00:00', maxDevices: 7 } });
    const voice = await call(first.url, 'PUT', '/api/config/voice', { token: admin, body: { audioSampleRate: null, wakeWords: null } });
    assert.equal(voice.status, 200);
    assert.deepEqual(voice.json, { enableVoice: true, audioSampleRate: 8000, audioChannels: 1, enableNoiseReduction: true, wakeWords: [] },
      'the file\'s rate and the default word list; the key not named keeps its stored value');
    const device = await call(first.url, 'PUT', '/api/config/device', { token: admin, body: { tokenExpiration: null } });
    assert.deepEqual(device.json, { allowDeviceRegistration: true, maxDevices: 7, tokenExpiration: '48:00:00' });
    // A null for a key nothing was stored under changes nothing.
    const mqttBefore = (await call(first.url, 'GET', '/api/config/mqtt', { token: admin })).json;
    assert.deepEqual((await call(first.url, 'PUT', '/api/config/mqtt', { token: admin, body: { port: null } })).json, mqttBefore);
    await first.stop();

    const second = await startService({ dataDir, file: { ...file, VoiceService: { AudioSampleRate: 12000 } } });
    const after = await call(second.url, 'GET', '/api/config/voice', { token: admin });
    assert.deepEqual(after.json, { enableVoice: true, audioSampleRate: 12000, audioChannels: 1, enableNoiseReduction: true, wakeWords: [] },
      'an edit of the file takes effect once the stored value is gone');
    assert.equal((await call(second.url, 'GET', '/api/config/device', { token: admin })).json.maxDevices, 7);
  });
});
