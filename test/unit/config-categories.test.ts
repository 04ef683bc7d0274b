// ConfigCategories through its public API only: effective values from defaults, the file, the API and
// the operator (env, flags), where each comes from, durable merges, listeners and refusals. A real
// configuration loader and a real store in a temporary folder.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { loadConfig, type LoadOptions } from '../../src/config/load.js';
import { silentLogger } from '../../src/log/logger.js';
import { CATEGORY_NAMES, ConfigCategories } from '../../src/settings/categories.js';
import { openStore, type OpenedStore } from '../../src/store/index.js';
import { tmpDir } from '../support/tmp.js';

const opened: OpenedStore[] = [];
after(async () => {
  for (const s of opened) await s.close();
});

async function categories(opts: LoadOptions & { fileContent?: object } = {}, dataDir = tmpDir()): Promise<{ cats: ConfigCategories; store: OpenedStore; dataDir: string }> {
  let file: string | undefined;
  if (opts.fileContent) {
    file = path.join(tmpDir(), 'appsettings.json');
    writeFileSync(file, JSON.stringify(opts.fileContent));
  }
  const store = await openStore({ dataDir, flushIntervalMs: 60_000, logger: silentLogger });
  opened.push(store);
  const loaded = loadConfig({ file, env: opts.env ?? {}, flags: opts.flags ?? {} });
  return { cats: new ConfigCategories(loaded, store.settings), store, dataDir };
}

describe('ConfigCategories', () => {
  it('names three categories and reads the built-in defaults', async () => {
    const { cats } = await categories();
    assert.deepEqual([...CATEGORY_NAMES].sort(), ['device', 'mqtt', 'voice']);
    for (const name of CATEGORY_NAMES) assert.equal(cats.has(name), true);
    assert.equal(cats.has('lights'), false);
    assert.equal(cats.has('toString'), false);
    assert.deepEqual(cats.get('voice'), { enableVoice: true, audioSampleRate: 16000, audioChannels: 1, enableNoiseReduction: false, wakeWords: [] });
    assert.deepEqual(cats.voice(), { enableVoice: true, audioSampleRate: 16000, audioChannels: 1, enableNoiseReduction: false, wakeWords: [] });
    assert.deepEqual(cats.get('device'), { allowDeviceRegistration: true, maxDevices: 10, tokenExpiration: '24:00:00' });
    assert.deepEqual(cats.device(), { allowDeviceRegistration: true, maxDevices: 10, tokenExpiration: 86_400_000 });
    assert.deepEqual(Object.keys(cats.get('mqtt')).sort(), ['brokerAddress', 'port', 'username']);
    assert.deepEqual(cats.sources('voice'), {
      enableVoice: 'default',
      audioSampleRate: 'default',
      audioChannels: 'default',
      enableNoiseReduction: 'default',
      wakeWords: 'default',
    });
  });

  it('merges a PUT over the stored values, durably, and tells listeners the effective values', async () => {
    const dataDir = tmpDir();
    const { cats, store } = await categories({}, dataDir);
    const seen: Array<[string, Record<string, unknown>]> = [];
    cats.onChange((category, values) => seen.push([category, values]));
    await cats.put('voice', { wakeWords: ['hey hub'] });
    const values = await cats.put('voice', { audioSampleRate: 48000 });
    assert.deepEqual(values, { enableVoice: true, audioSampleRate: 48000, audioChannels: 1, enableNoiseReduction: false, wakeWords: ['hey hub'] });
    assert.deepEqual(cats.get('voice'), values);
    assert.deepEqual(
      seen.map(([c]) => c),
      ['voice', 'voice'],
    );
    assert.deepEqual(seen[1]![1], values);
    assert.equal(cats.sources('voice').audioSampleRate, 'api');
    assert.equal(cats.sources('voice').audioChannels, 'default');
    await store.close();
    opened.splice(opened.indexOf(store), 1);
    // A new process over the same data folder sees the stored values.
    const reopened = await categories({}, dataDir);
    assert.deepEqual(reopened.cats.get('voice'), values);
  });

  it('lets the file set a value the API then overrides, but not an environment variable or a flag', async () => {
    const { cats } = await categories({
      fileContent: { DeviceManagement: { MaxDevices: 7 }, VoiceService: { AudioSampleRate: 24000 } },
      env: { DeviceManagement__AllowDeviceRegistration: 'false' },
      flags: { 'VoiceService.AudioChannels': 2 },
    });
    assert.deepEqual(cats.get('device'), { allowDeviceRegistration: false, maxDevices: 7, tokenExpiration: '24:00:00' });
    assert.equal(cats.sources('device').maxDevices, 'file');
    assert.equal(cats.sources('device').allowDeviceRegistration, 'env');
    await cats.put('device', { maxDevices: 3, allowDeviceRegistration: true });
    assert.deepEqual(cats.device(), { allowDeviceRegistration: false, maxDevices: 3, tokenExpiration: 86_400_000 });
    assert.deepEqual(cats.sources('device'), { allowDeviceRegistration: 'env', maxDevices: 'api', tokenExpiration: 'default' });
    await cats.put('voice', { audioSampleRate: 8000, audioChannels: 1 });
    assert.equal(cats.voice().audioSampleRate, 8000);
    assert.equal(cats.voice().audioChannels, 2);
    assert.equal(cats.sources('voice').audioChannels, 'flag');
  });

  it('refuses an unknown category; a valid lifetime is stored as text and read in ms', async () => {
    // Value ranges are the write schema's, applied where the body comes in (PUT /api/config/{category}:
    // test/inject and test/api assert the 400s); put() takes an already validated patch.
    const { cats } = await categories();
    assert.throws(() => cats.get('lights'), { code: 'not_found', message: "configuration category 'lights' does not exist" });
    assert.throws(() => cats.sources('lights'), { code: 'not_found', message: "configuration category 'lights' does not exist" });
    await assert.rejects(cats.put('lights', {}), { code: 'not_found', message: "configuration category 'lights' does not exist" });
    assert.deepEqual(cats.sources('device').tokenExpiration, 'default');
    await cats.put('device', { tokenExpiration: '02:00:00' });
    assert.equal(cats.device().tokenExpiration, 7_200_000);
    assert.equal(cats.sources('device').tokenExpiration, 'api');
  });
});
