// Every kind of bad value stops loading with a ConfigError whose line names the key, the source and
// what was expected; all problems are reported at once.
import assert from 'node:assert/strict';
import { chmodSync, writeFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { ConfigError, loadConfig, type LoadOptions } from '../../src/config/load.js';
import { configFile, problemsOf } from './helpers.js';

type Source = 'file' | 'env' | 'flag';

interface Row {
  key: string;
  value: unknown;
  expected: string;
  /** Sources to try; all three when not given (env and flags carry text). */
  sources?: Source[];
}

const INTEGER_PORT = 'must be an integer from 0 to 65535';
const TIME_SPAN = /must be a time span hh:mm:ss or d\.hh:mm:ss/;

const ROWS: Row[] = [
  { key: 'Server.Port', value: 70000, expected: INTEGER_PORT },
  { key: 'Server.Port', value: -1, expected: INTEGER_PORT },
  { key: 'Server.Port', value: 'abc', expected: INTEGER_PORT },
  { key: 'Server.Port', value: 5000.5, expected: INTEGER_PORT },
  { key: 'Server.Port', value: Number.NaN, expected: INTEGER_PORT, sources: ['flag'] },
  { key: 'Server.Port', value: null, expected: INTEGER_PORT, sources: ['file'] },
  { key: 'Mqtt.Port', value: 0, expected: 'must be an integer from 1 to 65535' },
  { key: 'Server.MaxBodyBytes', value: 0, expected: 'must be an integer from 1 to 104857600' },
  { key: 'Hub.MaximumReceiveMessageSize', value: -5, expected: 'must be an integer from 1 to 104857600' },
  { key: 'DeviceManagement.MaxDevices', value: 100001, expected: 'must be an integer from 0 to 100000' },
  { key: 'VoiceService.AudioSampleRate', value: 44100, expected: 'must be one of 8000, 12000, 16000, 24000, 48000' },
  { key: 'VoiceService.AudioChannels', value: 3, expected: 'must be one of 1, 2' },
  { key: 'VoiceService.EnableVoice', value: 'yes', expected: 'must be true or false' },
  { key: 'VoiceService.EnableVoice', value: 1, expected: 'must be true or false', sources: ['file'] },
  { key: 'VoiceService.ServerUrl', value: 'http://voice.example/ws', expected: 'must be a ws:// or wss:// URL without a fragment' },
  { key: 'VoiceService.ServerUrl', value: 'voice.example:5050', expected: 'must be a ws:// or wss:// URL without a fragment' },
  { key: 'VoiceService.ServerUrl', value: 'ws://', expected: 'must be a ws:// or wss:// URL without a fragment' },
  { key: 'VoiceService.ServerUrl', value: 'ws://voice.example/ws#main', expected: 'must be a ws:// or wss:// URL without a fragment' },
  { key: 'VoiceService.ServerUrl', value: 'wss://voice.example/#', expected: 'must be a ws:// or wss:// URL without a fragment' },
  { key: 'DeviceManagement.TokenExpiration', value: '05:00', expected: 'from 00:00:01 to 3650.00:00:00' },
  { key: 'DeviceManagement.TokenExpiration', value: '1.24:00:00', expected: 'from 00:00:01 to 3650.00:00:00' },
  { key: 'DeviceManagement.TokenExpiration', value: '00:00:00', expected: 'from 00:00:01 to 3650.00:00:00' },
  { key: 'DeviceManagement.TokenExpiration', value: '86400', expected: 'from 00:00:01 to 3650.00:00:00' },
  { key: 'VoiceService.ConnectTimeout', value: '-00:00:05', expected: 'to 24.20:31:23.6470000' },
  { key: 'Hub.KeepAliveInterval', value: '30.00:00:00', expected: 'to 24.20:31:23.6470000' },
  { key: 'Storage.FlushInterval', value: 5, expected: 'to 24.20:31:23.6470000', sources: ['file'] },
  { key: 'Logging.LogLevel.Default', value: 'verbose', expected: 'must be one of Trace, Debug, Information, Warning, Error, Critical, None' },
  { key: 'Logging.LogLevel.Hub', value: 'loud', expected: 'must be one of Trace, Debug, Information' },
  // An entry no Host header could match refused every request naming the host meant, without a word.
  ...['', ' ; ', 'http://pi.local', 'pi.local/', 'pi%2elocal', 'pi.*', 'pi.local;https://hub.lan', '*.[::1]', 'user@pi.local'].map((value) => ({
    key: 'AllowedHosts',
    value,
    expected: 'must be `*` or `;`-separated host names as a Host header names them (`pi.local`, `*.example.com`, `192.168.1.20`, `fe80::1`), without a scheme or a path',
  })),
  { key: 'Server.Host', value: '', expected: 'must be an IPv4 address, an IPv6 address without brackets, or a host name (no port: that is Server.Port)' },
  // These passed, then failed at start as a name that does not resolve, blamed on the data directory.
  { key: 'Server.Host', value: '[::1]', expected: 'must be an IPv4 address, an IPv6 address without brackets, or a host name (no port: that is Server.Port)' },
  { key: 'Server.Host', value: '127.0.0.1:5000', expected: 'must be an IPv4 address, an IPv6 address without brackets, or a host name (no port: that is Server.Port)' },
  { key: 'Server.Host', value: ' 127.0.0.1', expected: 'must be an IPv4 address, an IPv6 address without brackets, or a host name (no port: that is Server.Port)' },
  { key: 'Storage.DataDir', value: '', expected: 'must be a non-empty string' },
  { key: 'Mqtt.TopicPrefix', value: 'hub/#', expected: 'must be a non-empty MQTT topic prefix' },
  { key: 'Mqtt.TopicPrefix', value: '/hub', expected: 'must be a non-empty MQTT topic prefix' },
  { key: 'Mqtt.DiscoveryPrefix', value: 'ha/', expected: 'must be a non-empty MQTT topic prefix' },
  { key: 'Mqtt.BrokerAddress', value: { host: 'x' }, expected: 'must be a host name, an IPv4 address or an IPv6 address', sources: ['file'] },
];

/** Sets `key` to `value` in the given source; returns the options and the origin text to expect. */
function place(source: Source, key: string, value: unknown): { opts: LoadOptions; origin: string } {
  if (source === 'env') {
    const name = key.split('.').join('__');
    return { opts: { env: { [name]: String(value) } }, origin: `env ${name}` };
  }
  if (source === 'flag') return { opts: { flags: { [key]: value } }, origin: `flag --${key}` };
  const tree: Record<string, unknown> = {};
  const segments = key.startsWith('Logging.LogLevel.') ? ['Logging', 'LogLevel', key.slice(17)] : key.split('.');
  let obj = tree;
  for (const s of segments.slice(0, -1)) obj = (obj[s] = {}) as Record<string, unknown>;
  obj[segments[segments.length - 1]!] = value;
  const file = configFile(tree);
  return { opts: { file }, origin: `file ${file}` };
}

describe('one line per bad value: key, value, source, expectation', () => {
  for (const row of ROWS) {
    for (const source of row.sources ?? (['file', 'env', 'flag'] as const)) {
      it(`${row.key} = ${JSON.stringify(row.value)} from ${source}`, () => {
        const { opts, origin } = place(source, row.key, row.value);
        const problems = problemsOf(opts);
        assert.equal(problems.length, 1, problems.join('\n'));
        const line = problems[0]!;
        assert.ok(line.startsWith(`${row.key}: `), line);
        assert.ok(line.includes(` from ${origin} is invalid: `), line);
        assert.ok(line.includes(row.expected), line);
      });
    }
  }

  it('words the line exactly as the brief shows', () => {
    assert.deepEqual(problemsOf({ env: { Server__Port: '70000' } }), [
      'Server.Port: 70000 from env Server__Port is invalid: must be an integer from 0 to 65535',
    ]);
  });

  it('time span lines say which forms are accepted', () => {
    const [line] = problemsOf({ flags: { 'Hub.ClientTimeout': '30s' } });
    assert.match(line!, TIME_SPAN);
    assert.match(line!, /^Hub\.ClientTimeout: "30s" from flag --Hub\.ClientTimeout is invalid/);
  });

  it('names a flag as it was typed: the short --port, or the key in its own letter case', () => {
    assert.deepEqual(problemsOf({ flags: { 'Server.Port': 99999 }, flagNames: { 'Server.Port': 'port' } }), [
      'Server.Port: 99999 from flag --port is invalid: must be an integer from 0 to 65535',
    ]);
    assert.deepEqual(problemsOf({ flags: { 'Server.Port': 99999 }, flagNames: { 'Server.Port': 'server.port' } }), [
      'Server.Port: 99999 from flag --server.port is invalid: must be an integer from 0 to 65535',
    ]);
  });

  it('names the array item and the variable it came from', () => {
    const NEW_TEXT = 'is invalid: must be a non-empty string of printable ASCII (spaces and tabs only inside it), as an HTTP header carries it';
    const problems = problemsOf({ env: { ApiKeys__0: 'good', ApiKeys__1: '' } });
    assert.deepEqual(problems, ['ApiKeys[1]: "" from env ApiKeys__1 is invalid: must be a non-empty string of printable ASCII (spaces and tabs only inside it), as an HTTP header carries it']);
    assert.deepEqual(problemsOf({ flags: { ApiKeys: ['a', ''] } }), [
      'ApiKeys[1]: "" from flag --ApiKeys is invalid: must be a non-empty string of printable ASCII (spaces and tabs only inside it), as an HTTP header carries it',
    ]);
    // The upstream's key goes out as `Authorization: Bearer <key>`: one Node's client will not send failed
    // every session start with 502 "invalid upstream URL" and left /health Unhealthy; now refused at start.
    assert.deepEqual(problemsOf({ env: { VoiceService__ApiKey: 'k€y' } }), [
      'VoiceService.ApiKey: (secret, 3 characters) from env VoiceService__ApiKey is invalid: must be empty or printable ASCII (spaces and tabs only inside it), as an HTTP header carries it',
    ]);
    assert.equal(loadConfig({ env: { VoiceService__ApiKey: 'key with\tinner space' } }).config.VoiceService.ApiKey, 'key with\tinner space');
    const file = configFile({ ApiKeys: 5 });
    // A key no client can send as it is written: uWS drops non-ASCII bytes from a header value's end, a
    // value loses its leading and trailing spaces (RFC 9110 section 5.5), Kestrel refuses non-ASCII. Such
    // a key started the service and refused every client; it is refused at start now, and not shown.
    assert.deepEqual(problemsOf({ flags: { ApiKeys: ['clé', ' padded', 'padded ', 'nul\u0000', 'in side\tkey'] } }), [0, 1, 2, 3].map((i) =>
      `ApiKeys[${i}]: (secret, ${[...['clé', ' padded', 'padded ', 'nul\u0000'][i]!].length} characters) from flag --ApiKeys ${NEW_TEXT}`));
    assert.deepEqual(problemsOf({ file }), [`ApiKeys: (secret) from file ${file} is invalid: must be an array of non-empty strings`]);
  });

  it('collects every problem from every source in one error', () => {
    const file = configFile({ Server: { Port: 99999 }, Mqtt: { Port: 'x' } });
    const problems = problemsOf({
      file,
      env: { VoiceService__AudioChannels: '5', PATH: '/bin' },
      flags: { 'DeviceManagement.MaxDevices': -1, 'Sever.Port': 1 },
    });
    assert.equal(problems.length, 5, problems.join('\n'));
    const text = problems.join('\n');
    assert.match(text, new RegExp(`Server\\.Port: 99999 from file ${file} is invalid`));
    assert.match(text, new RegExp(`Mqtt\\.Port: "x" from file ${file} is invalid`));
    assert.match(text, /VoiceService\.AudioChannels: 5 from env VoiceService__AudioChannels is invalid/);
    assert.match(text, /DeviceManagement\.MaxDevices: -1 from flag --DeviceManagement\.MaxDevices is invalid/);
    assert.match(text, /Sever\.Port: unknown key from flag --Sever\.Port \(did you mean Server\.Port\?\)/);
  });

  it('a value overridden by a higher layer is not judged', () => {
    const loaded = loadConfig({ file: configFile({ Server: { Port: 99999 } }), env: { Server__Port: '5005' } });
    assert.equal(loaded.config.Server.Port, 5005);
  });

  it('ConfigError carries the lines in its message too', () => {
    assert.throws(
      () => loadConfig({ env: { Mqtt__Port: '0' } }),
      (e: unknown) => e instanceof ConfigError && e.message.includes('Mqtt.Port: 0 from env Mqtt__Port is invalid'),
    );
  });
});

describe('file problems', () => {
  it('unknown keys are problems, with a suggestion when one is close', () => {
    const file = configFile({ VoiceService: { ServerUri: 'ws://x:1/v', Colour: 'red' }, Extra: 1, Logging: { Console: {} } });
    const problems = problemsOf({ file });
    assert.deepEqual([...problems].sort(), [
      `Extra: unknown key from file ${file}`,
      `Logging.Console: unknown key from file ${file}`,
      `VoiceService.Colour: unknown key from file ${file}`,
      `VoiceService.ServerUri: unknown key from file ${file} (did you mean VoiceService.ServerUrl?)`,
    ]);
  });

  it('a section given as a value is a problem', () => {
    const file = configFile({ Server: 5000 });
    assert.deepEqual(problemsOf({ file }), [`Server: 5000 from file ${file} is invalid: must be an object (a section of keys)`]);
  });

  it('the document must be an object', () => {
    const file = configFile('[1, 2]');
    assert.deepEqual(problemsOf({ file }), [`${file}: must contain a JSON object, like the shipped config/appsettings.json`]);
  });

  const badJson: Array<[string, string, RegExp]> = [
    ['{\n  "Server": { "Port": 5000 }\n  "Mqtt": {}\n}', ':3:3: invalid JSON', /expected ',' or '}' but found '"'/],
    ['{\n  "Server": {\n    "Port": 50 00\n  }\n}', ':3:16: invalid JSON', /expected ',' or '}' but found '0'/],
    ['{ "Server": { "Port": 5000 }', ':1:29: invalid JSON', /the end of the file/],
    ['', ':1:1: invalid JSON', /empty/],
    ["{ 'Server': {} }", ':1:3: invalid JSON', /double quotes/],
    ['{ "a": "unterminated }', ':1:8: invalid JSON', /unterminated string/],
    ['{ "a": 1 } /* open', ':1:12: invalid JSON', /unterminated \/\* comment/],
    ['{ "a": "\\q" }', ':1:8: invalid JSON', /invalid escape/],
    ['{ "a": tru }', ':1:8: invalid JSON', /expected a value/],
    ['{\n  "Mqtt": { "Port": 1883,\n    "Port": 1884 }\n}', ':3:5: invalid JSON', /duplicate key 'Port' with another value \(keys ignore case\): give each key once$/],
    ['{ "Mqtt": { "Port": 1 }, "mqtt": { "port": 2 } }', ':1:26: invalid JSON', /duplicate key 'mqtt\.port' with another value \(keys ignore case\)/],
    ['{ "Mqtt": { "Port": 1 }, "mqtt": 5 }', ':1:26: invalid JSON', /duplicate key 'mqtt' with another value/],
  ];
  for (const [text, where, reason] of badJson) {
    it(`invalid JSON ${JSON.stringify(text)} names the file, line and column`, () => {
      const file = configFile(text);
      const problems = problemsOf({ file });
      assert.equal(problems.length, 1, problems.join('\n'));
      assert.ok(problems[0]!.startsWith(`${file}${where}: `), problems[0]);
      assert.match(problems[0]!, reason);
    });
  }

  it('invalid JSON never echoes the file text (it may hold secrets)', () => {
    const file = configFile('{ "VoiceService": { "ApiKey": "sk-very-secret-1234" "EnableVoice": true } }');
    const [line] = problemsOf({ file });
    assert.ok(!line!.includes('sk-very-secret'), line);
  });

  it('the default file is judged like a given one when it exists', () => {
    const file = configFile('{ nope }');
    assert.match(problemsOf({ defaultFiles: [file] })[0]!, /invalid JSON/);
  });

  it('a missing --config file is a problem naming it', () => {
    assert.deepEqual(problemsOf({ file: '/nonexistent/dir/voice.json' }), [
      '/nonexistent/dir/voice.json: cannot read the configuration file: it does not exist',
    ]);
  });

  // As every file the system will not let this user read: src/cli/fatal.ts words it, exit 1 (test/e2e/cli.test.ts).
  it('a file this user may not read is no problem of the configuration: the system\'s error is thrown', { skip: process.getuid?.() === 0 ? 'root reads everything' : false }, () => {
    const file = configFile({});
    chmodSync(file, 0o000);
    assert.throws(() => loadConfig({ file }), (e: NodeJS.ErrnoException) => e.code === 'EACCES' && e.syscall === 'open' && e.path === file);
  });

  it('a directory given as the file is a problem naming it', () => {
    const dir = configFile({}).replace(/\/[^/]+$/, '');
    assert.deepEqual(problemsOf({ file: dir }), [`${dir}: cannot read the configuration file: it is a directory`]);
  });

  // Read synchronously and whole, /dev/zero grew the process by 0.5-1 GB a second until it died.
  it('a device, or a file far larger than any configuration, is a problem naming it, and is not read', () => {
    assert.deepEqual(problemsOf({ file: '/dev/zero' }), ['/dev/zero: cannot read the configuration file: it is not a regular file']);
    const huge = configFile({});
    writeFileSync(huge, Buffer.alloc(17 * 1024 * 1024, 0x20));
    assert.deepEqual(problemsOf({ file: huge }), [`${huge}: cannot read the configuration file: it has more than 16 MiB, far more than a configuration file`]);
  });
});

describe('whole numbers written with a fraction or an exponent in the file', () => {
  it('are the text they are, as .NET keeps them: refused for an integer key, as from the environment', () => {
    const file = configFile('{ "Server": { "Port": 5000.0 }, "Mqtt": { "Port": 1.883e3 }, "VoiceService": { "AudioSampleRate": 16000E0 } }');
    assert.deepEqual(problemsOf({ file }), [
      `VoiceService.AudioSampleRate: "16000E0" from file ${file} is invalid: must be one of 8000, 12000, 16000, 24000, 48000`,
      `Mqtt.Port: "1.883e3" from file ${file} is invalid: must be an integer from 1 to 65535`,
      `Server.Port: "5000.0" from file ${file} is invalid: must be an integer from 0 to 65535`,
    ]);
  });

  it('are their text for a string key, and a whole number in digits stays a number', () => {
    const file = configFile('{ "Mqtt": { "Username": 1.0, "Port": 1884 }, "VoiceService": { "ApiKey": 2e3 } }');
    const { config } = loadConfig({ file });
    assert.equal(config.Mqtt.Username, '1.0');
    assert.equal(config.VoiceService.ApiKey, '2e3');
    assert.equal(config.Mqtt.Port, 1884);
  });
});
