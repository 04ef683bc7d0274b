// The types read from the schema: the loaded configuration and the category settings have the types
// their schema nodes say (checked by the type checker: a wrong derivation fails `npx tsc --noEmit`),
// and the loaded configuration has the schema's shape at run time.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { loadConfig } from '../../src/config/load.js';
import { leafKeys } from '../../src/config/schema-keys.js';
import type { AppConfig, LogLevelName } from '../../src/config/types.js';
import type { OpusSampleRate } from '../../src/opus-format.js';
import type { CategoryValues, DeviceSettings, MqttSettings, VoiceSettings } from '../../src/settings/definitions.js';

/** True only when A and B are the same type (not merely assignable either way). */
type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
const same = <A, B>(check: Equal<A, B>): Equal<A, B> => check;

describe('types read from the schema', () => {
  it('AppConfig: strings, integers, enums, time spans in ms, arrays, a map of log levels', () => {
    same<AppConfig['VoiceService']['ServerUrl'], string>(true);
    same<AppConfig['VoiceService']['AudioSampleRate'], OpusSampleRate>(true);
    same<AppConfig['VoiceService']['AudioChannels'], 1 | 2>(true);
    same<AppConfig['VoiceService']['EnableVoice'], boolean>(true);
    same<AppConfig['Hub']['ClientTimeout'], number>(true);
    same<AppConfig['Server']['Certificate']['KeyPath'], string>(true);
    same<AppConfig['ApiKeys'], readonly string[]>(true);
    same<AppConfig['Logging']['LogLevel']['Default'], LogLevelName>(true);
    same<AppConfig['Logging']['LogLevel']['Hub'], LogLevelName>(true);
    same<keyof AppConfig['DeviceManagement'], 'AllowDeviceRegistration' | 'MaxDevices' | 'TokenExpiration'>(true);
    // @ts-expect-error: a key the schema does not have is not in the type either.
    assert.equal(typeof ({} as AppConfig['Server']).Missing, 'undefined');
  });

  it('category settings: time spans in ms for the program, as text for the API', () => {
    same<DeviceSettings, { readonly allowDeviceRegistration: boolean; readonly maxDevices: number; readonly tokenExpiration: number }>(true);
    same<CategoryValues<'device'>['tokenExpiration'], string>(true);
    same<VoiceSettings['audioSampleRate'], OpusSampleRate>(true);
    same<VoiceSettings['wakeWords'], readonly string[]>(true);
    same<MqttSettings, { readonly brokerAddress: string; readonly port: number; readonly username: string }>(true);
  });

  it('the loaded configuration has every key of the schema, and nothing else', () => {
    const { config } = loadConfig();
    const found: string[] = [];
    const walk = (value: unknown, path: string[]): void => {
      if (typeof value === 'object' && value !== null && !Array.isArray(value) && path.join('.') !== 'Logging.LogLevel') {
        for (const [name, v] of Object.entries(value)) walk(v, [...path, name]);
      } else if (path.join('.') === 'Logging.LogLevel') {
        for (const name of Object.keys(value as object)) found.push(`Logging.LogLevel.${name}`);
      } else {
        found.push(path.join('.'));
      }
    };
    walk(config, []);
    assert.deepEqual(found, leafKeys().map((k) => k.key));
    assert.equal(typeof config.Hub.ClientTimeout, 'number');
    assert.equal(config.Hub.ClientTimeout, 30_000);
  });
});
