// Secrets never shown: maskedView and `config check` output replace them with "***" whatever source
// set them; an unset secret stays "" so "not set" is visible.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isSecret } from '../../src/cli/command.js';
import { COMMANDS } from '../../src/cli/commands.js';
import { loadConfig } from '../../src/config/load.js';
import { isSecretFlag, maskedView, maskSecretArgs, SECRET_KEYS } from '../../src/config/mask.js';
import { formatConfigReport } from '../../src/config/report.js';
import { leafKeys } from '../../src/config/schema-keys.js';
import { publicServerUrl } from '../../src/upstream/public-url.js';
import { configFile, problemsOf } from './helpers.js';

const SECRETS: Record<string, string> = {
  'VoiceService.ApiKey': 'upstream-key-Zq81',
  'Mqtt.Password': 'mqtt-pass-Wd02',
  'Auth.SigningKey': 'signing-key-Xy93-0123456789abcdef0123',
};
const API_KEYS = ['api-key-one-Kk44', 'api-key-two-Jj55'];
const ALL_SECRET_VALUES = [...Object.values(SECRETS), ...API_KEYS];

/** A file tree from dot keys ("Section.Key") and top-level keys. */
function treeOf(values: Record<string, unknown>): Record<string, unknown> {
  const tree: Record<string, Record<string, unknown>> = {};
  for (const [key, value] of Object.entries(values)) {
    const [section, name] = key.split('.');
    if (name === undefined) (tree as Record<string, unknown>)[section!] = value;
    else (tree[section!] ??= {})[name] = value;
  }
  return tree;
}

const SOURCES = {
  file: () => loadConfig({ file: configFile(treeOf({ ...SECRETS, ApiKeys: API_KEYS })) }),
  env: () =>
    loadConfig({
      env: {
        ...Object.fromEntries(Object.entries(SECRETS).map(([k, v]) => [k.replace('.', '__'), v])),
        ApiKeys__0: API_KEYS[0],
        ApiKeys__1: API_KEYS[1],
      },
    }),
  flag: () => loadConfig({ flags: { ...SECRETS, ApiKeys: API_KEYS } }),
};

describe('secrets', () => {
  it('SECRET_KEYS are exactly the four secret keys', () => {
    assert.deepEqual([...SECRET_KEYS].sort(), ['ApiKeys', 'Auth.SigningKey', 'Mqtt.Password', 'VoiceService.ApiKey']);
  });

  for (const [source, load] of Object.entries(SOURCES)) {
    it(`set from ${source}: used in config, never in the masked view or the report`, () => {
      const loaded = load();
      assert.equal(loaded.config.VoiceService.ApiKey, SECRETS['VoiceService.ApiKey']);
      assert.equal(loaded.config.Mqtt.Password, SECRETS['Mqtt.Password']);
      assert.equal(loaded.config.Auth.SigningKey, SECRETS['Auth.SigningKey']);
      assert.deepEqual(loaded.config.ApiKeys, API_KEYS);

      const view = maskedView(loaded, publicServerUrl);
      const report = formatConfigReport(loaded, publicServerUrl).join('\n');
      for (const out of [JSON.stringify(view), report]) {
        for (const secret of ALL_SECRET_VALUES) assert.ok(!out.includes(secret), `${secret} shown in ${out}`);
      }
      assert.equal((view.VoiceService as Record<string, unknown>).ApiKey, '***');
      assert.deepEqual(view.ApiKeys, ['***', '***']);
      for (const key of SECRET_KEYS) {
        assert.match(report, new RegExp(`^${key.replace('.', '\\.')} = .*\\*\\*\\*.*  \\(${source}\\)$`, 'm'));
      }
    });
  }

  it('an unset secret stays "" and an empty list stays []', () => {
    const loaded = loadConfig({});
    const view = maskedView(loaded, publicServerUrl);
    assert.equal((view.Mqtt as Record<string, unknown>).Password, '');
    assert.equal((view.Auth as Record<string, unknown>).SigningKey, '');
    assert.deepEqual(view.ApiKeys, []);
    const report = formatConfigReport(loaded, publicServerUrl);
    assert.ok(report.includes('VoiceService.ApiKey = ""  (default)'), report.join('\n'));
    assert.ok(report.includes('ApiKeys = []  (default)'), report.join('\n'));
  });

  it('an invalid secret is described, never shown, in the problem line', () => {
    const problems = problemsOf({ env: { Auth__SigningKey: 'too-short-Qq77' } });
    assert.deepEqual(problems, [
      'Auth.SigningKey: (secret, 14 characters) from env Auth__SigningKey is invalid: must be empty (a key is generated) or at least 32 characters',
    ]);
  });

  it('a masked view of unchanged secrets does not change the loaded config', () => {
    const loaded = SOURCES.flag();
    maskedView(loaded, publicServerUrl);
    assert.equal(loaded.config.Mqtt.Password, SECRETS['Mqtt.Password']);
  });
});

describe('maskedView', () => {
  it('has the shape of appsettings.json with time spans as .NET text, in the form they were configured in', () => {
    const loaded = loadConfig({ env: { Hub__ClientTimeout: '00:00:30.5', Logging__LogLevel__Hub: 'debug', Storage__FlushInterval: '0.00:00:07' } });
    const view = maskedView(loaded, publicServerUrl) as { Hub: Record<string, unknown>; DeviceManagement: Record<string, unknown>; Logging: { LogLevel: Record<string, unknown> } };
    assert.equal(view.Hub.ClientTimeout, '00:00:30.5');
    assert.equal(view.DeviceManagement.TokenExpiration, '24:00:00', 'the default, as the schema writes it');
    assert.equal((view as unknown as { Storage: Record<string, unknown> }).Storage.FlushInterval, '0.00:00:07');
    assert.equal(view.Logging.LogLevel.Hub, 'Debug');
    // The view loads back to the same configuration.
    const again = loadConfig({ file: configFile(view) });
    assert.deepEqual(again.config, loaded.config);
  });
});

describe('formatConfigReport', () => {
  it('names the file, then one `Key = value  (source)` line per key', () => {
    const file = configFile({ Server: { Port: 5001 } });
    const loaded = loadConfig({ file, env: { Mqtt__Port: '8883' }, flags: { 'Server.Host': '127.0.0.1' } });
    const [header, ...lines] = formatConfigReport(loaded, publicServerUrl);
    assert.equal(header, `# configuration file: ${file}`);
    for (const line of lines) assert.match(line, /^[A-Za-z][\w.]* = \S.*  \((default|file|env|flag)\)$/);
    assert.deepEqual(lines.map((l) => l.split(' = ')[0]), leafKeys().map((k) => k.key));
    assert.ok(lines.includes('Server.Port = 5001  (file)'));
    assert.ok(lines.includes('Mqtt.Port = 8883  (env)'));
    assert.ok(lines.includes('Server.Host = "127.0.0.1"  (flag)'));
    assert.ok(lines.includes('DeviceManagement.TokenExpiration = "24:00:00"  (default)'));
  });

  it('says when no file was read', () => {
    assert.equal(formatConfigReport(loadConfig({}), publicServerUrl)[0], '# configuration file: none (built-in defaults)');
  });
});

describe('secrets on a command line', () => {
  it('every secret key is a secret flag in each spelling the command line resolves, and no other key is', () => {
    for (const key of SECRET_KEYS) {
      // An array's items are its flags too (`--ApiKeys.0 KEY`).
      const flag = leafKeys().find((k) => k.key === key)!.node.type === 'array' ? `${key}.0` : key;
      for (const spelling of [flag, flag.toLowerCase(), flag.replace(/\./g, ':'), flag.replace(/\./g, '__')]) {
        assert.ok(isSecretFlag(spelling), spelling);
      }
    }
    for (const { key } of leafKeys().filter((k) => !SECRET_KEYS.includes(k.key))) assert.equal(isSecretFlag(key), false, key);
    for (const short of ['port', 'host', 'data-dir', 'key', 'cert', 'constructor', 'toString']) assert.equal(isSecretFlag(short), false, short);
  });

  it('masks the value of each secret flag, separate or after =, and nothing else', () => {
    const argv = [
      'node', '/usr/lib/voice-hub.cjs', '--port', '5000', '--Mqtt.Password', '-xSECRET1', '--ApiKeys.0=SECRET2',
      '--voiceservice:apikey', 'SECRET3', '--Auth__SigningKey=', '--ApiKeys', '--SECRET4', '--data-dir', '/d', '--Mqtt.Password',
    ];
    assert.deepEqual(maskSecretArgs(argv, publicServerUrl, isSecret), [
      'node', '/usr/lib/voice-hub.cjs', '--port', '5000', '--Mqtt.Password', '***', '--ApiKeys.0=***',
      '--voiceservice:apikey', '***', '--Auth__SigningKey=***', '--ApiKeys', '***', '--data-dir', '/d', '--Mqtt.Password',
    ]);
  });

  // A port held by `simulate` (its drop relay) quoted its --admin-token and --api-key in clear: the
  // masking knew configuration keys only, not the commands' own secret options.
  it('masks every secret option of every command, separate or after =, and none of their other options', () => {
    const secretOptions = COMMANDS.flatMap((c) => Object.entries(c.options).filter(([, o]) => o.secret === true).map(([name]) => name));
    assert.ok(secretOptions.includes('admin-token') && secretOptions.includes('api-key'), secretOptions.join());
    for (const name of secretOptions) {
      const argv = ['node', 'voice-hub.cjs', 'simulate', `--${name}`, '-S3cret-1', `--${name}=S3cret-2`, '--seconds', '20'];
      assert.deepEqual(maskSecretArgs(argv, publicServerUrl, isSecret), ['node', 'voice-hub.cjs', 'simulate', `--${name}`, '***', `--${name}=***`, '--seconds', '20'], name);
    }
    const shown = COMMANDS.flatMap((c) => Object.entries(c.options).filter(([, o]) => o.secret !== true).map(([name]) => name));
    for (const name of shown.filter((n) => !isSecretFlag(n))) {
      assert.deepEqual(maskSecretArgs([`--${name}`, 'value'], publicServerUrl, isSecret).at(-1), 'value', name);
    }
  });
});

// VoiceService.ServerUrl may carry a key in its user info or query: wherever a configuration value is
// echoed it is shown in the one public form the upstream code defines, as /health shows it.
describe('a URL that may carry credentials', () => {
  const URL_WITH_KEYS = 'ws://USER:PASSWORD@127.0.0.1:5050/voice?token=QUERYKEY';
  const KEYS = ['USER', 'PASSWORD', 'QUERYKEY'];

  it('config check shows its public form, and says so', () => {
    const loaded = loadConfig({ file: configFile({ VoiceService: { ServerUrl: URL_WITH_KEYS } }) });
    const report = formatConfigReport(loaded, publicServerUrl);
    for (const key of KEYS) assert.ok(!report.join('\n').includes(key), report.join('\n'));
    assert.ok(report.includes('VoiceService.ServerUrl = "ws://127.0.0.1:5050/voice"  (file)'), report.join('\n'));
    assert.ok(report.includes('# VoiceService.ServerUrl is shown in its public form: the parts that may hold credentials are left out'));
    // A URL without such parts is shown as it is, and nothing is said.
    assert.ok(!formatConfigReport(loadConfig({}), publicServerUrl).some((line) => line.includes('public form')));
  });

  it('a problem line shows its public form when the caller gives it, else nothing of it', () => {
    const flags = { 'VoiceService.ServerUrl': `${URL_WITH_KEYS}#frag` };
    const flagNames = { 'VoiceService.ServerUrl': 'voice-server-url' };
    const expected = 'from flag --voice-server-url is invalid: must be a ws:// or wss:// URL without a fragment';
    assert.deepEqual(problemsOf({ flags, flagNames, publicForm: publicServerUrl }), [
      `VoiceService.ServerUrl: "ws://127.0.0.1:5050/voice" (shown in its public form) ${expected}`,
    ]);
    assert.deepEqual(problemsOf({ flags, flagNames }), [`VoiceService.ServerUrl: (not shown: it may hold credentials) ${expected}`]);
    const file = configFile({ VoiceService: { ServerUrl: [URL_WITH_KEYS] } });
    assert.deepEqual(problemsOf({ file, publicForm: publicServerUrl }), [
      `VoiceService.ServerUrl: (not shown: it may hold credentials) from file ${file} is invalid: must be a ws:// or wss:// URL without a fragment`,
    ]);
    assert.deepEqual(problemsOf({ flags: { 'VoiceService.ServerUrl': 'http://voice.example/ws' }, publicForm: publicServerUrl }), [
      'VoiceService.ServerUrl: "http://voice.example/ws" from flag --VoiceService.ServerUrl is invalid: must be a ws:// or wss:// URL without a fragment',
    ]);
  });

  it('a quoted command line shows its public form in every spelling of its flag', () => {
    const argv = [
      'node', 'voice-hub.cjs', '--voice-server-url', URL_WITH_KEYS, `--VoiceService.ServerUrl=${URL_WITH_KEYS}`, '--voiceservice:serverurl', URL_WITH_KEYS,
      `--VOICESERVICE__SERVERURL=${URL_WITH_KEYS}`, '--voice-server-url', 'not a URL USER', '--port', '5000',
    ];
    const publicUrl = 'ws://127.0.0.1:5050/voice';
    assert.deepEqual(maskSecretArgs(argv, publicServerUrl, isSecret), [
      'node', 'voice-hub.cjs', '--voice-server-url', publicUrl, `--VoiceService.ServerUrl=${publicUrl}`, '--voiceservice:serverurl', publicUrl,
      `--VOICESERVICE__SERVERURL=${publicUrl}`, '--voice-server-url', '(invalid URL)', '--port', '5000',
    ]);
  });
});
