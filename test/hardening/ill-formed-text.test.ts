// Identifiers and every other text a client sends must be well-formed: a string holding a lone UTF-16
// surrogate (JSON's `"\ud800"`, MessagePack's CESU-8 bytes) has no UTF-8 form, so it used to be
// answered 200 and stored changed (a device that could not reach its own status path, and an id that
// blocked a later genuine registration). Properties over every string field of every endpoint: a lone
// surrogate anywhere in it is a 400 naming the field; well-formed astral text (emoji) is accepted and
// comes back unchanged. The hub refuses such arguments with the binding-failure completion, in JSON and
// MessagePack alike, and keeps the connection.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import { silentLogger } from '../../src/log/logger.js';
import { startEchoServer, type EchoServer } from '../../src/upstream/echo-server.js';
import { call } from '../support/http.js';
import { startService, type TestService } from '../support/service.js';
import { adminToken } from '../support/tokens.js';
import { speechPackets } from './daemon.js';
import { HubWire, type Protocol } from './hub-wire.js';
import { checkProperty } from './property.js';

const ILL_FORMED = 'must be well-formed Unicode text (it holds a lone UTF-16 surrogate)';

let echo: EchoServer;
let service: TestService;
let admin: string;
let device: { id: string; token: string };
let sessionId: string;

before(async () => {
  echo = await startEchoServer({ host: '127.0.0.1', port: 0, logger: silentLogger });
  service = await startService({
    flags: { 'VoiceService.ServerUrl': `ws://127.0.0.1:${echo.port}/voice`, 'Mqtt.BrokerAddress': '', 'DeviceManagement.MaxDevices': 1000 },
  });
  admin = await adminToken(service);
  const reg = await call(service.url, 'POST', '/api/device/register', { body: { deviceId: 'kitchen-1', deviceName: 'Kitchen', deviceType: 'speaker' } });
  assert.equal(reg.status, 200, reg.text);
  device = { id: 'kitchen-1', token: reg.json.deviceToken };
  const start = await call(service.url, 'POST', '/api/voice/start', { token: device.token, body: { deviceId: device.id, sessionConfig: { audioFormat: 'opus' } } });
  assert.equal(start.status, 200, start.text);
  sessionId = start.json.sessionId;
});

after(async () => {
  await service?.stop();
  await echo?.close();
});

/** Printable, well-formed text of up to `max` code points, astral ones included (no controls: ids refuse them). */
const wellFormed = (max: number): fc.Arbitrary<string> =>
  fc.string({ unit: 'binary', maxLength: max }).map((s) => s.replace(/[\u0000-\u001f\u007f-\u009f]/g, 'x'));

/** Well-formed text with one lone surrogate somewhere in it; a well-formed neighbour can never pair with it. */
const illFormed = fc
  .tuple(wellFormed(6), fc.integer({ min: 0xd800, max: 0xdfff }), wellFormed(6))
  .map(([before, unit, rest]) => before + String.fromCharCode(unit) + rest);

/** One string field of one endpoint, in a body that is valid but for that field. */
interface Field {
  method: string;
  path: () => string;
  token: () => string | undefined;
  body: () => Record<string, unknown>;
  /** Where the string goes, as the error names it. */
  field: string;
  /** What else the field's own rule says about the text (a pattern, an enum). */
  also?: string[];
}

const FIELDS: Field[] = [
  ...['deviceId', 'deviceName', 'deviceType', 'location', 'capabilities[1]', 'firmware'].map((field) => ({
    method: 'POST', path: () => '/api/device/register', token: () => undefined,
    body: () => ({ deviceId: 'fresh-1', deviceName: 'Fresh', deviceType: 'speaker', capabilities: ['audio', 'wake-word'], location: 'hall' }), field,
  })),
  {
    method: 'PUT', path: () => `/api/device/${device.id}/status`, token: () => device.token, body: () => ({ status: 'online', batteryLevel: 50 }),
    field: 'status', also: ['must match pattern "^[A-Za-z0-9_.-]{1,32}$"'],
  },
  ...['deviceId', 'userId', 'sessionConfig.audioFormat'].map((field) => ({
    method: 'POST', path: () => '/api/voice/start', token: () => device.token,
    body: () => ({ deviceId: device.id, userId: 'anna', sessionConfig: { audioFormat: 'opus', sampleRate: 16000 } }), field,
    ...(field === 'sessionConfig.audioFormat' ? { also: ['must be one of "opus"'] } : {}),
  })),
  { method: 'POST', path: () => '/api/voice/stop', token: () => device.token, body: () => ({ sessionId }), field: 'sessionId' },
  ...['sessionId', 'text', 'messageType'].map((field) => ({
    method: 'POST', path: () => '/api/voice/message', token: () => device.token, body: () => ({ sessionId, text: 'hello', messageType: 'text' }), field,
  })),
  { method: 'PUT', path: () => '/api/config/voice', token: () => admin, body: () => ({ wakeWords: ['computer', 'jarvis'] }), field: 'wakeWords[1]' },
  ...['brokerAddress', 'username'].map((field) => ({
    method: 'PUT', path: () => '/api/config/mqtt', token: () => admin, body: () => ({ brokerAddress: 'broker.lan', username: 'hub' }), field,
  })),
  // The body of a category is checked for ill-formed text before the category's own schema, which is
  // then not reached: no pattern message here.
  { method: 'PUT', path: () => '/api/config/device', token: () => admin, body: () => ({ tokenExpiration: '24:00:00' }), field: 'tokenExpiration' },
];

/** `body` with `text` where the error key `field` names (`sessionConfig.audioFormat`, `capabilities[1]`). */
function withText(body: Record<string, unknown>, field: string, text: string): Record<string, unknown> {
  const keys = field.match(/[^.[\]]+/g)!;
  let at: Record<string, unknown> = body;
  for (const k of keys.slice(0, -1)) at = at[k] as Record<string, unknown>;
  at[keys.at(-1)!] = text;
  return body;
}

async function assertRefused(res: Awaited<ReturnType<typeof call>>, errors: Record<string, string[]>): Promise<void> {
  assert.equal(res.status, 400, res.text);
  assert.equal(res.headers.get('content-type'), 'application/problem+json');
  const { traceId, ...rest } = res.json as Record<string, unknown>;
  assert.match(String(traceId), /^00-[0-9a-f]{32}-[0-9a-f]{16}-00$/);
  assert.deepEqual(rest, {
    type: 'https://tools.ietf.org/html/rfc9110#section-15.5.1',
    title: 'One or more validation errors occurred.',
    status: 400,
    detail: 'The request body is invalid.',
    errors,
  });
}

const devicesNow = async (): Promise<Array<{ id: string; name: string }>> =>
  (await call(service.url, 'GET', '/api/device/list', { token: admin })).json.devices;

describe('HTTP: a lone surrogate in any string field', () => {
  it('is a 400 naming the field, for every string field of every endpoint, and changes nothing', async () => {
    await checkProperty(
      fc.asyncProperty(fc.constantFrom(...FIELDS), illFormed, async (f, text) => {
        const res = await call(service.url, f.method, f.path(), { token: f.token(), body: withText(f.body(), f.field, text) });
        await assertRefused(res, { [f.field]: [ILL_FORMED, ...(f.also ?? [])] });
      }),
      150,
    );
    assert.deepEqual((await devicesNow()).map((d) => d.id), [device.id], 'no refused registration was stored');
    const voice = await call(service.url, 'GET', '/api/config/voice', { token: admin });
    assert.deepEqual(voice.json.wakeWords, []);
    assert.equal((await call(service.url, 'GET', '/api/config/mqtt', { token: admin })).json.brokerAddress, '');
  });

  it('every field is covered: the table names each string of each request schema', async () => {
    const { REQUEST_SCHEMAS } = await import('../../src/http/schemas.js');
    const strings = (schema: Record<string, unknown>, prefix: string): string[] => {
      const props = (schema.properties ?? {}) as Record<string, Record<string, unknown>>;
      return Object.entries(props).flatMap(([k, s]) => {
        const types = ([] as unknown[]).concat(s.type);
        if (types.includes('string')) return [`${prefix}${k}`];
        if (types.includes('array') && ((s.items as Record<string, unknown>)?.type === 'string')) return [`${prefix}${k}[]`];
        if (types.includes('object')) return strings(s, `${prefix}${k}.`);
        return [];
      });
    };
    const declared = Object.entries(REQUEST_SCHEMAS).flatMap(([name, s]) => strings(s, `${name}:`)).sort();
    const tested = new Set(
      FIELDS.map((f) => {
        const schema = { '/api/device/register': 'RegisterDeviceRequest', '/api/voice/start': 'StartSessionRequest', '/api/voice/stop': 'StopSessionRequest', '/api/voice/message': 'SessionMessageRequest', '/api/config/voice': 'VoiceSettings', '/api/config/mqtt': 'MqttSettings', '/api/config/device': 'DeviceSettings' }[f.path()] ?? 'DeviceStatusRequest';
        return `${schema}:${f.field.replace(/\[\d+\]$/, '[]')}`;
      }),
    );
    assert.deepEqual(declared.filter((d) => !tested.has(d)), []);
  });

  it('several at once: each field is named, with its other problems, property names included', async () => {
    const res = await call(service.url, 'POST', '/api/device/register', {
      body: { deviceId: 'a\ud800', deviceName: '\udfff'.repeat(300), deviceType: 'speaker', capabilities: ['ok', '\ud83d'], location: 'hall', extra: { '\udc00key': 1, deep: [['\ud800']] } },
    });
    await assertRefused(res, {
      deviceId: [ILL_FORMED],
      deviceName: [ILL_FORMED, 'must NOT have more than 256 characters'],
      'capabilities[1]': [ILL_FORMED],
      'extra.\udc00key': [ILL_FORMED],
      'extra.deep[0][0]': [ILL_FORMED],
    });
    const whole = await call(service.url, 'PUT', '/api/config/voice', { token: admin, raw: '"\\ud800"', headers: { 'content-type': 'application/json' } });
    await assertRefused(whole, { $: [ILL_FORMED, 'must be object'] });
  });

  it('a percent-encoded lone surrogate in a path is refused before any handler', async () => {
    const res = await call(service.url, 'PUT', '/api/device/%ED%A0%80/status', { token: admin, body: { status: 'online' } });
    assert.equal(res.status, 400, res.text);
    assert.equal(res.json.detail, 'The request path is not valid percent-encoding.');
  });
});

describe('HTTP: well-formed astral text', () => {
  it('is accepted in ids, names and settings, stored unchanged, and reaches its own paths', async () => {
    const astral = fc
      .tuple(wellFormed(10), fc.integer({ min: 0x10000, max: 0x10ffff }), wellFormed(10))
      .map(([a, cp, b]) => a + String.fromCodePoint(cp) + b);
    let n = 0;
    await checkProperty(
      fc.asyncProperty(astral, astral, async (idPart, name) => {
        const id = `dev-${++n}-${idPart}`;
        const reg = await call(service.url, 'POST', '/api/device/register', {
          body: { deviceId: id, deviceName: name, deviceType: 'speaker', capabilities: [name], location: name },
        });
        assert.equal(reg.status, 200, reg.text);
        assert.deepEqual([reg.json.deviceInfo.id, reg.json.deviceInfo.name], [id, name]);
        const listed = (await devicesNow()).find((d) => d.id === id);
        assert.deepEqual(listed && [listed.id, listed.name], [id, name], 'listed unchanged');
        const path = `/api/device/${encodeURIComponent(id)}`;
        const status = await call(service.url, 'PUT', `${path}/status`, { token: reg.json.deviceToken, body: { status: 'busy' } });
        assert.equal(status.status, 200, status.text);
        assert.equal(status.json.id, id);
        const removed = await call(service.url, 'DELETE', path, { token: admin });
        assert.equal(removed.status, 200, removed.text);
      }),
      25,
    );
    const words = ['hey 🎙️', 'computer 💡', '𝔍arvis'];
    const put = await call(service.url, 'PUT', '/api/config/voice', { token: admin, body: { wakeWords: words } });
    assert.equal(put.status, 200, put.text);
    assert.deepEqual((await call(service.url, 'GET', '/api/config/voice', { token: admin })).json.wakeWords, words);
  });
});

describe('hub: a lone surrogate in any argument', () => {
  const packet = speechPackets()[10]!;
  const BINDING_FAILURE = (target: string): string => `Failed to invoke '${target}' due to an error on the server.`;

  for (const protocol of ['json', 'messagepack'] as Protocol[]) {
    it(`${protocol}: fails the invocation as a binding failure, runs nothing, keeps the connection`, async () => {
      const wire = await HubWire.connect(service.url, protocol);
      try {
        const audio = protocol === 'json' ? packet.toString('base64') : packet;
        await checkProperty(
          fc.asyncProperty(illFormed, fc.constantFrom('JoinSession:0', 'JoinSession:1', 'SendAudioData:0'), async (text, where) => {
            const [target, index] = where.split(':') as [string, string];
            const args: unknown[] = target === 'JoinSession' ? [sessionId, device.token] : [sessionId, audio];
            args[Number(index)] = text;
            const completion = await wire.invoke(target, args);
            assert.deepEqual(completion, { type: 3, invocationId: completion.invocationId, error: BINDING_FAILURE(target) });
          }),
          30,
        );
        assert.deepEqual([wire.of('Error'), wire.of('SessionJoined'), wire.of('AudioProcessed')], [[], [], []], 'no method ran');
        assert.ok(wire.open, 'the connection stays open');
        await wire.join(sessionId, device.token);
        wire.send('SendAudioData', [sessionId, audio]);
        await wire.waitFor((m) => m.target === 'AudioProcessed', 5000, 'AudioProcessed');
      } finally {
        wire.close();
      }
    });
  }
});
