// The configuration categories, directly: their keys follow the configuration schema (a value is
// accepted over the API exactly when the configuration accepts it, unless the category says it accepts
// less), values come from the right layer in the right form, and no secret can become a category key.
import assert from 'node:assert/strict';
import { renameSync, rmSync, writeFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { ConfigError, loadConfig } from '../../src/config/load.js';
import type { SchemaNode } from '../../src/config/schema.js';
import { DomainError } from '../../src/errors.js';
import { validateBody } from '../../src/http/schemas.js';
import { silentLogger } from '../../src/log/logger.js';
import { OPUS_SAMPLE_RATES } from '../../src/opus-format.js';
import { acceptsStored } from '../../src/api/routes/config.js';
import { ConfigCategories } from '../../src/settings/categories.js';
import { CATEGORIES, categoryKeys, CATEGORY_NAMES, fromConfig, type CategoryName } from '../../src/settings/definitions.js';
import { CATEGORY_BODY, CATEGORY_SCHEMAS } from '../../src/settings/schemas.js';
import { openStore, type OpenedStore } from '../../src/store/index.js';
import { tmpDir } from '../support/tmp.js';

function configAccepts(configKey: string, value: unknown): boolean {
  try {
    loadConfig({ flags: { [configKey]: value } });
    return true;
  } catch (e) {
    if (e instanceof ConfigError) return false;
    throw e;
  }
}

function apiAccepts(category: CategoryName, name: string, value: unknown): boolean {
  try {
    validateBody(CATEGORY_BODY[category]!, { [name]: value });
    return true;
  } catch (e) {
    if (e instanceof DomainError && e.code === 'invalid_argument') return false;
    throw e;
  }
}

/** Values of the key's JSON type around and beyond the edges of what its schema admits. */
function candidates(node: SchemaNode): unknown[] {
  const span = node['x-timespan'];
  if (span) {
    return [
      span.minimum, span.maximum, '00:00:00', '3650.00:00:01', '24:00:00', '7.00:00:00.5', '00:5:00', '0:0:2', '1000:00:00',
      '1.24:00:00', '-00:00:05', '1 day', '', '99999999.23:59:59', '123456789.00:00:00', ' 01:00:00',
    ];
  }
  if (node.enum) return [...node.enum, 44100, 0, 3, -1];
  if (node.type === 'integer') return [node.minimum! - 1, node.minimum, node.maximum, node.maximum! + 1, node.default, 1.5];
  if (node.type === 'boolean') return [true, false];
  if (node.type === 'string') return ['', 'x', 'broker.lan', 'x'.repeat(253), 'x'.repeat(254), 'x'.repeat(300)];
  throw new Error(`no candidates for ${JSON.stringify(node)}`);
}

describe('category keys follow the configuration schema', () => {
  for (const category of CATEGORY_NAMES) {
    for (const [name, key] of categoryKeys(category)) {
      if (key.configKey === undefined) continue;
      const narrowed = Object.keys(key.narrowing).length > 0;
      it(`${category}.${name} accepts ${narrowed ? 'no more than' : 'exactly'} what ${key.configKey} accepts`, () => {
        let accepted = 0;
        for (const value of candidates(key.node)) {
          const api = apiAccepts(category, name, value);
          const config = configAccepts(key.configKey, value);
          if (api) accepted++;
          if (narrowed) assert.ok(!api || config, `${JSON.stringify(value)}: accepted over the API, refused by the configuration`);
          else assert.equal(api, config, `${JSON.stringify(value)}: API ${api ? 'accepts' : 'refuses'}, configuration ${config ? 'accepts' : 'refuses'}`);
        }
        assert.ok(accepted > 0, 'some candidate is valid');
      });
    }
  }

  it('audioSampleRate and StartSessionRequest sampleRate are the Opus sample rates', () => {
    const voice = CATEGORY_SCHEMAS.VoiceSettings!.properties as Record<string, SchemaNode>;
    // null: the stored value is removed (PUT merges as a JSON merge patch).
    assert.deepEqual(voice.audioSampleRate!.enum, [...OPUS_SAMPLE_RATES, null]);
    assert.equal(apiAccepts('voice', 'audioSampleRate', 44100), false);
    assert.equal(apiAccepts('voice', 'audioSampleRate', null), true);
    for (const rate of OPUS_SAMPLE_RATES) assert.equal(apiAccepts('voice', 'audioSampleRate', rate), true);
  });

  it('no category key is a secret, and none can be made one', () => {
    for (const category of CATEGORY_NAMES) {
      for (const [name, key] of categoryKeys(category)) assert.notEqual(key.node.writeOnly, true, `${category}.${name}`);
    }
    assert.throws(() => fromConfig('Mqtt', 'Password'), /^Error: Mqtt\.Password cannot be a category key$/);
    assert.throws(() => fromConfig('Auth', 'SigningKey'), /^Error: Auth\.SigningKey cannot be a category key$/);
  });

  it('a write schema says what the key holds and nothing the API does not take', () => {
    assert.deepEqual(Object.keys(CATEGORY_BODY), Object.keys(CATEGORIES));
    const device = CATEGORY_SCHEMAS.DeviceSettings!;
    assert.equal(device.additionalProperties, false);
    const props = device.properties as Record<string, Record<string, unknown>>;
    assert.deepEqual(props.tokenExpiration, {
      type: ['string', 'null'],
      'x-timespan': { minimum: '00:00:01', maximum: '3650.00:00:00' },
      description: 'Lifetime of a device token. Value: a time span hh:mm:ss or d.hh:mm:ss (optionally .fffffff) from 00:00:01 to 3650.00:00:00. null removes the value stored through the API.',
    });
    assert.equal(apiAccepts('device', 'tokenExpiration', null), true);
    for (const schema of Object.values(CATEGORY_SCHEMAS)) {
      for (const [name, prop] of Object.entries(schema.properties as Record<string, Record<string, unknown>>)) {
        for (const keyword of ['default', 'writeOnly']) assert.equal(keyword in prop, false, `${name} has ${keyword}`);
        // The words a refused pattern is quoted in, and only there: other keywords' messages name their bounds.
        assert.equal('x-expected' in prop, 'pattern' in prop, `${name}: x-expected beside a pattern only`);
      }
    }
  });
});

describe('ConfigCategories over a real store', () => {
  let store: OpenedStore;

  before(async () => {
    store = await openStore({ dataDir: tmpDir(), flushIntervalMs: 60_000, logger: silentLogger });
  });
  after(async () => {
    await store.close();
  });

  it('gives each value from its layer, time spans as text to the API and in ms to the program', async () => {
    const loaded = loadConfig({
      env: { VoiceService__AudioSampleRate: '24000' },
      flags: { 'DeviceManagement.MaxDevices': 3, 'Mqtt.BrokerAddress': 'broker.lan' },
    });
    const categories = new ConfigCategories(loaded, store.settings);
    assert.deepEqual(categories.get('device'), { allowDeviceRegistration: true, maxDevices: 3, tokenExpiration: '24:00:00' }, 'the default as configured, not reformatted');
    assert.deepEqual(categories.device(), { allowDeviceRegistration: true, maxDevices: 3, tokenExpiration: 86_400_000 });
    assert.deepEqual(categories.voice(), { enableVoice: true, audioSampleRate: 24000, audioChannels: 1, enableNoiseReduction: false, wakeWords: [] });
    assert.deepEqual(categories.mqtt(), { brokerAddress: 'broker.lan', port: 1883, username: '' });

    const seen: Array<[string, Record<string, unknown>]> = [];
    categories.onChange((category, values) => seen.push([category, values]));
    const after = await categories.put('device', { maxDevices: 5, tokenExpiration: '01:30:00', allowDeviceRegistration: false });
    // The flag still wins over the API; the others are the API's now.
    assert.deepEqual(after, { allowDeviceRegistration: false, maxDevices: 3, tokenExpiration: '01:30:00' });
    assert.deepEqual(seen, [['device', after]]);
    assert.deepEqual(categories.device(), { allowDeviceRegistration: false, maxDevices: 3, tokenExpiration: 5_400_000 });
    assert.deepEqual(categories.sources('device'), { allowDeviceRegistration: 'api', maxDevices: 'flag', tokenExpiration: 'api' });

    await categories.put('voice', { audioSampleRate: 48000, wakeWords: ['computer'] });
    assert.deepEqual(categories.get('voice'), { enableVoice: true, audioSampleRate: 24000, audioChannels: 1, enableNoiseReduction: false, wakeWords: ['computer'] });
    assert.deepEqual(categories.sources('voice'), {
      enableVoice: 'default', audioSampleRate: 'env', audioChannels: 'default', enableNoiseReduction: 'default', wakeWords: 'api',
    });

    // Stored values outlive the object, as they outlive a restart.
    const again = new ConfigCategories(loadConfig(), store.settings);
    assert.deepEqual(again.device(), { allowDeviceRegistration: false, maxDevices: 5, tokenExpiration: 5_400_000 });
    assert.equal(again.voice().audioSampleRate, 48000);
  });

  it('a stored value the API would refuse (a file edited by hand, or from a voice-hub with a wider range) is not used, and named', async () => {
    const own = await openStore({ dataDir: tmpDir(), flushIntervalMs: 60_000, logger: silentLogger });
    try {
      // Written past the API's check, as another writer of the file would.
      await own.settings.put('voice', { audioSampleRate: 'abc', audioChannels: 2, wakeWords: ['ok', 5] });
      await own.settings.put('device', { maxDevices: 200_000, tokenExpiration: '01:00:00' });
      // Stored before a broker address had to be a host name: the login in it is never shown.
      await own.settings.put('mqtt', { brokerAddress: 'mqtt://hub:pw-SECRET@broker.lan', username: 'x'.repeat(300) });
      const categories = new ConfigCategories(loadConfig(), own.settings, acceptsStored);
      assert.deepEqual(categories.voice(), { enableVoice: true, audioSampleRate: 16000, audioChannels: 2, enableNoiseReduction: false, wakeWords: [] });
      assert.deepEqual(categories.device(), { allowDeviceRegistration: true, maxDevices: 10, tokenExpiration: 3_600_000 });
      assert.deepEqual(categories.sources('voice'), {
        enableVoice: 'default', audioSampleRate: 'default', audioChannels: 'api', enableNoiseReduction: 'default', wakeWords: 'default',
      });
      assert.deepEqual(categories.unusable(), [
        'voice.audioSampleRate = "abc"',
        'voice.wakeWords = ["ok",5]',
        'device.maxDevices = 200000',
        'mqtt.brokerAddress = (not shown: not a host name or address, it may hold credentials)',
        `mqtt.username = "${'x'.repeat(76)}... (300 characters)`,
      ]);
      assert.deepEqual(categories.mqtt(), { brokerAddress: 'localhost', port: 1883, username: '' });
      // Left stored: a PUT of the key replaces it, null removes it.
      await categories.put('voice', { audioSampleRate: 24000, wakeWords: null });
      assert.deepEqual(categories.unusable().slice(0, 1), ['device.maxDevices = 200000']);
      assert.equal(categories.voice().audioSampleRate, 24000);
    } finally {
      await own.close();
    }
  });

  it('concurrent writes: each is answered with its own result, the last stored one is what listeners end with', async () => {
    const categories = new ConfigCategories(loadConfig(), store.settings);
    const seen: Record<string, unknown>[] = [];
    categories.onChange((_, values) => seen.push(values));
    const bodies = [8000, 12000, 16000, 24000, 48000].map((rate, i) => ({ audioSampleRate: rate, audioChannels: (i % 2) + 1 }));
    const answers = await Promise.all(bodies.map((body) => categories.put('voice', body)));
    answers.forEach((answer, i) => assert.deepEqual([answer.audioSampleRate, answer.audioChannels], [bodies[i]!.audioSampleRate, bodies[i]!.audioChannels]));
    const last = bodies.at(-1)!;
    assert.deepEqual([categories.get('voice').audioSampleRate, categories.get('voice').audioChannels], [last.audioSampleRate, last.audioChannels]);
    assert.deepEqual(seen.at(-1), categories.get('voice'));
  });

  it('a write whose persist fails after an earlier one succeeded: listeners end with what is stored, not with the refused write', async () => {
    // The data dir is swapped for a plain file when the second persist starts, so its write fails as
    // with a vanished mount, after the first write's listeners have already run.
    const dataDir = tmpDir();
    let armed = false;
    const own = await openStore({
      dataDir,
      flushIntervalMs: 60_000,
      logger: silentLogger,
      assertOwner: () => {
        if (!armed) return;
        armed = false;
        renameSync(dataDir, `${dataDir}-away`);
        writeFileSync(dataDir, '');
      },
    });
    try {
      const categories = new ConfigCategories(loadConfig(), own.settings);
      const seen: Record<string, unknown>[] = [];
      categories.onChange((_, values) => seen.push(values));
      const first = categories.put('mqtt', { brokerAddress: 'first.lan' }); // its persist has started
      armed = true;
      const second = categories.put('mqtt', { brokerAddress: 'second.lan', port: 1884 });
      const [answered, refused] = await Promise.allSettled([first, second]);
      assert.deepEqual(answered, { status: 'fulfilled', value: { brokerAddress: 'first.lan', port: 1883, username: '' } });
      assert.equal(refused.status === 'rejected' && (refused.reason as DomainError).code, 'unavailable');
      assert.deepEqual(categories.get('mqtt'), { brokerAddress: 'first.lan', port: 1883, username: '' });
      assert.deepEqual(seen.at(-1), categories.get('mqtt'), 'the refused second.lan:1884 is not what listeners (the MQTT connection) end on');
    } finally {
      rmSync(dataDir);
      renameSync(`${dataDir}-away`, dataDir);
      await own.close();
    }
  });

  it('an unknown category is not_found, for reads and writes alike', async () => {
    const categories = new ConfigCategories(loadConfig(), store.settings);
    assert.equal(categories.has('lights'), false);
    const notFound = { name: 'DomainError', code: 'not_found', message: "configuration category 'lights' does not exist" };
    assert.throws(() => categories.get('lights'), notFound);
    assert.throws(() => categories.sources('lights'), notFound);
    await assert.rejects(categories.put('lights', {}), notFound);
    // Names of Object.prototype are not categories either.
    assert.throws(() => categories.get('constructor'), { code: 'not_found' });
  });
});
