// Mqtt.BrokerAddress is a host and nothing else. A URL with a login (`mqtt://user:password@host:1883`, which
// many MQTT tools take) never connected here, and the address is shown in the log, in /health and in the
// `mqtt` settings category, which devices may read: its password went to all three. The configuration
// and PUT /api/config/mqtt refuse such an address without quoting it; one stored before that makes the
// hub say why it does not connect, again without showing it.
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { loadConfig } from '../../src/config/load.js';
import { createMqttCheck } from '../../src/health/checks.js';
import { MqttPublisher } from '../../src/mqtt/publisher.js';
import { configFile, problemsOf } from '../config/helpers.js';
import { call } from '../support/http.js';
import { answered, assertProblem } from '../support/problem.js';
import { startService } from '../support/service.js';
import { adminToken } from '../support/tokens.js';
import { capturedLog, publisherOptions } from './helpers.js';

const SECRET = 'S3cr3tPw-XYZZY';
const EXPECTED =
  'must be a host name, an IPv4 address or an IPv6 address without brackets (no scheme, user name, password, port or path: ' +
  'the port is Mqtt.Port, the login Mqtt.Username and Mqtt.Password)';
const NOT_SHOWN = '(not shown: not a host name or address, it may hold credentials)';
const REFUSED = [
  `mqtt://u:${SECRET}@127.0.0.1:1883`, `u:${SECRET}@broker.lan`, `broker.lan/${SECRET}`, '127.0.0.1:1883', '[::1]', 'broker lan', 'tcp://broker.lan',
  // Names DNS cannot take: an empty label, a label over 63 characters, a name over 253.
  'broker..lan', '.', '.broker.lan', 'broker.lan..', `${'b'.repeat(64)}.lan`, `${'b'.repeat(63)}.`.repeat(4) + 'lan',
];
const ACCEPTED = ['localhost', 'broker.lan', 'broker.lan.', 'mqtt_broker-1.home.arpa', `${'b'.repeat(63)}.lan`, '192.168.1.20', '::1', 'fe80::1%eth0', '::ffff:192.0.2.1', ''];

describe('Mqtt.BrokerAddress is a host name or address', () => {
  for (const value of REFUSED) {
    it(`${JSON.stringify(value)} is refused, in a file as in a flag, and not quoted`, () => {
      const file = configFile({ Mqtt: { BrokerAddress: value } });
      assert.deepEqual(problemsOf({ file }), [`Mqtt.BrokerAddress: ${NOT_SHOWN} from file ${file} is invalid: ${EXPECTED}`]);
      assert.deepEqual(problemsOf({ flags: { 'Mqtt.BrokerAddress': value } }), [`Mqtt.BrokerAddress: ${NOT_SHOWN} from flag --Mqtt.BrokerAddress is invalid: ${EXPECTED}`]);
    });
  }

  it('host names, IPv4 and IPv6 addresses (a zone too) and nothing at all are taken', () => {
    for (const value of ACCEPTED) assert.equal(loadConfig({ flags: { 'Mqtt.BrokerAddress': value } }).config.Mqtt.BrokerAddress, value);
  });

  it('PUT /api/config/mqtt refuses a URL with a login, without echoing it, and takes a host', async (t) => {
    const svc = await startService();
    t.after(() => svc.stop());
    const admin = await adminToken(svc);
    const res = await call(svc.url, 'PUT', '/api/config/mqtt', { token: admin, body: { brokerAddress: `mqtt://u:${SECRET}@127.0.0.1` } });
    assertProblem(answered(res), 400, {
      title: 'One or more validation errors occurred.',
      detail: 'The request body is invalid.',
      errors: { brokerAddress: ['must be a host name, an IPv4 address or an IPv6 address without brackets (no scheme, user name, password, port or path: the port is Mqtt.Port, the login Mqtt.Username and Mqtt.Password)'] },
    });
    assert.ok(!res.text.includes(SECRET));
    const ok = await call(svc.url, 'PUT', '/api/config/mqtt', { token: admin, body: { brokerAddress: 'broker.lan' } });
    assert.equal(ok.status, 200);
    assert.equal(ok.json.brokerAddress, 'broker.lan');
  });
});

describe('a broker address that is no host, stored before it was refused', () => {
  const cleanup: (() => Promise<unknown> | void)[] = [];
  after(async () => {
    for (const c of cleanup.reverse()) await c();
  });

  it('is not connected to, and neither the log nor health shows it', async () => {
    const { lines, logger } = capturedLog('Trace');
    const pub = new MqttPublisher(publisherOptions(1883, { brokerAddress: `mqtt://u:${SECRET}@127.0.0.1:1883`, logger }));
    cleanup.push(() => pub.close());
    pub.start();
    const reason =
      'Mqtt.BrokerAddress is not a host name or address (it is not shown: it may hold a login): ' +
      'set a host name or address, the port in Mqtt.Port and the login in Mqtt.Username and Mqtt.Password';
    const broker = '(Mqtt.BrokerAddress, not a host name or address):1883';
    assert.deepEqual(pub.state(), { connected: false, lastError: reason, broker });
    assert.deepEqual(lines, [`fail: Mqtt: not connecting to MQTT broker ${broker}: ${reason}`]);
    const health = await createMqttCheck(pub)();
    assert.equal(health.status, 'Degraded');
    assert.equal(health.description, reason);
    assert.ok(!JSON.stringify(health).includes(SECRET));
  });
});
