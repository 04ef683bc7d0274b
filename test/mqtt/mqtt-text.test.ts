// Text that goes into MQTT strings (user name, topics): MQTT forbids U+0000 and unpaired surrogates, and
// lets a receiver close the connection for the other control characters and Unicode non-characters
// (MQTT 3.1.1 section 1.5.3, 5.0 section 1.5.4), which mosquitto does. A setting holding one is refused
// where it is set (the configuration, PUT /api/config/mqtt), a stored one from before makes the hub say
// why it does not connect, and a device id with one is percent-encoded in its topics.
import assert from 'node:assert/strict';
import net from 'node:net';
import { after, describe, it } from 'node:test';
import { createMqttCheck } from '../../src/health/checks.js';
import { MqttPublisher } from '../../src/mqtt/publisher.js';
import { topicLevel } from '../../src/mqtt/topics.js';
import { jsonText } from '../../src/config/shown.js';
import { loadConfig } from '../../src/config/load.js';
import { configFile, problemsOf } from '../config/helpers.js';
import { call } from '../support/http.js';
import { startMosquitto } from '../support/mosquitto.js';
import { startService } from '../support/service.js';
import { adminToken } from '../support/tokens.js';
import { sleep, waitUntil } from '../support/wait.js';
import { capturedLog, connectedPublisher, device, publisherOptions, Subscriber } from './helpers.js';
import { answered, assertProblem } from '../support/problem.js';

const USER_NAME_TEXT = 'must be a string without control characters (U+0000 to U+001F, U+007F to U+009F) or Unicode non-characters, which MQTT does not allow';
const PREFIX_TEXT = 'must be a non-empty MQTT topic prefix without +, #, a leading $, a leading or trailing /, control characters or Unicode non-characters';
/** What mosquitto closes the connection for, one of each kind. */
const REFUSED = ['\u0000', '\u0001', '\t', '\u001f', '\u007f', '\u0085', '\u009f', '\ufdd0', '\ufffe', '\uffff', '\u{1fffe}', '\u{10ffff}'];
const hex = (s: string): string => [...s].map((c) => `U+${c.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}`).join('');

describe('MQTT settings that go into MQTT strings', () => {
  for (const ch of REFUSED) {
    it(`Mqtt.Username with ${hex(ch)} is refused by the configuration`, () => {
      const value = `ha${ch}user`;
      const file = configFile({ Mqtt: { Username: value } });
      assert.deepEqual(problemsOf({ file }), [`Mqtt.Username: ${jsonText(value)} from file ${file} is invalid: ${USER_NAME_TEXT}`]);
    });
  }

  it('the topic prefixes refuse them too, in the middle as at the ends', () => {
    for (const key of ['TopicPrefix', 'DiscoveryPrefix']) {
      for (const value of ['vh\u0000', 'v\u0001h', '\u0085vh', 'voice-hub/k\u00fcche\ufffe']) {
        assert.deepEqual(problemsOf({ flags: { [`Mqtt.${key}`]: value } }), [`Mqtt.${key}: ${jsonText(value)} from flag --Mqtt.${key} is invalid: ${PREFIX_TEXT}`]);
      }
    }
  });

  it('the topic prefixes refuse a leading $: such topics are the broker\'s (MQTT 4.7.2), which refuses them to clients', () => {
    for (const key of ['TopicPrefix', 'DiscoveryPrefix']) {
      for (const value of ['$SYS/vh', '$ha', '$']) {
        assert.deepEqual(problemsOf({ flags: { [`Mqtt.${key}`]: value } }), [`Mqtt.${key}: ${jsonText(value)} from flag --Mqtt.${key} is invalid: ${PREFIX_TEXT}`]);
      }
      assert.equal(loadConfig({ flags: { [`Mqtt.${key}`]: 'vh/$x' } }).config.Mqtt[key as 'TopicPrefix'], 'vh/$x', 'a $ past the first level is an ordinary character');
    }
  });

  it('settings longer than MQTT carries are refused at load: mqtt.js threw from its packet writer at the first connect and ended the service', () => {
    const cases: Array<[string, string, number]> = [
      ['TopicPrefix', 'x'.repeat(70_000), 1024],
      ['DiscoveryPrefix', '\u00e9'.repeat(1025), 1024],
      ['Username', 'u'.repeat(257), 256],
    ];
    for (const [key, value, limit] of cases) {
      const [problem] = problemsOf({ flags: { [`Mqtt.${key}`]: value } });
      assert.match(problem ?? '', new RegExp(`^Mqtt\\.${key}: .* from flag --Mqtt\\.${key} is invalid: must be at most ${limit} characters$`));
    }
    assert.deepEqual(problemsOf({ flags: { 'Mqtt.Password': '\u{1f3a4}'.repeat(16_384) } }), [
      'Mqtt.Password: (secret, 16384 characters) from flag --Mqtt.Password is invalid: must be at most 16383 characters',
    ]);
    // The longest of each still loads, and the longest password fits MQTT's 65,535 bytes whatever it holds.
    const { config } = loadConfig({
      flags: { 'Mqtt.TopicPrefix': 'x'.repeat(1024), 'Mqtt.DiscoveryPrefix': '\u{1f3a4}'.repeat(1024), 'Mqtt.Username': 'u'.repeat(256), 'Mqtt.Password': '\u{1f3a4}'.repeat(16_383) },
    });
    assert.equal(config.Mqtt.TopicPrefix.length, 1024);
    assert.ok(Buffer.byteLength(config.Mqtt.Password) <= 65_535);
  });

  it('the longest settings connect and publish: every topic stays within MQTT\'s 65,535 bytes', async () => {
    const broker = await startMosquitto();
    const { lines, logger } = capturedLog();
    const longest = '\u{1f3a4}'.repeat(1024);
    const pub = await connectedPublisher(publisherOptions(broker.port, { topicPrefix: longest, discoveryPrefix: longest, logger }));
    try {
      // A device id of the longest kind: 128 characters, each percent-encoded in its topics.
      pub.publishDeviceState(device('\u0085'.repeat(128)));
      await waitUntil(() => pub.stats().queued === 0 && pub.stats().inFlight === 0, 'everything acknowledged');
      assert.equal(pub.stats().dropped, 0);
      assert.ok(pub.state().connected, lines.join('\n'));
    } finally {
      await pub.close();
      await broker.stop();
    }
  });

  it('ordinary text, other scripts and emoji stay accepted; the password is bytes and takes anything', () => {
    const { config } = loadConfig({
      flags: { 'Mqtt.Username': 'hä user-1 😀 名前', 'Mqtt.TopicPrefix': 'voice-hub/küche', 'Mqtt.DiscoveryPrefix': 'home assistant', 'Mqtt.Password': 'p\u0000w\u0085' },
    });
    assert.equal(config.Mqtt.Username, 'hä user-1 😀 名前');
    assert.equal(config.Mqtt.TopicPrefix, 'voice-hub/küche');
    assert.equal(config.Mqtt.DiscoveryPrefix, 'home assistant');
    assert.equal(config.Mqtt.Password, 'p\u0000w\u0085');
  });

  it('PUT /api/config/mqtt refuses such a user name; ordinary text passes', async () => {
    const svc = await startService();
    const admin = await adminToken(svc);
    for (const username of ['ha\u0000user', 'ha\tuser', 'ha\u0085user', 'ha\uffffuser']) {
      const res = await call(svc.url, 'PUT', '/api/config/mqtt', { token: admin, body: { username } });
      assertProblem(answered(res), 400, {
        title: 'One or more validation errors occurred.',
        detail: 'The request body is invalid.',
        errors: { username: ['must be a string without control characters (U+0000 to U+001F, U+007F to U+009F) or Unicode non-characters, which MQTT does not allow'] },
      });
    }
    const ok = await call(svc.url, 'PUT', '/api/config/mqtt', { token: admin, body: { username: 'hä user 😀' } });
    assert.equal(ok.status, 200);
    assert.equal(ok.json.username, 'hä user 😀');
  });
});

describe('a user name MQTT does not allow, stored before it was refused', () => {
  const cleanup: (() => Promise<unknown> | void)[] = [];
  after(async () => {
    for (const c of cleanup.reverse()) await c();
  });

  it('is not sent: the hub says why, in the log and in health, instead of "connection closed" on every retry', async () => {
    let connections = 0;
    const server = net.createServer((s) => {
      connections++;
      s.destroy();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    cleanup.push(() => new Promise((resolve) => server.close(resolve)));
    const port = (server.address() as net.AddressInfo).port;
    const { lines, logger } = capturedLog();
    const pub = new MqttPublisher(publisherOptions(port, { username: 'ha\u0000user', password: 'x', logger }));
    cleanup.push(() => pub.close());
    pub.start();
    const reason =
      'Mqtt.Username holds U+0000, which MQTT does not allow in a user name (the broker would refuse every connection): ' +
      'set it without control characters or Unicode non-characters';
    assert.deepEqual(pub.state(), { connected: false, lastError: reason, broker: `127.0.0.1:${port}` });
    assert.deepEqual(lines, [`fail: Mqtt: not connecting to MQTT broker 127.0.0.1:${port}: ${reason}`]);
    const health = await createMqttCheck(pub)();
    assert.equal(health.status, 'Degraded');
    assert.equal(health.description, reason);
    await sleep(500);
    assert.equal(connections, 0);
  });
});

describe('device ids in topics', () => {
  it('C1 controls and non-characters are percent-encoded like the C0 ones', () => {
    assert.equal(topicLevel('a\u0085b'), 'a%C2%85b');
    assert.equal(topicLevel('a\u009f'), 'a%C2%9F');
    assert.equal(topicLevel('n\ufffe'), 'n%EF%BF%BE');
    assert.equal(topicLevel('n\u{10ffff}'), 'n%F4%8F%BF%BF');
    assert.equal(topicLevel('k\u00fcche \u00a0😀'), 'k\u00fcche \u00a0😀', 'U+00A0 and emoji are ordinary text');
  });

  it('a device whose id holds U+0085 no longer makes mosquitto close the connection', async (t) => {
    const b = await startMosquitto();
    t.after(() => b.stop());
    const options = publisherOptions(b.port);
    const pub = await connectedPublisher(options);
    t.after(() => pub.close());
    await waitUntil(() => pub.stats().queued === 0 && pub.stats().inFlight === 0, 'online and the hub\'s configs to be delivered');
    const before = pub.stats().published;
    pub.syncDevices([device('a\u0085b'), device('n\ufffe')]);
    await waitUntil(() => pub.stats().queued === 0 && pub.stats().inFlight === 0, 'the devices to be delivered');
    const sub = await Subscriber.connect(b.port, [`${options.topicPrefix}/devices/#`]);
    t.after(() => sub.end());
    await sub.barrier(`${options.topicPrefix}/devices/barrier`);
    assert.deepEqual(sub.messages.filter((m) => m.retain).map((m) => m.topic).sort(), [
      `${options.topicPrefix}/devices/a%C2%85b/state`,
      `${options.topicPrefix}/devices/n%EF%BF%BE/state`,
    ]);
    assert.equal(pub.stats().published - before, 2 * 6);
    assert.deepEqual(pub.state(), { connected: true, broker: `127.0.0.1:${b.port}` });
  });
});
