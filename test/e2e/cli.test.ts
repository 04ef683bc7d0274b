// The command line of the built bundle (dist/voice-hub.cjs, run as a process): anything a command does
// not take is bad usage (exit 64, one line per problem with "did you mean", a pointer to --help) and
// starts nothing; each command's --help shows only its flags; configuration keys stay accepted as flags;
// health --url takes a base or a full address; the bundle runs by itself (#! line and run bit).
import assert from 'node:assert/strict';
import { chmodSync, existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { COMMANDS, exitsText, SERVE } from '../../src/cli/commands.js';
import { healthUrlFrom } from '../../src/cli/health.js';
import { EXIT_IN_USE } from '../../src/cli/load.js';
import { freePort } from '../support/ports.js';
import { BUNDLE, runBundle, runProcess, spawnService, type SpawnedService } from '../support/service.js';
import { tmpDir } from '../support/tmp.js';

before(() => assert.ok(existsSync(BUNDLE), `${BUNDLE} is missing: run node build.mjs first`));

/**
 * Were a case to fall through to serving (as `confg check` did), it must not take port 5000 or write
 * ./data: the environment, below every flag, sends it to a free loopback port and a temporary folder.
 */
async function quietEnv(): Promise<{ env: Record<string, string>; port: number; dataDir: string }> {
  const port = await freePort();
  const dataDir = path.join(tmpDir(), 'data');
  return { env: { Server__Host: '127.0.0.1', Server__Port: String(port), Storage__DataDir: dataDir }, port, dataDir };
}

/** True when something accepts connections on the loopback port. */
function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/** Runs a command that must be refused as bad usage: exit 64, exactly `problems` and the help pointer, nothing started. */
async function assertUsage(args: string[], who: string, problems: string[]): Promise<void> {
  const { env, port, dataDir } = await quietEnv();
  const res = await runBundle(args, env, 10_000);
  assert.equal(res.code, 64, `${args.join(' ')}: ${res.stdout}${res.stderr}`);
  assert.equal(res.stderr, [...problems.map((p) => `${who}: ${p}`), `Run '${who} --help' for usage.`, ''].join('\n'));
  assert.equal(res.stdout, '');
  assert.equal(await listening(port), false, `${args.join(' ')} started a server`);
  assert.equal(existsSync(dataDir), false, `${args.join(' ')} created the data directory`);
}

describe('what the user typed is quoted back bounded: names cut to 64 characters, 20 problems then a count', () => {
  it('a flag of 10,000 characters, an unknown command of 5,000, 30 unknown flags', async () => {
    await assertUsage([`--${'x'.repeat(10_000)}`, '1'], 'voice-hub', [`unknown flag --${'x'.repeat(61)}...`]);
    await assertUsage(['y'.repeat(5000)], 'voice-hub', [`unknown command '${'y'.repeat(61)}...'`]);
    const many = Array.from({ length: 30 }, (_, i) => [`--zz${i}`, '1']).flat();
    await assertUsage(many, 'voice-hub', [...Array.from({ length: 20 }, (_, i) => `unknown flag --zz${i}`), '... and 10 more']);
  });
});

describe('unknown flags, per command: exit 64 with "did you mean"', () => {
  const cases: [string[], string, string][] = [
    [['--prot', '5001'], 'voice-hub', 'unknown flag --prot (did you mean --port?)'],
    [['--loglevel', 'Debug'], 'voice-hub', 'unknown flag --loglevel (did you mean --log-level?)'],
    [['serve', '--data-dri', 'x'], 'voice-hub', 'unknown flag --data-dri (did you mean --data-dir?)'],
    [['--Server.Prot', '5001'], 'voice-hub', 'unknown flag --Server.Prot (did you mean --Server.Port?)'],
    [['--Server:Port', '5001'], 'voice-hub', 'unknown flag --Server:Port (did you mean --Server.Port?)'],
    [['token', 'admin', '--tll', '1h'], 'voice-hub token', 'unknown flag --tll (did you mean --ttl?)'],
    [['token', 'admin', '--port', '5000'], 'voice-hub token', 'unknown flag --port: it is a flag of serve, config or echo-server, not of token'],
    [['config', 'check', '--confg', 'x.json'], 'voice-hub config', 'unknown flag --confg (did you mean --config?)'],
    [['health', '--ulr', 'http://127.0.0.1:1'], 'voice-hub health', 'unknown flag --ulr (did you mean --url?)'],
    [['health', '--cert', 'x.pem'], 'voice-hub health', 'unknown flag --cert: it is a flag of serve or config, not of health'],
    [['echo-server', '--prot', '0'], 'voice-hub echo-server', 'unknown flag --prot (did you mean --port?)'],
    [['simulate', '--device', '2'], 'voice-hub simulate', 'unknown flag --device (did you mean --devices?)'],
    [['simulate', '--data-dir', 'x'], 'voice-hub simulate', 'unknown flag --data-dir: it is a flag of serve, token or config, not of simulate'],
    [['-x'], 'voice-hub', 'unknown flag -x'],
    [['--no-port'], 'voice-hub', 'unknown flag --no-port'],
    [['health', '--version'], 'voice-hub health', 'unknown flag --version'],
    // Names of Object.prototype's members made yargs throw a TypeError (exit 1 with a stack trace).
    [['--constructor', '1'], 'voice-hub', 'unknown flag --constructor'],
    [['health', '--toString=x'], 'voice-hub health', 'unknown flag --toString'],
    [['--hasOwnProperty'], 'voice-hub', 'unknown flag --hasOwnProperty'],
  ];
  for (const [args, who, problem] of cases) {
    it(args.join(' '), () => assertUsage(args, who, [problem]));
  }

  it('every problem is named, one line each', () =>
    assertUsage(['--prot', '5001', '--loglevel', 'Debug'], 'voice-hub', [
      'unknown flag --prot (did you mean --port?)',
      'unknown flag --loglevel (did you mean --log-level?)',
    ]));
});

// A secret flag followed by a word that starts with '-' made yargs read the secret as flags of its own:
// `--Mqtt.Password -xSECRETPW` printed `unknown flag -x`, `-S`, `-E`... into the terminal or the journal.
describe('a secret flag followed by a dash word: exit 64, the word never quoted', () => {
  const how = (flag: string): string => `${flag} needs a value; a value that starts with '-' must be given as ${flag}=VALUE`;
  const cases: [string[], string, string][] = [
    [['config', 'check', '--Mqtt.Password', '-xSECRETPW'], 'voice-hub config', how('--Mqtt.Password')],
    [['config', 'check', '--Mqtt.Password', '--SECRETPW'], 'voice-hub config', how('--Mqtt.Password')],
    // Any spelling that names a secret key; the advice in the one the command line takes.
    [['--mqtt:password', '-SECRETPW'], 'voice-hub', how('--Mqtt.Password')],
    [['--VoiceService__ApiKey', '-SECRETPW'], 'voice-hub', how('--VoiceService.ApiKey')],
    [['--ApiKeys.0', '-SECRETPW'], 'voice-hub', how('--ApiKeys.0')],
    [['--apikeys', '-SECRETPW'], 'voice-hub', how('--apikeys')],
    [['--Auth.SigningKey', '--constructor'], 'voice-hub', how('--Auth.SigningKey')],
    // A command's own credentials too.
    [['simulate', '--admin-token', '-SECRETPW'], 'voice-hub simulate', how('--admin-token')],
    [['simulate', '--api-key', '--SECRETPW'], 'voice-hub simulate', how('--api-key')],
    // A word after the value, or after an empty `--Key=`, would be quoted as an unexpected argument.
    [['--ApiKeys', 'k1SECRET', 'k2SECRET'], 'voice-hub', '--ApiKeys takes one word: the word after its value is no command or argument (an array is given item by item, --ApiKeys.0 VALUE --ApiKeys.1 VALUE)'],
    [['config', 'check', '--Mqtt.Password=', 'SECRETPW'], 'voice-hub config', "--Mqtt.Password= has no value; write the value right after the '=' (--Mqtt.Password=VALUE)"],
    // A value with spaces left unquoted: the words after the first would be quoted as a command or arguments.
    [['--Mqtt.Password=correctSECRET', 'horseSECRET', 'batterySECRET'], 'voice-hub', '--Mqtt.Password=VALUE is followed by a word that is no command or argument (not shown: it may be part of the value); quote a value that holds spaces'],
    [['config', 'check', '--api-key=aSECRET', 'bSECRET'], 'voice-hub config', '--api-key=VALUE is followed by a word that is no command or argument (not shown: it may be part of the value); quote a value that holds spaces'],
  ];
  for (const [args, who, problem] of cases) {
    it(args.join(' '), () => assertUsage(args, who, [problem]));
  }

  // Before parsing, these lines were named as the top level's (`voice-hub: ...`, `Run 'voice-hub --help'`).
  it('the line names the command it came from, wherever the command word stands', async () => {
    await assertUsage(['--Mqtt.Password', 'pwSECRET', 'config', 'check', '--constructor', '1'], 'voice-hub config', ['unknown flag --constructor']);
    for (const flag of ['--__proto__', '--toString']) await assertUsage(['config', 'check', flag, '1'], 'voice-hub config', [`unknown flag ${flag}`]);
    await assertUsage(['health', '--hasOwnProperty'], 'voice-hub health', ['unknown flag --hasOwnProperty']);
    await assertUsage(['token', 'admin', '--Mqtt.Password', '-SECRETPW'], 'voice-hub token', [how('--Mqtt.Password')]);
  });

  it('a command word after a secret value is still the command', async () => {
    const res = await runBundle(['--Mqtt.Password', 'pwSECRET', 'config', 'check', '--data-dir', tmpDir()]);
    assert.equal(res.code, 0, res.stderr);
    assert.match(res.stdout, /^Mqtt\.Password = "\*\*\*"  \(flag\)$/m);
  });

  it('given as --Key=VALUE, such a value is taken (and shown masked)', async () => {
    const res = await runBundle(['config', 'check', '--data-dir', tmpDir(), '--Mqtt.Password=-xSECRETPW']);
    assert.equal(res.code, 0, res.stderr);
    assert.match(res.stdout, /^Mqtt\.Password = "\*\*\*"  \(flag\)$/m);
    assert.ok(!(res.stdout + res.stderr).includes('SECRETPW'));
  });
});

describe('unknown commands and extra arguments: exit 64, nothing started', () => {
  const cases: [string[], string, string][] = [
    [['confg', 'check'], 'voice-hub', "unknown command 'confg' (did you mean config?)"],
    [['helth'], 'voice-hub', "unknown command 'helth' (did you mean health?)"],
    [['start'], 'voice-hub', "unknown command 'start'"],
    [['serve', 'now'], 'voice-hub', "unexpected argument 'now'"],
    [['token'], 'voice-hub token', 'missing <kind>: admin'],
    [['token', 'admn'], 'voice-hub token', "unknown kind 'admn' (did you mean admin?)"],
    [['token', 'admin', 'extra'], 'voice-hub token', "unexpected argument 'extra'"],
    [['config'], 'voice-hub config', 'missing <action>: check'],
    [['config', 'chek'], 'voice-hub config', "unknown action 'chek' (did you mean check?)"],
    [['config', 'show'], 'voice-hub config', "unknown action 'show': check"],
    [['health', 'now'], 'voice-hub health', "unexpected argument 'now'"],
    [['help', 'helth'], 'voice-hub', "unknown command 'helth' (did you mean health?)"],
    [['help', 'start'], 'voice-hub', "unknown command 'start': serve, token, config, health, echo-server or simulate"],
    [['help', 'health', 'now'], 'voice-hub health', "unexpected argument 'now'"],
  ];
  for (const [args, who, problem] of cases) {
    it(args.join(' '), () => assertUsage(args, who, [problem]));
  }
});

// A value that starts with '-' was read three ways by its shape: `-bob` as the flags -b -o -b (and the key
// as given no value), `-00:00:01` as -0 and a key without value, `-1` as a value.
describe('a configuration flag followed by a word that starts with \'-\': one line saying to write --key=VALUE, exit 64', () => {
  const how = (flag: string): string => `${flag} needs a value; a value that starts with '-' must be given as ${flag}=VALUE`;
  const cases: [string[], string, string][] = [
    [['config', 'check', '--Mqtt.Username', '-bob'], 'voice-hub config', how('--Mqtt.Username')],
    [['config', 'check', '--Hub.KeepAliveInterval', '-00:00:01'], 'voice-hub config', how('--Hub.KeepAliveInterval')],
    [['config', 'check', '--port', '-1'], 'voice-hub config', how('--port')],
    [['--data-dir', '-d'], 'voice-hub', how('--data-dir')],
    [['--config', '-x.json'], 'voice-hub', how('--config')],
    [['token', 'admin', '--Storage.FlushInterval', '-00:00:05'], 'voice-hub token', how('--Storage.FlushInterval')],
    [['health', '--Server.Port', '-5'], 'voice-hub health', how('--Server.Port')],
  ];
  for (const [args, who, problem] of cases) {
    it(args.join(' '), () => assertUsage(args, who, [problem]));
  }

  it('given as --key=VALUE, such a value is taken as it is: the configuration judges it', async () => {
    const res = await runBundle(['config', 'check', '--data-dir', tmpDir(), '--Mqtt.Username=-bob', '--port=-1']);
    assert.equal(res.code, 78, res.stderr);
    assert.deepEqual(res.stderr.trim().split('\n'), ['invalid configuration:', '  Server.Port: -1 from flag --port is invalid: must be an integer from 0 to 65535']);
    const ok = await runBundle(['config', 'check', '--data-dir', tmpDir(), '--Mqtt.Username=-bob']);
    assert.equal(ok.code, 0, ok.stderr);
    assert.match(ok.stdout, /^Mqtt\.Username = "-bob" {2}\(flag\)$/m);
  });
});

// A boolean key given bare was `true`: `--Mqtt.HomeAssistantDiscovery --port 5` turned discovery on, exit 0,
// where any other key without its value is bad usage.
describe('a boolean configuration key needs its value, as every key does', () => {
  const cases: [string[], string, string][] = [
    [['config', 'check', '--Mqtt.HomeAssistantDiscovery', '--port', '5'], 'voice-hub config', '--Mqtt.HomeAssistantDiscovery needs a value'],
    [['config', 'check', '--Mqtt.HomeAssistantDiscovery'], 'voice-hub config', '--Mqtt.HomeAssistantDiscovery needs a value'],
    [['--VoiceService.EnableVoice'], 'voice-hub', '--VoiceService.EnableVoice needs a value'],
  ];
  for (const [args, who, problem] of cases) {
    it(args.join(' '), () => assertUsage(args, who, [problem]));
  }

  it('with its value, as a word or after =, it is taken', async () => {
    const res = await runBundle(['config', 'check', '--data-dir', tmpDir(), '--Mqtt.HomeAssistantDiscovery', 'false', '--Server.HttpsRedirect=false']);
    assert.equal(res.code, 0, res.stderr);
    assert.match(res.stdout, /^Mqtt\.HomeAssistantDiscovery = false {2}\(flag\)$/m);
    assert.match(res.stdout, /^Server\.HttpsRedirect = false {2}\(flag\)$/m);
  });
});

describe('missing and repeated values, mistyped command options: exit 64; mistyped configuration values: exit 78', () => {
  const cases: [string[], string, string][] = [
    [['--port'], 'voice-hub', '--port needs a value'],
    [['--port', '--data-dir', 'x'], 'voice-hub', '--port needs a value'],
    [['--Server.Port'], 'voice-hub', '--Server.Port needs a value'],
    [['--port', '1', '--port', '2'], 'voice-hub', '--port is given more than once'],
    [['--port', '1', '--server.port', '2'], 'voice-hub', '--port and --server.port both set Server.Port: give one'],
    [['--config'], 'voice-hub', '--config needs a value'],
    [['token', 'admin', '--ttl'], 'voice-hub token', '--ttl needs a value'],
    [['token', 'admin', '--ttl', 'soon'], 'voice-hub token', "invalid --ttl 'soon': use e.g. 30d, 12h, 90m or a time span like 7.00:00:00"],
    [['token', 'admin', '--ttl', '0d'], 'voice-hub token', "--ttl must be positive, not '0d'"],
    [['token', 'admin', '--ttl', '3651d'], 'voice-hub token', "--ttl '3651d' is longer than a token may live (3650.00:00:00, ten years)"],
    [['token', 'admin', '--ttl', '100000000d'], 'voice-hub token', "--ttl '100000000d' is longer than a token may live (3650.00:00:00, ten years)"],
    [['health', '--url'], 'voice-hub health', '--url needs a value'],
    [['health', '--url', 'localhost:5000'], 'voice-hub health', "--url needs an http:// or https:// address such as http://127.0.0.1:5000, not 'localhost:5000'"],
    [['health', '--url', 'http://'], 'voice-hub health', "--url needs an http:// or https:// address such as http://127.0.0.1:5000, not 'http://'"],
    [['health', '--Server.Port', '0'], 'voice-hub health', 'Server.Port is 0 (the service listens on any free port, named in its log as "listening on"): give its address with --url'],
    [['echo-server', '--port', '70000'], 'voice-hub echo-server', '--port must be 0 to 65535, not 70000'],
    [['echo-server', '--port', 'x'], 'voice-hub echo-server', "--port needs a whole number, not 'x'"],
    [['simulate', '--devices', 'two'], 'voice-hub simulate', "--devices needs a whole number, not 'two'"],
    [['simulate', '--devices', '0'], 'voice-hub simulate', '--devices must be 1 to 500, not 0'],
    [['simulate', '--devices', '100000'], 'voice-hub simulate', '--devices must be 1 to 500, not 100000'],
    [['simulate', '--seconds', '0'], 'voice-hub simulate', '--seconds must be more than 0 and at most 86400, not 0'],
    [['simulate', '--seconds', '1e9'], 'voice-hub simulate', '--seconds must be more than 0 and at most 86400, not 1000000000'],
    [['simulate', '--url', 'http://tech:s3cr3t@127.0.0.1:1'], 'voice-hub simulate', '--url must not hold a user name or password: the service asks for none (--api-key gives an API key)'],
    // The query (a token, it may be) is not quoted; before, it and the path's last segment were dropped without a word.
    ...['http://127.0.0.1:1/hub?access_token=SECRET', 'http://127.0.0.1:1/?', 'http://127.0.0.1:1#x', 'http://127.0.0.1:1/p/#'].map(
      (url): [string[], string, string] => [['simulate', '--url', url], 'voice-hub simulate', "--url must be the service's base address, without a query or a fragment (each request adds its own path)"],
    ),
    [['simulate', '--protocol', 'jsn'], 'voice-hub simulate', "--protocol must be json or messagepack, not 'jsn' (did you mean json?)"],
    [['simulate', '--protocol', 'msgpack'], 'voice-hub simulate', "--protocol must be json or messagepack, not 'msgpack'"],
    [['simulate', '--url', 'ftp://host'], 'voice-hub simulate', "--url needs an http:// or https:// address such as http://127.0.0.1:5000, not 'ftp://host'"],
    // An http address all the same: it said "needs an http:// or https:// address ..., not 'http://[fe80::1%25eth0]:5000'".
    [['simulate', '--url', 'http://u:pw@[fe80::1%25eth0]:5000/?token=abc'], 'voice-hub simulate', "--url cannot name a link-local address with its interface (http://[fe80::1%25eth0]:5000/): give the service's IPv4, ULA or global IPv6 address, or its name"],
  ];
  for (const [args, who, problem] of cases) {
    it(args.join(' '), () => assertUsage(args, who, [problem]));
  }

  it('health --url beside --config or configuration keys: they would change nothing, so bad usage naming them (values unquoted)', async () => {
    // Nothing listens there: before, the flags were dropped without a word and the answer was exit 3.
    const url = `http://127.0.0.1:${await freePort()}`;
    const noEffect = 'no effect with --url, which names the service to ask: give --url alone, or leave it out to ask the configured Server.Host and Server.Port';
    await assertUsage(['health', '--url', url, '--Server.Port', '5001'], 'voice-hub health', [`--Server.Port has ${noEffect}`]);
    await assertUsage(['health', '--config', '/etc/voice-hub/appsettings.json', '--url', url, '--server.host=pi.local', '--Mqtt.Password=SECRETPW'], 'voice-hub health', [
      `--config, --server.host and --Mqtt.Password have ${noEffect}`,
    ]);
  });

  it('token admin --ttl at the limit (ten years) mints a token that lives exactly that long', async () => {
    const res = await runBundle(['token', 'admin', '--data-dir', tmpDir(), '--ttl', '3650d']);
    assert.equal(res.code, 0, res.stderr);
    const claims = JSON.parse(Buffer.from(res.stdout.trim().split('.')[1]!, 'base64url').toString()) as { iat: number; exp: number };
    assert.equal(claims.exp - claims.iat, 3650 * 86_400);
  });

  it('token admin on a data directory without a signing key says that it created one; with one it says nothing', async () => {
    const dir = tmpDir();
    const first = await runBundle(['token', 'admin', '--data-dir', dir, '--ttl', '1h']);
    assert.equal(first.code, 0, first.stderr);
    assert.equal(first.stderr, `voice-hub token: no signing key was in ${dir}: created ${path.join(dir, 'signing.key')}; a service using another data directory will refuse this token\n`);
    const second = await runBundle(['token', 'admin', '--data-dir', dir, '--ttl', '1h']);
    assert.equal(second.code, 0, second.stderr);
    assert.equal(second.stderr, '');
  });

  it('a value of the right type but out of range is the configuration\'s verdict: exit 78', async () => {
    const res = await runBundle(['config', 'check', '--data-dir', tmpDir(), '--port', '70000']);
    assert.equal(res.code, 78, res.stderr);
    assert.match(res.stderr, /^ {2}Server\.Port: 70000 from flag --port is invalid: must be an integer from 0 to 65535$/m);
  });

  // A configuration key's value of the wrong type is a bad configuration value, as from the file or the
  // environment: exit 78 and the key, the source and what was expected.
  const mistyped: [string[], string][] = [
    [['--port', 'abc'], 'Server.Port: "abc" from flag --port is invalid: must be an integer from 0 to 65535'],
    [['--port='], 'Server.Port: "" from flag --port is invalid: must be an integer from 0 to 65535'],
    [['--port', '5.5'], 'Server.Port: "5.5" from flag --port is invalid: must be an integer from 0 to 65535'],
    [['--Server.Port', 'abc'], 'Server.Port: "abc" from flag --Server.Port is invalid: must be an integer from 0 to 65535'],
    [['--VoiceService.AudioSampleRate', 'abc'], 'VoiceService.AudioSampleRate: "abc" from flag --VoiceService.AudioSampleRate is invalid: must be one of 8000, 12000, 16000, 24000, 48000'],
    [['--VoiceService.EnableVoice', 'maybe'], 'VoiceService.EnableVoice: "maybe" from flag --VoiceService.EnableVoice is invalid: must be true or false'],
  ];
  for (const [args, line] of mistyped) {
    it(`${args.join(' ')}: exit 78`, async () => {
      const res = await runBundle([...args, '--data-dir', tmpDir()]);
      assert.equal(res.code, 78, res.stderr);
      assert.deepEqual(res.stderr.trim().split('\n'), ['invalid configuration:', `  ${line}`]);
    });
  }
});

describe('configuration keys as flags stay accepted', () => {
  it('top-level keys, sections, map entries, array items and whole arrays, in any case, with = or a space', async () => {
    const res = await runBundle([
      'config', 'check', '--data-dir', tmpDir(),
      '--AllowedHosts', 'hub.example;127.0.0.1',
      '--ApiKeys', 'k1', '--ApiKeys', 'k2',
      '--logging.loglevel.Hub', 'debug',
      '--Server.Port=6001',
      '--VoiceService.EnableVoice', 'true',
      '--Mqtt.BrokerAddress', '',
      '--Hub.KeepAliveInterval', '00:00:20',
    ]);
    assert.equal(res.code, 0, res.stderr);
    for (const line of [
      'AllowedHosts = "hub.example;127.0.0.1"  (flag)',
      'ApiKeys = ["***","***"]  (flag)',
      'Logging.LogLevel.Hub = "Debug"  (flag)',
      'Server.Port = 6001  (flag)',
      'VoiceService.EnableVoice = true  (flag)',
      'Mqtt.BrokerAddress = ""  (flag)',
      'Hub.KeepAliveInterval = "00:00:20"  (flag)',
    ]) assert.ok(res.stdout.split('\n').includes(line), `${line}\n${res.stdout}`);
  });

  it('array items by index and the short flags of serve', async () => {
    const res = await runBundle(['config', 'check', '--ApiKeys.0', 'a', '--ApiKeys.1', 'b', '--data-dir', tmpDir(), '--port', '6002', '--log-level', 'Warning']);
    assert.equal(res.code, 0, res.stderr);
    assert.match(res.stdout, /^ApiKeys = \["\*\*\*","\*\*\*"\] {2}\(flag\)$/m);
    assert.match(res.stdout, /^Server\.Port = 6002 {2}\(flag\)$/m);
    assert.match(res.stdout, /^Logging\.LogLevel\.Default = "Warning" {2}\(flag\)$/m);
  });
});

describe('--help', () => {
  /** The flags a help text lists, in order. */
  const flagsIn = (text: string): string[] => [...text.matchAll(/^ +(?:-\w, )?(--[\w-]+)/gm)].map((m) => m[1]!);
  const SERVE_FLAGS = ['--config', '--port', '--host', '--data-dir', '--log-level', '--voice-server-url', '--https-port', '--cert', '--key'];
  const cases: [string[], string[]][] = [
    [['health'], ['--url', '--config', '--help']],
    [['token', 'admin'], ['--ttl', '--config', '--data-dir', '--help']],
    [['config', 'check'], [...SERVE_FLAGS, '--help']],
    [['echo-server'], ['--port', '--host', '--help']],
    [['simulate'], ['--url', '--devices', '--seconds', '--protocol', '--api-key', '--admin-token', '--drop-every', '--drop-for', '--stateful-reconnect', '--late-after', '--help']],
    [['serve'], ['--version', ...SERVE_FLAGS, '--help']],
  ];
  for (const [command, flags] of cases) {
    it(`${command.join(' ')} --help lists exactly its own flags`, async () => {
      const res = await runBundle([...command, '--help']);
      assert.equal(res.code, 0, res.stderr);
      assert.deepEqual(flagsIn(res.stdout), flags, res.stdout);
    });
  }

  it('every command\'s help ends with its exit codes, bad usage (64) and an internal error (70) among them', async () => {
    for (const [args, spec] of [[['--help'], SERVE], ...COMMANDS.filter((c) => c !== SERVE).map((c) => [[c.name, '--help'], c] as const)] as const) {
      const res = await runBundle([...args]);
      assert.equal(res.code, 0, res.stderr);
      assert.ok(res.stdout.trimEnd().endsWith(`\n${exitsText(spec)}`), `${args.join(' ')}: ${res.stdout}`);
      assert.match(exitsText(spec), /; 64 bad usage \(nothing was done\); .*70 an internal error, a bug: please report it \(Logging__LogLevel__Default=Debug in the environment prints its stack\)/);
    }
  });

  it('the top-level help lists every command with a one-line description, and serve\'s flags', async () => {
    const res = await runBundle(['--help']);
    assert.equal(res.code, 0, res.stderr);
    for (const name of ['serve', 'token', 'config', 'health', 'echo-server', 'simulate']) {
      assert.match(res.stdout, new RegExp(`^ {2}voice-hub ${name}(?: \\[\\w+\\])? {2,}\\w.*$`, 'm'), name);
    }
    assert.deepEqual(flagsIn(res.stdout), ['--version', ...SERVE_FLAGS, '--help']);
  });

  it('help COMMAND prints what COMMAND --help prints, exit 0', async () => {
    const cases = [['serve'], ['token'], ['token', 'admin'], ['config', 'check'], ['health'], ['echo-server'], ['simulate']];
    await Promise.all(cases.map(async (command) => {
      const [help, flag] = await Promise.all([runBundle(['help', ...command]), runBundle([...command, '--help'])]);
      assert.equal(flag.code, 0);
      assert.deepEqual({ code: help.code, stdout: help.stdout, stderr: help.stderr }, { code: 0, stdout: flag.stdout, stderr: '' }, command.join(' '));
    }));
  });

  it('-h is --help', async () => {
    const [short, long] = await Promise.all([runBundle(['health', '-h']), runBundle(['health', '--help'])]);
    assert.equal(short.code, 0);
    assert.equal(short.stdout, long.stdout);
  });

  it('--help, -h and --version take no value: given one, they are bad usage, never a start of the service', async () => {
    for (const [args, flag] of [
      [['--help=false'], '--help'],
      [['--help', 'false'], '--help'],
      [['-h=0'], '-h'],
      [['--version=no'], '--version'],
      [['--version', 'false'], '--version'],
      [['health', '--help=false'], '--help'],
    ] as const) {
      await assertUsage([...args], args[0] === 'health' ? 'voice-hub health' : 'voice-hub', [`${flag} takes no value`]);
    }
  });
});

describe('health --url', () => {
  it('takes a base address, with or without the slash, or the full /health address', () => {
    const cases: [string, string][] = [
      ['http://host:5000', 'http://host:5000/health'],
      ['http://host:5000/', 'http://host:5000/health'],
      ['http://host:5000/health', 'http://host:5000/health'],
      ['http://host:5000/health/', 'http://host:5000/health'],
      ['http://host:5000/HEALTH', 'http://host:5000/HEALTH'],
      ['https://pi.local/voice-hub/', 'https://pi.local/voice-hub/health'],
      ['http://[::1]:5000', 'http://[::1]:5000/health'],
    ];
    for (const [given, expected] of cases) assert.equal(healthUrlFrom(given), expected, given);
  });

  describe('against a running service', () => {
    let svc: SpawnedService;
    before(async () => {
      svc = await spawnService(['--data-dir', tmpDir(), '--Mqtt.BrokerAddress', '']);
    });
    after(() => svc.proc.kill('SIGTERM'));

    it('base, base with slash and full address print the same report', async () => {
      const runs = await Promise.all([svc.url, `${svc.url}/`, `${svc.url}/health`].map((url) => runBundle(['health', '--url', url])));
      for (const res of runs) {
        assert.ok(res.code !== null && res.code <= 2, `exit ${res.code}: ${res.stdout}${res.stderr}`);
        assert.equal(res.code, runs[2]!.code);
        assert.match(res.stdout, /^Overall: (Healthy|Degraded|Unhealthy) /);
        assert.match(res.stdout, /^database +Healthy/m);
      }
    });
  });
});

describe('the bundle runs by itself', () => {
  it('starts with #!/usr/bin/env node and is executable', () => {
    assert.equal(readFileSync(BUNDLE, 'utf8').split('\n', 1)[0], '#!/usr/bin/env node');
    assert.equal(statSync(BUNDLE).mode & 0o755, 0o755);
  });

  it('./dist/voice-hub.cjs --version', async () => {
    // `env node` finds the node running this test first on PATH, as it would the system's.
    const PATH = `${path.dirname(process.execPath)}:${process.env.PATH ?? ''}`;
    const res = await runProcess('./dist/voice-hub.cjs', ['--version'], { env: { PATH } });
    assert.equal(res.code, 0, res.stderr);
    assert.match(res.stdout, /^voice-hub \d+\.\d+\.\d+\nnode v20\./);
  });
});

// What the configuration commands must survive, and must not echo (test/config has the cases in detail).
describe('configuration: bounded, credentials in the voice server URL never shown, arrays given one way', () => {
  const invalid = (...lines: string[]): string => ['invalid configuration:', ...lines.map((l) => `  ${l}`), ''].join('\n');
  const writeFile = (name: string, text: string): string => {
    const file = path.join(tmpDir(), name);
    writeFileSync(file, text);
    return file;
  };

  // Values are written as JSON, which leaves these as they are: a terminal would reorder or hide the rest
  // of the line, and a line separator turned into a space showed a value other than the one in use.
  it('config check writes a value\'s bidirectional marks, line separators and C1 controls as JSON escapes', async () => {
    const res = await runBundle(['config', 'check', '--data-dir', tmpDir(), '--Mqtt.Username', 'u\u202eX  (default)', '--Mqtt.TopicPrefix', 'a\u2066b\u2028c\u2029d']);
    assert.equal(res.code, 0, res.stderr);
    const lines = res.stdout.split('\n');
    assert.ok(lines.includes('Mqtt.Username = "u\\u202eX  (default)"  (flag)'), res.stdout);
    assert.ok(lines.includes('Mqtt.TopicPrefix = "a\\u2066b\\u2028c\\u2029d"  (flag)'), res.stdout);
    assert.doesNotMatch(res.stdout, /[\u202a-\u202e\u2066-\u2069\u2028\u2029]/);
    assert.equal(JSON.parse(lines.find((l) => l.startsWith('Mqtt.TopicPrefix = '))!.slice(19, -8)), 'a\u2066b\u2028c\u2029d');
    // A problem line quotes the value the same way.
    const refused = await runBundle(['config', 'check', '--data-dir', tmpDir(), '--Mqtt.Username', 'a\u0085b\u2028c']);
    assert.equal(refused.code, 78);
    assert.match(refused.stderr, /^ {2}Mqtt\.Username: "a\\u0085b\\u2028c" from flag --Mqtt\.Username is invalid: /m);
  });

  it('a file nested 3,000 deep is one problem line and exit 78, from config check and serve', async () => {
    const file = writeFile('deep.json', `{"Server":${'{"a":'.repeat(3000)}1${'}'.repeat(3000)}}`);
    for (const command of [['config', 'check'], []]) {
      const { env } = await quietEnv();
      const res = await runBundle([...command, '--config', file], env);
      assert.equal(res.code, 78, res.stderr);
      assert.equal(res.stderr, invalid(`${file}:1:326: invalid JSON: objects and arrays nested more than 64 deep (.NET refuses them too)`));
    }
  });

  it('an environment variable of 5,000 parts is ignored and named cut short', async () => {
    const name = ['Server', ...Array<string>(5000).fill('a')].join('__');
    const res = await runBundle(['config', 'check', '--data-dir', tmpDir()], { [name]: '1' });
    assert.equal(res.code, 0, res.stderr);
    assert.equal(res.stdout.split('\n').filter((l) => l.includes('__a__')).join('\n'), `# environment variable ${name.slice(0, 61)}... names no configuration key and is ignored`);
  });

  it('200,000 bad items are 20 lines and a count, exit 78', async () => {
    const file = writeFile('keys.json', JSON.stringify({ ApiKeys: Array<string>(200_000).fill('') }));
    const res = await runBundle(['config', 'check', '--config', file, '--data-dir', tmpDir()]);
    assert.equal(res.code, 78, res.stderr);
    const items = Array.from({ length: 20 }, (_, i) => `ApiKeys[${i}]: "" from file ${file} is invalid: must be a non-empty string of printable ASCII (spaces and tabs only inside it), as an HTTP header carries it`);
    assert.equal(res.stderr, invalid(...items, '... and 199980 more'));
  });

  it('30,000 unknown keys are 20 lines and a count, in seconds (their spelling hints took 14)', async () => {
    const file = writeFile('unknown.json', JSON.stringify({ Server: Object.fromEntries(Array.from({ length: 30_000 }, (_, i) => [`Prt${i}`, 1])) }));
    const res = await runBundle(['config', 'check', '--config', file, '--data-dir', tmpDir()], {}, 10_000);
    assert.equal(res.code, 78, res.stderr);
    const items = Array.from({ length: 20 }, (_, i) => `Server.Prt${i}: unknown key from file ${file}${i < 10 ? ' (did you mean Server.Port?)' : ''}`);
    assert.equal(res.stderr, invalid(...items, '... and 29980 more'));
  });

  // `config check` is what a technician runs before restarting: it must refuse what serve refuses (78).
  it('a certificate or CA file serve would refuse: exit 78 from config check too, with the same lines', async () => {
    const missing = path.join(tmpDir(), 'missing.crt');
    for (const [flags, line] of [
      [['--cert', missing], `Server.Certificate.Path: cannot read ${missing}: it does not exist`],
      [['--VoiceService.CaFile', '/dev/zero'], 'VoiceService.CaFile: cannot read /dev/zero: it is not a regular file'],
    ] as const) {
      const { env } = await quietEnv();
      for (const command of [['config', 'check'], []]) {
        const res = await runBundle([...command, ...flags], env);
        assert.equal(res.code, 78, res.stderr);
        assert.equal(res.stderr, invalid(line));
      }
    }
  });

  const URL_WITH_KEYS = 'ws://USER:PASSWORD@127.0.0.1:5050/voice?token=QUERYKEY';
  const assertNoKeys = (text: string): void => {
    for (const key of ['USER', 'PASSWORD', 'QUERYKEY']) assert.ok(!text.includes(key), text);
  };

  it('config check shows the URL in its public form', async () => {
    const res = await runBundle(['config', 'check', '--data-dir', tmpDir(), '--voice-server-url', URL_WITH_KEYS]);
    assert.equal(res.code, 0, res.stderr);
    assertNoKeys(res.stdout + res.stderr);
    const lines = res.stdout.split('\n');
    assert.ok(lines.includes('VoiceService.ServerUrl = "ws://127.0.0.1:5050/voice"  (flag)'), res.stdout);
    assert.ok(lines.includes('# VoiceService.ServerUrl is shown in its public form: the parts that may hold credentials are left out'), res.stdout);
  });

  it('a refused URL is not quoted', async () => {
    const { env } = await quietEnv();
    const res = await runBundle(['--voice-server-url', `${URL_WITH_KEYS}#frag`], env);
    assert.equal(res.code, 78, res.stderr);
    assert.equal(res.stderr, invalid('VoiceService.ServerUrl: (not shown: it may hold credentials) from flag --voice-server-url is invalid: must be a ws:// or wss:// URL without a fragment'));
  });

  it('the owner of a port is quoted with the URL in its public form', async () => {
    const dataDir = tmpDir();
    const first = await spawnService(['--voice-server-url', URL_WITH_KEYS, '--data-dir', dataDir, '--Mqtt.BrokerAddress', '']);
    try {
      const res = await runBundle(['--host', '127.0.0.1', '--port', String(first.port), '--data-dir', tmpDir(), '--Mqtt.BrokerAddress', '']);
      assert.equal(res.code, EXIT_IN_USE, res.stderr);
      assertNoKeys(res.stderr);
      const quoted = new RegExp(`in use by PID ${first.proc.pid} \\((.*)\\): stop it`).exec(res.stderr)?.[1];
      assert.ok(quoted, res.stderr);
      // The quote is cut at 120 characters (where, depends on the checkout's path): what is shown is the
      // start of the command line with the URL in its public form.
      const shown = quoted.replace(/\.\.\.$/, '');
      const line = [process.execPath, BUNDLE, '--host', '127.0.0.1', '--port', '0', '--voice-server-url', 'ws://127.0.0.1:5050/voice', '--data-dir', dataDir].join(' ');
      assert.ok(line.startsWith(shown) && shown.length >= Math.min(line.length, 100), `${quoted}\nis not the start of\n${line}`);
    } finally {
      first.proc.kill('SIGTERM');
      await first.exited;
    }
  });

  it('a command\'s own address refused as no http(s) address is quoted without credentials', async () => {
    const needs = "--url needs an http:// or https:// address such as http://127.0.0.1:5000, not";
    await assertUsage(['health', '--url', 'ftp://user:SECRETPW@127.0.0.1:1/x?token=SECRETQ'], 'voice-hub health', [`${needs} 'ftp://127.0.0.1:1/x'`]);
    await assertUsage(['simulate', '--url', 'http//user:SECRETPW@127.0.0.1:1'], 'voice-hub simulate', [`${needs} an address with an @ (not quoted: it may hold a password)`]);
  });

  it('a configuration file this user may not read is the machine\'s refusal: one line, exit 1 (health: 3, as 1 is Degraded)', async () => {
    const dir = tmpDir();
    chmodSync(dir, 0o755);
    const file = path.join(dir, 'appsettings.json');
    writeFileSync(file, '{}');
    // Root reads any file: the command runs as nobody, to whom a file of mode 0600 is closed.
    const asRoot = process.getuid?.() === 0;
    chmodSync(file, asRoot ? 0o600 : 0o000);
    for (const [command, code] of [[['config', 'check'], 1], [[], 1], [['health'], 3]] as const) {
      const args = [BUNDLE, ...command, '--config', file, ...(command[0] === 'health' ? [] : ['--data-dir', path.join(dir, 'data')])];
      const env = { PATH: process.env.PATH ?? '', HOME: '/tmp' };
      const res = asRoot
        ? await runProcess('setpriv', ['--reuid=65534', '--regid=65534', '--clear-groups', process.execPath, ...args], { env })
        : await runProcess(process.execPath, args, { env });
      assert.equal(res.code, code, res.stderr);
      assert.equal(res.stderr, `voice-hub: cannot open ${file}: permission denied (EACCES); run it as the user the service runs as (sudo -u voice-hub voice-hub ...), or give this user access\n`);
    }
  });

  it('an array given whole and by index, an index given twice or an index that is none: bad usage, exit 64, naming the flags', async () => {
    // Each is a command line written wrong, whichever command takes it: nothing is loaded, nothing started.
    for (const [command, who] of [[['config', 'check'], 'voice-hub config'], [['token', 'admin'], 'voice-hub token'], [[], 'voice-hub']] as const) {
      await assertUsage([...command, '--Cors.AllowedOrigins', 'http://a.local', '--Cors.AllowedOrigins.0', 'http://b.local'], who, [
        '--Cors.AllowedOrigins and --Cors.AllowedOrigins.0 both set Cors.AllowedOrigins: give the array whole (--Cors.AllowedOrigins repeated) or by index, not both',
      ]);
    }
    // In any order and spelling, repeated: one line per array.
    await assertUsage(['config', 'check', '--ApiKeys.1=k1', '--apikeys=k2', '--apikeys=k3', '--ApiKeys.2=k4', '--cors.allowedorigins.00', 'http://a.local', '--CORS.ALLOWEDORIGINS', 'http://b.local'], 'voice-hub config', [
      '--apikeys and --ApiKeys.1 both set ApiKeys: give the array whole (--apikeys repeated) or by index, not both',
      '--CORS.ALLOWEDORIGINS and --cors.allowedorigins.00 both set Cors.AllowedOrigins: give the array whole (--CORS.ALLOWEDORIGINS repeated) or by index, not both',
    ]);
    await assertUsage(['config', 'check', '--Cors.AllowedOrigins.0', 'http://a.local', '--Cors.AllowedOrigins.00', 'http://b.local'], 'voice-hub config', [
      '--Cors.AllowedOrigins.0 and --Cors.AllowedOrigins.00 both set Cors.AllowedOrigins.0: give one',
    ]);
    await assertUsage(['config', 'check', '--ApiKeys.first=k1', '--Cors.AllowedOrigins.1234567', 'http://a.local'], 'voice-hub config', [
      '--ApiKeys.first: the part after the last dot must be an index of ApiKeys, 0 to 999999 (decimal digits; leading zeros are ignored)',
      '--Cors.AllowedOrigins.1234567: the part after the last dot must be an index of Cors.AllowedOrigins, 0 to 999999 (decimal digits; leading zeros are ignored)',
    ]);
    await assertUsage(['config', 'check', '--ApiKeys.0000000001000000', 'k'], 'voice-hub config', [
      '--ApiKeys.0000000001000000: the part after the last dot must be an index of ApiKeys, 0 to 999999 (decimal digits; leading zeros are ignored)',
    ]);
    // An object or a map is given key by key, and the ASP.NET Core spellings point to the dot form: unknown flags, as before.
    await assertUsage(['config', 'check', '--Server', '5001', '--Logging.LogLevel', 'Debug', '--Server:Port', '5001', '--Server__Port', '5001'], 'voice-hub config', [
      'unknown flag --Server',
      'unknown flag --Logging.LogLevel',
      'unknown flag --Server:Port (did you mean --Server.Port?)',
      'unknown flag --Server__Port (did you mean --Server.Port?)',
    ]);
  });
});

describe('an index is its value: leading zeros are ignored however many (.0000001 was refused as no index while .01 was item 1)', () => {
  it('--ApiKeys.0000001 and ApiKeys__0000002 are items 1 and 2', async () => {
    for (const [args, env] of [[['--ApiKeys.0000001', 'k1', '--ApiKeys.0', 'k0'], {}], [[], { ApiKeys__0000002: 'k2', ApiKeys__00: 'k0' }]] as const) {
      const res = await runBundle(['config', 'check', '--data-dir', tmpDir(), ...args], env);
      assert.equal(res.code, 0, res.stderr);
      assert.match(res.stdout, /^ApiKeys = \["\*\*\*","\*\*\*"\] {2}\((flag|env)\)$/m);
    }
  });
});

describe('a key with an empty part names no key (it was taken as the log category ".x", which no logger has)', () => {
  it('as a flag: bad usage, exit 64, naming the flag, from every command that takes configuration', async () => {
    for (const [command, who] of [[['config', 'check'], 'voice-hub config'], [['token', 'admin'], 'voice-hub token'], [[], 'voice-hub']] as const) {
      await assertUsage([...command, '--Logging.LogLevel..x', 'Debug', '--logging.loglevel.y.', 'Debug'], who, [
        '--Logging.LogLevel..x names no key: a key has no empty part (no dot doubled, leading or trailing)',
        '--logging.loglevel.y. names no key: a key has no empty part (no dot doubled, leading or trailing)',
      ]);
    }
  });

  it('in the environment (under a section of ours) and in the file: invalid configuration, exit 78', async () => {
    const dir = tmpDir();
    const file = path.join(dir, 'a.json');
    writeFileSync(file, JSON.stringify({ Logging: { LogLevel: { '': 'Debug', '.x': 'Debug', 'Hub': 'Debug' } } }));
    const res = await runBundle(['config', 'check', '--data-dir', dir, '--config', file], { Logging__LogLevel____x: 'Debug', 'Logging:LogLevel:y:': 'Debug', Other____Thing: '1' });
    assert.equal(res.code, 78, res.stderr);
    assert.deepEqual(res.stderr.trim().split('\n'), [
      'invalid configuration:',
      `  Logging.LogLevel."": from file ${file} names no key: a key has no empty part (no dot doubled, leading or trailing)`,
      `  Logging.LogLevel.".x": from file ${file} names no key: a key has no empty part (no dot doubled, leading or trailing)`,
      '  environment variable Logging:LogLevel:y: names no key: a key has no empty part (no __ or : doubled, leading or trailing)',
      '  environment variable Logging__LogLevel____x names no key: a key has no empty part (no __ or : doubled, leading or trailing)',
    ]);
  });
});

describe('--help does not hide what is wrong with the rest of the line (yargs printed help and exited 0)', () => {
  it('-hx, -xh, --help beside an unknown flag or a bad key: exit 64 and the problems, no help', async () => {
    await assertUsage(['config', 'check', '-hx'], 'voice-hub config', ['unknown flag -x']);
    await assertUsage(['config', 'check', '-xh'], 'voice-hub config', ['unknown flag -x']);
    await assertUsage(['health', '--help', '--bogus', '1'], 'voice-hub health', ['unknown flag --bogus']);
    await assertUsage(['--help', '--Logging.LogLevel..x', 'Debug'], 'voice-hub', ['--Logging.LogLevel..x names no key: a key has no empty part (no dot doubled, leading or trailing)']);
    await assertUsage(['config', 'chek', '-h'], 'voice-hub config', ["unknown action 'chek' (did you mean check?)"]);
    // --version no more: `--version --bogus` printed the version, exit 0.
    await assertUsage(['--version', '--bogus', '1'], 'voice-hub', ['unknown flag --bogus']);
    await assertUsage(['-x', '--version'], 'voice-hub', ['unknown flag -x']);
    // `help COMMAND` checks the flags beside it as that command's.
    await assertUsage(['help', 'health', '--bogus', '1'], 'voice-hub health', ['unknown flag --bogus']);
    await assertUsage(['help', 'simulate', '--devices', 'x'], 'voice-hub simulate', ["--devices needs a whole number, not 'x'"]);
  });

  it('a line with nothing wrong still gets its help, exit 0, with or without the command\'s argument', async () => {
    for (const args of [['config', 'check', '-h'], ['config', '--help'], ['token', '-h', '--ttl', '1d'], ['serve', '-h', '--port', '5'], ['--help', '--version'], ['--version', '--port', '5'], ['serve', '--version']]) {
      const res = await runBundle(args);
      assert.equal(res.code, 0, `${args.join(' ')}: ${res.stderr}`);
      assert.match(res.stdout, /^voice-hub/, args.join(' '));
      assert.equal(res.stderr, '');
    }
  });
});

describe('token admin on a data directory where no file can be created (/proc/1)', () => {
  it('says which folder and what to do, as serve does, not a bare ENOENT naming a temporary file', async () => {
    const res = await runBundle(['token', 'admin', '--data-dir', '/proc/1']);
    assert.equal(res.code, 1, res.stderr);
    assert.equal(res.stderr, 'voice-hub token: cannot take the data directory /proc/1: cannot create files in /proc/1: no such file or directory (ENOENT), ' +
      'though the folder exists: it is on a file system that takes no new files (such as /proc or /sys); choose another folder (--data-dir, Storage.DataDir)\n');
    assert.equal(res.stdout, '');
  });

  it('config check on a data directory that is a file says so and what to do, where it said ENOTDIR naming the database', async () => {
    const file = path.join(tmpDir(), 'data');
    writeFileSync(file, '');
    const res = await runBundle(['config', 'check', '--data-dir', file]);
    assert.equal(res.code, 1, res.stderr);
    assert.equal(res.stderr, `voice-hub config: cannot read the data directory ${file}: ${file} is a file, not a folder; choose another folder (--data-dir, Storage.DataDir)\n`);
  });
});
