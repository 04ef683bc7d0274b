// Loading: precedence of defaults < file < env < flags, the environment's naming rules, type
// conversion, and the result's shape (time spans in ms, frozen, a source for every key).
import assert from 'node:assert/strict';
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { loadConfig, SHORT_FLAGS } from '../../src/config/load.js';
import { maskedView } from '../../src/config/mask.js';
import { leafKeys } from '../../src/config/schema-keys.js';
import type { ConfigSource } from '../../src/config/types.js';
import { publicServerUrl } from '../../src/upstream/public-url.js';
import { tmpDir } from '../support/tmp.js';
import { configFile, problemsOf } from './helpers.js';

const SHIPPED = path.resolve(import.meta.dirname, '../../config/appsettings.json');

describe('precedence: defaults < file < env < flags', () => {
  // For each key: the value each layer sets; rows say which layers are present and who wins.
  const keys = [
    { key: 'Server.Port', file: { Server: { Port: 5001 } }, env: ['Server__Port', '5002'], flag: 5003, values: [5000, 5001, 5002, 5003] },
    {
      key: 'DeviceManagement.TokenExpiration',
      file: { DeviceManagement: { TokenExpiration: '12:00:00' } },
      env: ['DeviceManagement__TokenExpiration', '2.00:00:00'],
      flag: '00:30:00',
      values: [86_400_000, 43_200_000, 172_800_000, 1_800_000],
    },
    { key: 'VoiceService.EnableVoice', file: { VoiceService: { EnableVoice: false } }, env: ['VoiceService__EnableVoice', 'true'], flag: 'false', values: [true, false, true, false] },
    { key: 'Logging.LogLevel.Default', file: { Logging: { LogLevel: { Default: 'Debug' } } }, env: ['Logging__LogLevel__Default', 'Error'], flag: 'trace', values: ['Information', 'Debug', 'Error', 'Trace'] },
    { key: 'ApiKeys', file: { ApiKeys: ['f1', 'f2', 'f3'] }, env: ['ApiKeys__0', 'e1'], flag: ['g1', 'g2'], values: [[], ['f1', 'f2', 'f3'], ['e1'], ['g1', 'g2']] },
  ];
  const rows: Array<{ layers: ConfigSource[]; winner: ConfigSource }> = [
    { layers: [], winner: 'default' },
    { layers: ['file'], winner: 'file' },
    { layers: ['file', 'env'], winner: 'env' },
    { layers: ['env'], winner: 'env' },
    { layers: ['file', 'env', 'flag'], winner: 'flag' },
    { layers: ['file', 'flag'], winner: 'flag' },
    { layers: ['env', 'flag'], winner: 'flag' },
  ];
  const order: ConfigSource[] = ['default', 'file', 'env', 'flag'];
  for (const k of keys) {
    for (const { layers, winner } of rows) {
      it(`${k.key} from ${layers.join(' + ') || 'nothing'}: ${winner} wins`, () => {
        const loaded = loadConfig({
          file: layers.includes('file') ? configFile(k.file) : undefined,
          env: layers.includes('env') ? { [k.env[0]!]: k.env[1]! } : {},
          flags: layers.includes('flag') ? { [k.key]: k.flag } : {},
        });
        assert.equal(loaded.sources.get(k.key), winner);
        const value = k.key.split('.').reduce<unknown>((o, s) => (o as Record<string, unknown>)[s], loaded.config);
        assert.deepEqual(value, k.values[order.indexOf(winner)]);
      });
    }
  }

  it('keys not set by a layer keep the lower layer', () => {
    const loaded = loadConfig({
      file: configFile({ Server: { Port: 5001, Host: '127.0.0.1' } }),
      env: { Server__Port: '5002' },
      flags: {},
    });
    assert.equal(loaded.config.Server.Port, 5002);
    assert.equal(loaded.config.Server.Host, '127.0.0.1');
    assert.equal(loaded.sources.get('Server.Host'), 'file');
    assert.equal(loaded.config.Server.MaxBodyBytes, 65_536);
    assert.equal(loaded.sources.get('Server.MaxBodyBytes'), 'default');
  });
});

describe('configuration file', () => {
  it('--config picks the file; defaultFiles are used only when no file is given', () => {
    const given = configFile({ Server: { Port: 6001 } });
    const fallback = configFile({ Server: { Port: 6002 } });
    assert.equal(loadConfig({ file: given, defaultFiles: [fallback] }).config.Server.Port, 6001);
    const loaded = loadConfig({ defaultFiles: [fallback] });
    assert.equal(loaded.config.Server.Port, 6002);
    assert.equal(loaded.file, fallback);
  });

  it('a missing default file means built-in defaults', () => {
    const loaded = loadConfig({ defaultFiles: ['/nonexistent/appsettings.json'] });
    assert.equal(loaded.file, undefined);
    assert.equal(loaded.config.Server.Port, 5000);
    assert.ok([...loaded.sources.values()].every((s) => s === 'default'));
  });

  it('a default path where anything is, a dangling link or a loop too, is read and its failure reported, not passed over', () => {
    const dir = tmpDir();
    const later = configFile({ Server: { Port: 6003 } });
    const at = (name: string): string => path.join(dir, name);
    symlinkSync('/nonexistent', at('dangling.json'));
    assert.deepEqual(problemsOf({ defaultFiles: [at('dangling.json'), later] }), [
      `${at('dangling.json')}: cannot read the configuration file: it is a symbolic link to /nonexistent, which does not exist`,
    ]);
    mkdirSync(at('folder.json'));
    assert.deepEqual(problemsOf({ defaultFiles: [at('folder.json'), later] }), [`${at('folder.json')}: cannot read the configuration file: it is a directory`]);
    // As --config gives it: the system's refusal (exit 1 in the CLI), not a configuration problem.
    symlinkSync('loop.json', at('loop.json'));
    for (const opts of [{ defaultFiles: [at('loop.json'), later] }, { file: at('loop.json') }]) {
      assert.throws(() => loadConfig(opts), { code: 'ELOOP', syscall: 'open', path: at('loop.json') });
    }
    // Nothing at a path (nor can be: a file where its folder should be) passes to the next.
    writeFileSync(at('a-file'), '');
    assert.equal(loadConfig({ defaultFiles: [at('none.json'), path.join(at('a-file'), 'appsettings.json'), later] }).file, later);
  });

  it('matches keys case-insensitively and keeps the schema spelling', () => {
    const loaded = loadConfig({ file: configFile({ voiceservice: { serverurl: 'wss://voice.example:443/v' }, MQTT: { PORT: 8883 } }) });
    assert.equal(loaded.config.VoiceService.ServerUrl, 'wss://voice.example:443/v');
    assert.equal(loaded.config.Mqtt.Port, 8883);
    assert.equal(loaded.sources.get('VoiceService.ServerUrl'), 'file');
  });

  it('accepts a key given twice with the same value (nothing is lost): the package\'s own file once did so', () => {
    const loaded = loadConfig({ file: configFile('{ "VoiceService": { "OpusLibrary": "libopus.so.1", "opuslibrary": "libopus.so.1" }, "Mqtt": { "Port": 1884 }, "MQTT": { "Port": 1884 } }') });
    assert.equal(loaded.config.VoiceService.OpusLibrary, 'libopus.so.1');
    assert.equal(loaded.config.Mqtt.Port, 1884);
    // A section given twice is one section, as .NET reads it: its settings merge.
    const merged = loadConfig({ file: configFile('{ "Mqtt": { "Port": 1884 }, "MQTT": { "BrokerAddress": "broker.lan" } }') });
    assert.equal(merged.config.Mqtt.Port, 1884);
    assert.equal(merged.config.Mqtt.BrokerAddress, 'broker.lan');
  });

  it('reads a key written as a path, "Server:Port", as .NET does; a dotted one is named as such; the same key twice with two values is refused', () => {
    const loaded = loadConfig({ file: configFile('{ "Server:Port": 5008, "server": { "Host": "127.0.0.1" }, "Logging:LogLevel:Voice.Hub": "Debug", "mqtt:port": 1884, "Mqtt": { "Port": 1884 } }') });
    assert.deepEqual([loaded.config.Server.Port, loaded.config.Server.Host, loaded.config.Logging.LogLevel['Voice.Hub'], loaded.config.Mqtt.Port], [5008, '127.0.0.1', 'Debug', 1884]);
    assert.equal(loaded.sources.get('Server.Port'), 'file');
    const file = configFile('{ "Server.Port": 5009, "Server": { "Port": 5001 }, "Server:port": 5002, "Server:": 1, ":Port": 1 }');
    assert.deepEqual(problemsOf({ file }), [
      `Server.Port: unknown key from file ${file}: in a file a dot is part of the name; nest the key ({"A": {"B": ...}}) or write it "A:B"`,
      `Server.Port: given twice in file ${file}, with two values (once as a "Section:Key" name); keep one`,
      `"Server:": from file ${file} names no key: a key has no empty part (no : doubled, leading or trailing)`,
      `":Port": from file ${file} names no key: a key has no empty part (no : doubled, leading or trailing)`,
    ]);
  });

  it('accepts .NET appsettings leniency: comments, trailing commas, a BOM, values as text', () => {
    const text = '\uFEFF{\n  // upstream\n  "VoiceService": { "AudioSampleRate": "48000", /* stereo */ "AudioChannels": 2, },\n  "ApiKeys": ["k1",],\n}\n';
    const loaded = loadConfig({ file: configFile(text) });
    assert.equal(loaded.config.VoiceService.AudioSampleRate, 48_000);
    assert.equal(loaded.config.VoiceService.AudioChannels, 2);
    assert.deepEqual(loaded.config.ApiKeys, ['k1']);
  });

  it('reads the file in the encoding its byte order mark names, as .NET\'s StreamReader: UTF-16 and UTF-32 either way round', () => {
    const text = '{ "Mqtt": { "BrokerAddress": "broker.lan", "Password": "pässwörd 🎤" }, "VoiceService": { "AudioChannels": 2 } }';
    const swap16 = (b: Buffer): Buffer => Buffer.from(b).swap16();
    const utf32 = (littleEndian: boolean): Buffer => {
      const points = [0xfeff, ...[...text].map((c) => c.codePointAt(0)!)];
      const out = Buffer.alloc(points.length * 4);
      points.forEach((p, i) => (littleEndian ? out.writeUInt32LE(p, i * 4) : out.writeUInt32BE(p, i * 4)));
      return out;
    };
    const utf16le = Buffer.from(`\uFEFF${text}`, 'utf16le');
    const encodings: Record<string, Buffer> = {
      'UTF-8 with a mark': Buffer.from(`\uFEFF${text}`, 'utf8'),
      'UTF-16 LE': utf16le,
      'UTF-16 BE': swap16(utf16le),
      'UTF-32 LE': utf32(true),
      'UTF-32 BE': utf32(false),
    };
    for (const [name, bytes] of Object.entries(encodings)) {
      const loaded = loadConfig({ file: configFile(bytes) });
      assert.equal(loaded.config.Mqtt.BrokerAddress, 'broker.lan', name);
      assert.equal(loaded.config.Mqtt.Password, 'pässwörd 🎤', name);
      assert.equal(loaded.config.VoiceService.AudioChannels, 2, name);
    }
    // Without a mark the bytes are UTF-8: UTF-16 without one is not guessed at, and is refused with a position.
    const unmarked = problemsOf({ file: configFile(Buffer.from(text, 'utf16le')) });
    assert.equal(unmarked.length, 1);
    assert.match(unmarked[0]!, /\.json:1:2: invalid JSON: expected a property name in double quotes or '}' but found character U\+0000 \(UTF-16 or UTF-32 without a byte order mark\? Save the file as UTF-8\)$/);
  });

  it('accepts any category under Logging.LogLevel, dots included, in any case of level', () => {
    const loaded = loadConfig({ file: configFile({ Logging: { LogLevel: { Hub: 'debug', 'Voice.Upstream': 'WARNING' } } }) });
    assert.equal(loaded.config.Logging.LogLevel.Hub, 'Debug');
    assert.equal(loaded.config.Logging.LogLevel['Voice.Upstream'], 'Warning');
    assert.equal(loaded.config.Logging.LogLevel['Microsoft.AspNetCore'], 'Warning');
    assert.equal(loaded.sources.get('Logging.LogLevel.Voice.Upstream'), 'file');
  });

  it('categories are one key when .NET takes them for one (OrdinalIgnoreCase), and two when it does not', () => {
    // The Kelvin sign lowers to k but uppercases to itself; final sigma lowers to itself but uppercases
    // as sigma does: toLowerCase() merged the first pair and kept the second apart, .NET does the opposite.
    const loaded = loadConfig({
      file: configFile({ Logging: { LogLevel: { Work: 'Debug', 'Wor\u212A': 'Error', 'Hub.\u03A3': 'Trace' } } }),
      env: { 'Logging__LogLevel__hub.\u03C2': 'Warning' },
    });
    const levels = loaded.config.Logging.LogLevel;
    assert.equal(levels.Work, 'Debug');
    assert.equal(levels['Wor\u212A'], 'Error');
    assert.equal(levels['Hub.\u03A3'], 'Warning', 'the environment overrides the file key it names in another case');
    assert.equal(levels['hub.\u03C2'], undefined);
  });

  it('a category named like a member of every object (constructor, toString, __proto__) is an ordinary key, from every layer', () => {
    const loaded = loadConfig({
      file: configFile({ Logging: { LogLevel: JSON.parse('{"__proto__": "Error", "toString": "Debug"}') } }),
      env: { Logging__LogLevel__hasOwnProperty: 'Trace' },
      flags: { 'Logging.LogLevel.constructor': 'warning' },
    });
    const levels = loaded.config.Logging.LogLevel;
    assert.deepEqual(Object.keys(levels).sort(), ['Default', 'Microsoft.AspNetCore', '__proto__', 'constructor', 'hasOwnProperty', 'toString']);
    assert.deepEqual(
      ['__proto__', 'toString', 'hasOwnProperty', 'constructor'].map((k) => Object.getOwnPropertyDescriptor(levels, k)?.value),
      ['Error', 'Debug', 'Trace', 'Warning'],
    );
    assert.equal(Object.getPrototypeOf(levels), Object.prototype, 'the __proto__ key did not become the prototype');
    assert.equal(loaded.sources.get('Logging.LogLevel.constructor'), 'flag');
    const shown = maskedView(loaded, publicServerUrl) as { Logging: { LogLevel: Record<string, unknown> } };
    assert.deepEqual(Object.keys(shown.Logging.LogLevel).sort(), Object.keys(levels).sort());
  });

  it('the shipped file loads, every key from the file', () => {
    const loaded = loadConfig({ file: SHIPPED });
    for (const { key } of leafKeys()) assert.equal(loaded.sources.get(key), 'file', key);
    assert.equal(loaded.config.VoiceService.ServerUrl, 'ws://127.0.0.1:5050/voice');
    assert.equal(loaded.config.DeviceManagement.TokenExpiration, 24 * 3_600_000);
  });
});

describe('environment', () => {
  const spellings = ['VoiceService__ServerUrl', 'VOICESERVICE__SERVERURL', 'voiceservice__serverurl', 'voiceService__serverUrl'];
  for (const name of spellings) {
    it(`${name} sets VoiceService.ServerUrl`, () => {
      const loaded = loadConfig({ env: { [name]: 'ws://10.0.0.2:5050/voice' } });
      assert.equal(loaded.config.VoiceService.ServerUrl, 'ws://10.0.0.2:5050/voice');
      assert.equal(loaded.sources.get('VoiceService.ServerUrl'), 'env');
    });
  }

  it('Logging__LogLevel__<Category> accepts any category; __ inside a category becomes a dot', () => {
    const loaded = loadConfig({ env: { LOGGING__LOGLEVEL__DEFAULT: 'warning', Logging__LogLevel__Hub: 'Trace', Logging__LogLevel__Microsoft__AspNetCore: 'Error' } });
    assert.equal(loaded.config.Logging.LogLevel.Default, 'Warning');
    assert.equal(loaded.config.Logging.LogLevel.Hub, 'Trace');
    assert.equal(loaded.config.Logging.LogLevel['Microsoft.AspNetCore'], 'Error');
    assert.equal(loaded.sources.get('Logging.LogLevel.Microsoft.AspNetCore'), 'env');
  });

  it('arrays by index replace the file array entirely, in index order', () => {
    const loaded = loadConfig({
      file: configFile({ ApiKeys: ['file-a', 'file-b', 'file-c'] }),
      env: { ApiKeys__10: 'k10', ApiKeys__2: 'k2', apikeys__0: 'k0' },
    });
    assert.deepEqual(loaded.config.ApiKeys, ['k0', 'k2', 'k10']);
    assert.equal(loaded.sources.get('ApiKeys'), 'env');
  });

  it('top-level keys need no separator', () => {
    assert.equal(loadConfig({ env: { AllowedHosts: 'pi.local;localhost' } }).config.AllowedHosts, 'pi.local;localhost');
  });

  it('AllowedHosts takes every form of entry a Host header can match', () => {
    const hosts = ' pi.local ; *.example.com;192.168.1.20;fe80::1;[::1]:5000;Bücher.de;*.bücher.de;hub.lan:5000;0.0.0.0;[::];;';
    assert.equal(loadConfig({ flags: { AllowedHosts: hosts } }).config.AllowedHosts, hosts);
  });

  it('ignores variables that are not configuration keys', () => {
    const env = {
      PATH: '/usr/bin', HOME: '/root', SERVER: 'x', VoiceService: 'x', Foo__Bar: 'x', VoiceService__Bogus: 'x',
      Server__Port__Extra: 'x', Server____Port: 'x', __Server__Port: 'x', ApiKeys__0__X: 'x',
    };
    const loaded = loadConfig({ env });
    assert.ok([...loaded.sources.values()].every((s) => s === 'default'));
  });

  it('refuses a key set twice in different case, an array without index and a bad index', () => {
    const problems = problemsOf({ env: { Server__Port: '1', SERVER__PORT: '2', ApiKeys: 'k', ApiKeys__first: 'k' } });
    assert.equal(problems.length, 3, problems.join('\n'));
    assert.match(problems.join('\n'), /Server\.Port: set by both env SERVER__PORT and env Server__Port/);
    assert.match(problems.join('\n'), /ApiKeys: from env ApiKeys is invalid: give arrays by index, like ApiKeys__0/);
    assert.match(problems.join('\n'), /ApiKeys: from env ApiKeys__first is invalid: .* must be an index/);
  });
});

describe('flags', () => {
  it('dot paths, case-insensitive, arrays whole or by index', () => {
    const loaded = loadConfig({ flags: { 'server.port': 7000, 'Mqtt.BrokerAddress': 'broker.lan', 'ApiKeys.1': 'b', 'ApiKeys.0': 'a' } });
    assert.equal(loaded.config.Server.Port, 7000);
    assert.equal(loaded.config.Mqtt.BrokerAddress, 'broker.lan');
    assert.deepEqual(loaded.config.ApiKeys, ['a', 'b']);
    assert.deepEqual(loadConfig({ flags: { ApiKeys: 'only' } }).config.ApiKeys, ['only']);
  });

  it('every short flag maps to a key of the schema', () => {
    const keys = new Set(leafKeys().map((k) => k.key));
    for (const [flag, key] of Object.entries(SHORT_FLAGS)) assert.ok(keys.has(key), `${flag} -> ${key}`);
    assert.deepEqual(Object.keys(SHORT_FLAGS).sort(), ['cert', 'data-dir', 'host', 'https-port', 'key', 'log-level', 'port', 'voice-server-url']);
  });

  it('skips undefined values (options not given on the command line)', () => {
    assert.equal(loadConfig({ flags: { 'Server.Port': undefined } }).sources.get('Server.Port'), 'default');
  });
});

describe('type conversion', () => {
  const table: Array<[string, string, unknown, unknown]> = [
    // key, env variable, value, expected effective value
    ['VoiceService.EnableVoice', 'VoiceService__EnableVoice', 'TRUE', true],
    ['VoiceService.EnableVoice', 'VoiceService__EnableVoice', 'False', false],
    ['VoiceService.EnableVoice', 'VoiceService__EnableVoice', ' false ', false],
    ['DeviceManagement.MaxDevices', 'DeviceManagement__MaxDevices', ' 42 ', 42],
    ['DeviceManagement.MaxDevices', 'DeviceManagement__MaxDevices', '0', 0],
    ['Logging.LogLevel.Default', 'Logging__LogLevel__Default', 'critical', 'Critical'],
    ['Logging.LogLevel.Default', 'Logging__LogLevel__Default', 'NONE', 'None'],
    ['Mqtt.Username', 'Mqtt__Username', '', ''],
    ['Hub.ClientTimeout', 'Hub__ClientTimeout', '00:01:00.250', 60_250],
  ];
  for (const [key, name, value, expected] of table) {
    it(`env ${name}=${JSON.stringify(value)} gives ${JSON.stringify(expected)}`, () => {
      const loaded = loadConfig({ env: { [name]: value as string } });
      const got = key.split('.').reduce<unknown>((o, s) => (o as Record<string, unknown>)[s], loaded.config);
      assert.deepEqual(got, expected);
    });
  }

  // .NET keeps a number written in the file as its text: a secret or a name written without quotes is
  // the digits written, not a double's rounding of them.
  it('a number in the file for a text setting is its text as written, whatever a double would make of it', () => {
    const file = configFile('{ "Mqtt": { "Password": 12345678901234567890, "TopicPrefix": -0, "Username": 1.50 }, "ApiKeys": [1.10, 7, 1e3], ' +
      '"Auth": { "SigningKey": 12345678901234567890123456789012345 }, "Server": { "Port": 5001 } }');
    const { config } = loadConfig({ file });
    assert.deepEqual(
      [config.Mqtt.Password, config.Mqtt.TopicPrefix, config.Mqtt.Username, config.ApiKeys, config.Auth.SigningKey, config.Server.Port],
      ['12345678901234567890', '-0', '1.50', ['1.10', '7', '1e3'], '12345678901234567890123456789012345', 5001],
    );
  });

  it('an integer past 2^53 is refused quoting the digits given, from the file and the environment', () => {
    const file = configFile('{ "Server": { "Port": 123456789012345678901234 } }');
    assert.deepEqual(problemsOf({ file }), [`Server.Port: "123456789012345678901234" from file ${file} is invalid: must be an integer from 0 to 65535`]);
    assert.deepEqual(problemsOf({ env: { Server__Port: '99999999999999999999999' } }), [
      'Server.Port: "99999999999999999999999" from env Server__Port is invalid: must be an integer from 0 to 65535',
    ]);
  });

  const flagTable: Array<[string, unknown, unknown]> = [
    ['Mqtt.Username', 123, '123'],
    ['Mqtt.Port', '8883', 8883],
    ['VoiceService.RequireDeviceToken', false, false],
    ['VoiceService.AudioChannels', '2', 2],
  ];
  for (const [key, value, expected] of flagTable) {
    it(`flag --${key} ${JSON.stringify(value)} gives ${JSON.stringify(expected)}`, () => {
      const loaded = loadConfig({ flags: { [key]: value } });
      const got = key.split('.').reduce<unknown>((o, s) => (o as Record<string, unknown>)[s], loaded.config);
      assert.deepEqual(got, expected);
    });
  }
});

describe('result', () => {
  it('is deep-frozen', () => {
    const loaded = loadConfig({ env: { ApiKeys__0: 'k' } });
    assert.ok(Object.isFrozen(loaded));
    assert.ok(Object.isFrozen(loaded.config.Logging.LogLevel));
    assert.throws(() => {
      (loaded.config.Server as { Port: number }).Port = 1;
    }, TypeError);
    assert.throws(() => (loaded.config.ApiKeys as string[]).push('x'), TypeError);
  });

  it('has a source for every key of the schema and time spans in ms', () => {
    const loaded = loadConfig({});
    for (const { key } of leafKeys()) assert.equal(loaded.sources.get(key), 'default', key);
    assert.equal(loaded.config.Storage.FlushInterval, 5_000);
    assert.equal(loaded.config.Hub.KeepAliveInterval, 15_000);
    assert.equal(loaded.config.VoiceService.SessionIdleTimeout, 300_000);
  });
});

describe('environment variables that name no key', () => {
  it('of one of our sections are listed as ignored, with the key meant; the rest of the environment is not looked at', () => {
    const loaded = loadConfig({
      env: { Server__Prot: '80', SERVER__PORT: '5002', Mqtt__Pasword: 'x', Kestrel__Endpoints__Http__Url: 'http://*:80', PATH: '/bin', Logging__Console__FormatterName: 'json' },
    });
    assert.equal(loaded.config.Server.Port, 5002);
    assert.deepEqual(loaded.ignored, [
      'environment variable Logging__Console__FormatterName names no configuration key and is ignored',
      'environment variable Mqtt__Pasword names no configuration key and is ignored (did you mean Mqtt__Password?)',
      'environment variable Server__Prot names no configuration key and is ignored (did you mean Server__Port?)',
    ]);
  });

  it('a section named alone (Storage=/mnt/usb) is listed as ignored, saying to give its keys', () => {
    const loaded = loadConfig({ env: { Storage: '/mnt/usb', logging: 'Debug', Kestrel: 'x' } });
    assert.equal(loaded.config.Storage.DataDir, './data');
    assert.deepEqual(loaded.ignored, [
      'environment variable Storage names a section, not a key, and is ignored: give its keys (Storage__<Key>)',
      'environment variable logging names a section, not a key, and is ignored: give its keys (Logging__<Key>)',
    ]);
  });

  it('a key spelled with single underscores (SERVER_PORT) is listed as not read, with the spelling that is', () => {
    const loaded = loadConfig({ env: { SERVER_PORT: '6000', VOICESERVICE_SERVERURL: 'ws://x', HOME_DIR: '/root', MQTT_PORT: '1884' } });
    assert.equal(loaded.config.Server.Port, 5000);
    assert.deepEqual(loaded.ignored, [
      'environment variable MQTT_PORT is not read: keys take a double underscore (Mqtt__Port)',
      'environment variable SERVER_PORT is not read: keys take a double underscore (Server__Port)',
      'environment variable VOICESERVICE_SERVERURL is not read: keys take a double underscore (VoiceService__ServerUrl)',
    ]);
  });
});

describe('environment variables with the key delimiter of .NET itself', () => {
  it('Section:Key is read as Section__Key is, arrays by index too; both at once are refused as two values', () => {
    const loaded = loadConfig({ env: { 'Server:Port': '6001', 'ApiKeys:0': 'k0', ApiKeys__1: 'k1', 'Hub:ClientTimeout': '00:01:00' } });
    assert.equal(loaded.config.Server.Port, 6001);
    assert.deepEqual(loaded.config.ApiKeys, ['k0', 'k1']);
    assert.equal(loaded.config.Hub.ClientTimeout, 60_000);
    assert.equal(loaded.sources.get('Server.Port'), 'env');
    assert.deepEqual(problemsOf({ env: { 'Server:Port': '6001', Server__Port: '6002' } }), [
      'Server.Port: set by both env Server:Port and env Server__Port; keep one',
    ]);
  });
});
