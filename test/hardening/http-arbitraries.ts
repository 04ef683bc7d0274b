// fast-check generators for hostile HTTP: request targets (percent-encoding garbage, `..`, very long),
// Authorization / Content-Type / X-API-Key values, bodies for every request schema with wrong types
// in every field, and framing faults (Content-Length lies, broken chunking).
import fc from 'fast-check';
import { OPUS_CHANNEL_COUNTS, OPUS_SAMPLE_RATES } from '../../src/opus-format.js';

/** Values of the wrong type for any field. */
export const wrongType: fc.Arbitrary<unknown> = fc.oneof(
  fc.string({ maxLength: 20 }),
  fc.string({ unit: 'binary', maxLength: 20 }),
  fc.integer(),
  fc.double(),
  fc.boolean(),
  fc.constant(null),
  fc.constantFrom(1e308, -0, 2 ** 53 + 1, '', '__proto__', 'constructor', '\u0000', '\ud800', 'x'.repeat(5000)),
  fc.array(fc.jsonValue({ maxDepth: 2 }), { maxLength: 5 }),
  fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 4 }),
);

const maybe = <T>(arb: fc.Arbitrary<T>): fc.Arbitrary<T | unknown> => fc.oneof({ weight: 3, arbitrary: arb }, { weight: 1, arbitrary: wrongType });

/** ids: mostly plausible, sometimes hostile. */
export const idText: fc.Arbitrary<string> = fc.oneof(
  fc.stringMatching(/^[a-z0-9-]{1,16}$/),
  fc.string({ unit: 'grapheme', maxLength: 40 }),
  fc.constantFrom('..', '../..', '%2e%2e', '__proto__', 'constructor', 'a/b', 'x'.repeat(129), '\u0000', 'kitchen\r\nX-Evil: 1'),
);

export const timeSpanText: fc.Arbitrary<string> = fc.oneof(
  fc.stringMatching(/^(\d{1,10}\.)?\d{1,3}:[0-5]\d:[0-5]\d(\.\d{1,7})?$/),
  fc.constantFrom('00:00:00', '00:00:01', '24:00:00', '99999999.23:59:59', '123456789.00:00:00', '3650.00:00:00'),
);

export function bodyFor(schema: string, known: { deviceId: string; sessionId: () => string }): fc.Arbitrary<unknown> {
  const opt = { requiredKeys: [] as never[] };
  switch (schema) {
    case 'register':
      return fc.record({
        deviceId: maybe(idText),
        deviceName: maybe(fc.string({ maxLength: 300 })),
        deviceType: maybe(fc.string({ maxLength: 20 })),
        capabilities: maybe(fc.array(maybe(fc.string({ maxLength: 70 })), { maxLength: 70 })),
        location: maybe(fc.string({ maxLength: 300 })),
      }, opt);
    case 'status':
      return fc.record({
        status: maybe(fc.stringMatching(/^[A-Za-z0-9_.-]{0,40}$/)),
        batteryLevel: maybe(fc.double()),
        temperature: maybe(fc.double()),
        memoryUsage: maybe(fc.oneof(fc.integer({ min: -10, max: 110 }), fc.constant(null))),
        cpuUsage: maybe(fc.double({ min: 0, max: 100, noNaN: true })),
      }, opt);
    case 'start':
      return fc.record({
        deviceId: maybe(fc.oneof(fc.constant(known.deviceId), idText)),
        userId: maybe(fc.string({ maxLength: 140 })),
        sessionConfig: maybe(fc.record({
          audioFormat: maybe(fc.constantFrom('opus', 'pcm', 'OPUS')),
          sampleRate: maybe(fc.constantFrom(...OPUS_SAMPLE_RATES, 44100, 0, -16000)),
          channels: maybe(fc.constantFrom(...OPUS_CHANNEL_COUNTS, 0, 3)),
          autoMode: maybe(fc.boolean()),
        }, opt)),
      }, opt);
    case 'stop':
      return fc.record({ sessionId: maybe(fc.oneof(fc.constant(null).map(() => known.sessionId()), idText)) }, opt);
    case 'message':
      return fc.record({
        sessionId: maybe(fc.oneof(fc.constant(null).map(() => known.sessionId()), idText)),
        text: maybe(fc.oneof(fc.string({ maxLength: 100 }), fc.constantFrom('!error boom', 'x'.repeat(4097)))),
        messageType: maybe(fc.string({ maxLength: 40 })),
      }, opt);
    case 'voice':
      return fc.record({
        // Never `enableVoice: false`: a 503 for voice that is switched off is correct, and would hide others.
        enableVoice: maybe(fc.constant(true)).filter((v) => v !== false),
        audioSampleRate: maybe(fc.constantFrom(8000, 16000, 48000, 44100)),
        audioChannels: maybe(fc.constantFrom(1, 2, 3)),
        enableNoiseReduction: maybe(fc.boolean()),
        wakeWords: maybe(fc.array(maybe(fc.string({ maxLength: 70 })), { maxLength: 40 })),
      }, opt);
    case 'device':
      return fc.record({
        allowDeviceRegistration: maybe(fc.constant(true)).filter((v) => v !== false),
        maxDevices: maybe(fc.constantFrom(1000, 100000, 100001, -1)),
        tokenExpiration: maybe(timeSpanText),
      }, opt);
    case 'mqtt':
      return fc.record({
        brokerAddress: maybe(fc.string({ maxLength: 260 })),
        port: maybe(fc.integer({ min: -1, max: 70000 })),
        username: maybe(fc.string({ maxLength: 300 })),
      }, opt);
    default:
      throw new Error(`no body generator for ${schema}`);
  }
}

/** JSON text that is not what the schema wants: other JSON, broken JSON, deep nesting, binary. */
export const hostileBodyText: fc.Arbitrary<string | Uint8Array> = fc.oneof(
  fc.jsonValue({ maxDepth: 4 }).map((v) => JSON.stringify(v) ?? 'null'),
  fc.jsonValue({ maxDepth: 3 }).chain((v) => {
    const text = JSON.stringify(v) ?? 'null';
    return fc.nat({ max: text.length }).map((n) => text.slice(0, n));
  }),
  fc.integer({ min: 1, max: 30_000 }).map((n) => '['.repeat(n) + ']'.repeat(n)),
  fc.integer({ min: 1, max: 20_000 }).map((n) => '{"a":'.repeat(n) + '1' + '}'.repeat(n)),
  fc.constantFrom(
    '{"__proto__":{"status":"x","isAdmin":true},"deviceId":"p"}',
    '{"constructor":{"prototype":{"polluted":1}}}',
    '{"deviceId":"dup","deviceId":{"x":1}}',
    '1e99999', '-', '\ufeff{}', '{"a":"\\ud800"}', 'null', '""',
  ),
  fc.uint8Array({ maxLength: 200 }),
  fc.integer({ min: 60_000, max: 70_000 }).map((n) => `{"deviceId":"${'x'.repeat(n)}"}`),
);

export const contentType: fc.Arbitrary<string | undefined> = fc.oneof(
  { weight: 6, arbitrary: fc.constant('application/json') },
  { weight: 3, arbitrary: fc.constantFrom(
    'application/json; charset=utf-8', 'APPLICATION/JSON', 'application/problem+json', 'application/json;;;',
    'text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', '', ';', 'application/',
  ) },
  { weight: 1, arbitrary: fc.constant(undefined) },
  { weight: 2, arbitrary: fc.string({ maxLength: 60 }).filter((s) => !/[\r\n]/.test(s)) },
);

/**
 * Random header values without CR/LF (which would end the header): mostly printable, since uWS's
 * parser drops a request with a control character before the application sees it.
 */
export const headerText = (maxLength: number): fc.Arbitrary<string> =>
  fc.oneof(
    { weight: 4, arbitrary: fc.string({ unit: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)), maxLength }) },
    { weight: 1, arbitrary: fc.string({ unit: 'binary-ascii', maxLength }).map((s) => s.replace(/[\r\n\u0000]/g, ' ')) },
  );

const b64url = (s: string): string => Buffer.from(s).toString('base64url');

/** Authorization values: valid tokens, forged and tampered ones, junk. */
export function authorization(tokens: { device: string; admin: string }): fc.Arbitrary<string | undefined> {
  const [h, p] = tokens.device.split('.');
  // Valid tokens are weighted up: most code runs only after authentication.
  return fc.oneof(
    { weight: 1, arbitrary: fc.constant(undefined) },
    { weight: 4, arbitrary: fc.constant(`Bearer ${tokens.device}`) },
    { weight: 4, arbitrary: fc.constant(`Bearer ${tokens.admin}`) },
    { weight: 1, arbitrary: headerText(100).map((s) => `Bearer ${s}`) },
    { weight: 1, arbitrary: headerText(100) },
    { weight: 1, arbitrary: fc.tuple(fc.jsonValue({ maxDepth: 2 }), fc.jsonValue({ maxDepth: 2 }), headerText(40))
      .map(([a, b, c]) => `Bearer ${b64url(JSON.stringify(a) ?? '')}.${b64url(JSON.stringify(b) ?? '')}.${b64url(c)}`) },
    { weight: 2, arbitrary: fc.constantFrom(
      'Bearer', 'Bearer ', 'bearer', 'Basic dXNlcjpwYXNz', `Bearer ${'a'.repeat(6000)}`, `Bearer ${tokens.device}x`,
      `Bearer ${h}.${b64url(JSON.stringify({ sub: 'admin', role: 'admin', exp: 9e9 }))}.${tokens.device.split('.')[2]}`,
      `Bearer ${b64url('{"alg":"none","typ":"JWT"}')}.${p}.`,
      `Bearer ${b64url('{"alg":"HS512"}')}.${p}.AAAA`,
      `Bearer ${tokens.device} ${tokens.device}`,
    ) },
  );
}

const pathSegment: fc.Arbitrary<string> = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom(
    'api', 'device', 'voice', 'config', 'register', 'list', 'status', 'token', 'start', 'stop', 'message', 'health',
    'swagger', 'v1', 'swagger.json', 'index.html', 'voice-hub', 'negotiate', 'mqtt', 'API', 'Device',
  ) },
  { weight: 3, arbitrary: fc.constantFrom(
    '..', '.', '', '%2e%2e', '%2F', '%00', '%zz', '%', '%C0%AF', '%ff%fe', '%E2%82', '~', '*', '%252e', '..%2f..%2f', ';', '%u002e',
  ) },
  { weight: 2, arbitrary: fc.string({ unit: 'grapheme', maxLength: 20 }).map(encodeURIComponent) },
  { weight: 2, arbitrary: fc.stringMatching(/^[A-Za-z0-9%._~!$&'()*+,;=:@-]{0,30}$/) },
  { weight: 1, arbitrary: fc.integer({ min: 1000, max: 12_000 }).map((n) => 'a'.repeat(n)) },
);

/** A request target: segments, maybe a query, maybe an absolute or asterisk form. */
export const requestTarget: fc.Arbitrary<string> = fc.oneof(
  { weight: 8, arbitrary: fc.tuple(fc.array(pathSegment, { maxLength: 8 }), fc.option(fc.stringMatching(/^[A-Za-z0-9%=&?+._-]{0,40}$/)), fc.boolean())
    .map(([segs, query, trailing]) => '/' + segs.join('/') + (trailing ? '/' : '') + (query === null ? '' : `?${query}`)) },
  { weight: 1, arbitrary: fc.constantFrom('*', 'http://127.0.0.1/health', '//health', '/health#frag', '/health?access_token=x', '\\health') },
);

export const method: fc.Arbitrary<string> = fc.oneof(
  { weight: 8, arbitrary: fc.constantFrom('GET', 'POST', 'PUT', 'DELETE') },
  { weight: 2, arbitrary: fc.constantFrom('HEAD', 'OPTIONS', 'PATCH', 'TRACE', 'CONNECT', 'get', 'BREW') },
);
