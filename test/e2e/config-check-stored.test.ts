// `voice-hub config check` with values stored through the API: each key shows the value the service
// uses, a stored one in its place (not the file's or the default it overrides), and a stored value an
// environment variable or a flag hides is named, since its PUT was answered 200.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { before, describe, it } from 'node:test';
import { call } from '../support/http.js';
import { BUNDLE, runBundle, startService } from '../support/service.js';
import { silentLogger } from '../../src/log/logger.js';
import { openStore } from '../../src/store/index.js';
import { adminToken } from '../support/tokens.js';
import { tmpDir } from '../support/tmp.js';

before(() => assert.ok(existsSync(BUNDLE), `${BUNDLE} is missing: run node build.mjs first`));

describe('config check with stored values', () => {
  it('shows each stored value in place of the key it overrides, and names those the environment or a flag hides', async () => {
    const dataDir = tmpDir();
    const file = { VoiceService: { AudioSampleRate: 24000 }, Mqtt: { Password: 'pw-SECRET-1' } };
    const svc = await startService({ dataDir, file });
    const admin = await adminToken(svc);
    const put = async (category: string, body: unknown): Promise<void> => {
      const res = await call(svc.url, 'PUT', `/api/config/${category}`, { token: admin, body });
      assert.equal(res.status, 200, res.text);
    };
    await put('voice', { audioSampleRate: 48000, audioChannels: 2, wakeWords: ['hey hub'] });
    await put('device', { tokenExpiration: '2.00:00:00', maxDevices: 3 });
    await svc.stop();
    const args = ['config', 'check', '--config', svc.loaded.file!, '--data-dir', dataDir];

    const plain = await runBundle(args);
    assert.equal(plain.code, 0, plain.stderr);
    const line = (out: string, key: string): string | undefined => out.split('\n').find((l) => l.startsWith(`${key} = `));
    assert.equal(line(plain.stdout, 'VoiceService.AudioSampleRate'), 'VoiceService.AudioSampleRate = 48000  (api, over the file value 24000)');
    assert.equal(line(plain.stdout, 'VoiceService.AudioChannels'), 'VoiceService.AudioChannels = 2  (api, over the default value 1)');
    assert.equal(line(plain.stdout, 'DeviceManagement.TokenExpiration'), 'DeviceManagement.TokenExpiration = "2.00:00:00"  (api, over the default value "24:00:00")');
    assert.equal(line(plain.stdout, 'DeviceManagement.MaxDevices'), 'DeviceManagement.MaxDevices = 3  (api, over the default value 10)');
    assert.equal(line(plain.stdout, 'VoiceService.EnableVoice'), 'VoiceService.EnableVoice = true  (default)');
    const stored = plain.stdout.slice(plain.stdout.indexOf('# stored through the API'));
    assert.deepEqual(stored.trim().split('\n'), [
      '# stored through the API (override the file and defaults, not env or flags)',
      'voice.audioSampleRate = 48000  (api)',
      'voice.audioChannels = 2  (api)',
      'voice.wakeWords = ["hey hub"]  (api)',
      'device.maxDevices = 3  (api)',
      'device.tokenExpiration = "2.00:00:00"  (api)',
    ]);

    const operator = await runBundle([...args, '--DeviceManagement.MaxDevices', '5'], { VoiceService__AudioSampleRate: '16000' });
    assert.equal(operator.code, 0, operator.stderr);
    assert.equal(line(operator.stdout, 'VoiceService.AudioSampleRate'), 'VoiceService.AudioSampleRate = 16000  (env)');
    assert.equal(line(operator.stdout, 'DeviceManagement.MaxDevices'), 'DeviceManagement.MaxDevices = 5  (flag)');
    assert.equal(line(operator.stdout, 'VoiceService.AudioChannels'), 'VoiceService.AudioChannels = 2  (api, over the default value 1)');
    const hidden = operator.stdout.split('\n').filter((l) => l.includes('stored, not used'));
    assert.deepEqual(hidden, [
      'voice.audioSampleRate = 48000  (stored, not used: VoiceService.AudioSampleRate is set by the environment, which wins)',
      'device.maxDevices = 3  (stored, not used: DeviceManagement.MaxDevices is set by a flag, which wins)',
    ]);
    for (const out of [plain, operator]) {
      assert.ok(!out.stdout.includes('pw-SECRET-1') && !out.stderr.includes('pw-SECRET-1'));
      assert.equal(line(out.stdout, 'Mqtt.Password'), 'Mqtt.Password = "***"  (file)');
    }
  });

  it('a stored broker address with a login in it (stored before addresses had to be host names) is named, never shown, in config check and the log', async () => {
    const dataDir = tmpDir();
    const store = await openStore({ dataDir, flushIntervalMs: 60_000, logger: silentLogger });
    await store.settings.put('mqtt', { brokerAddress: 'mqtt://hub:pw-SECRET-2@broker.lan:1883' });
    await store.close();
    const res = await runBundle(['config', 'check', '--data-dir', dataDir]);
    assert.equal(res.code, 0, res.stderr);
    assert.ok(!res.stdout.includes('pw-SECRET-2'), res.stdout);
    assert.ok(
      res.stdout.includes('mqtt.brokerAddress = (not shown: not a host name or address, it may hold credentials)  (stored, not used: the API would refuse it; PUT a valid value or null)'),
      res.stdout,
    );
    const svc = await startService({ dataDir, flags: { 'Mqtt.BrokerAddress': '' } });
    await svc.stop();
    const warning = svc.logs.filter((l) => l.includes('stored setting'));
    assert.equal(warning.length, 1, svc.logs.join('\n'));
    assert.match(warning[0]!, /stored setting mqtt\.brokerAddress = \(not shown: not a host name or address, it may hold credentials\) is not one the API accepts/);
    assert.ok(!svc.logs.join('\n').includes('pw-SECRET-2'));
  });
});
