// One JSON Schema per request body. The validators (src/validation) are made from these and the
// OpenAPI document embeds the very same objects, so documentation and validation cannot drift apart.
// Data only: the build compiles these into standalone code, so nothing here may depend on run time.
import { DEVICE_ID_MAX_LENGTH } from '../devices/device-id.js';
import { OPUS_CHANNEL_COUNTS, OPUS_SAMPLE_RATES } from '../opus-format.js';
import { CATEGORY_SCHEMAS } from '../settings/schemas.js';

export type JsonSchema = Record<string, unknown>;

/** The JSON types a schema's `type` names (`'integer'`, `['number', 'null']`), none when it names none. */
export const schemaTypes = (schema: JsonSchema): string[] =>
  typeof schema.type === 'string' ? [schema.type] : Array.isArray(schema.type) ? (schema.type as string[]) : [];

const id = (description: string): JsonSchema => ({
  type: 'string',
  minLength: 1,
  maxLength: DEVICE_ID_MAX_LENGTH,
  // Printable text only: ids end up in MQTT topics, logs and URLs. No control character, C0, DEL or C1
  // (U+0085 is a line break to many terminals and log readers). Not `.` or `..`: in a URL those are
  // dot segments, which browsers, fetch and curl remove before sending, so such a device could be
  // registered but never addressed (`/api/device/../status` goes out as `/api/status`).
  pattern: '^(?!\\.\\.?$)[^\\u0000-\\u001f\\u007f-\\u009f]*$',
  description,
});
/**
 * Free text the database keeps as it is (a device's name, type and location, a session's user): any
 * character but U+0000. sql.js reads a stored text up to its first NUL, so a name `ab\u0000cd` was
 * answered 200 and stored as `ab`: the device list, and every start after, showed another value than
 * the one acknowledged. (Text the database keeps as JSON, capabilities and settings, keeps it escaped.)
 */
const storedText = (schema: JsonSchema): JsonSchema => ({
  type: 'string',
  ...schema,
  pattern: '^[^\\u0000]*$',
  'x-expected': 'must not hold U+0000 (NUL), which the database cannot keep',
});
const percent = (description: string): JsonSchema => ({ type: ['number', 'null'], minimum: 0, maximum: 100, description });

export const REQUEST_SCHEMAS: Record<string, JsonSchema> = {
  RegisterDeviceRequest: {
    type: 'object',
    required: ['deviceId', 'deviceName', 'deviceType'],
    properties: {
      deviceId: id('Unique id chosen by the device; becomes the device `id`.'),
      deviceName: storedText({ minLength: 1, maxLength: 256 }),
      deviceType: storedText({ minLength: 1, maxLength: 128 }),
      capabilities: { type: 'array', maxItems: 64, items: { type: 'string', minLength: 1, maxLength: 64 }, default: [] },
      location: storedText({ maxLength: 256, default: '' }),
    },
  },
  DeviceStatusRequest: {
    type: 'object',
    required: ['status'],
    properties: {
      status: { type: 'string', pattern: '^[A-Za-z0-9_.-]{1,32}$', description: 'e.g. online, offline, busy, sleeping' },
      batteryLevel: percent('Battery charge in percent.'),
      temperature: { type: ['number', 'null'], minimum: -100, maximum: 200, description: 'Temperature in degrees Celsius.' },
      memoryUsage: percent('Memory in use, percent.'),
      cpuUsage: percent('CPU load, percent.'),
    },
  },
  StartSessionRequest: {
    type: 'object',
    required: ['deviceId'],
    properties: {
      deviceId: id('The registered device that owns the session.'),
      userId: storedText({ maxLength: 128, default: '' }),
      sessionConfig: {
        type: 'object',
        properties: {
          audioFormat: { type: 'string', enum: ['opus'] },
          sampleRate: { type: 'integer', enum: [...OPUS_SAMPLE_RATES], description: 'Defaults to the voice category audioSampleRate.' },
          channels: { type: 'integer', enum: [...OPUS_CHANNEL_COUNTS], description: 'Defaults to the voice category audioChannels.' },
          autoMode: { type: 'boolean', default: false },
        },
      },
    },
  },
  StopSessionRequest: {
    type: 'object',
    required: ['sessionId'],
    properties: { sessionId: id('Session id returned by start.') },
  },
  SessionMessageRequest: {
    type: 'object',
    required: ['sessionId', 'text'],
    properties: {
      sessionId: id('Session id returned by start.'),
      text: { type: 'string', minLength: 1, maxLength: 4096 },
      messageType: { type: 'string', minLength: 1, maxLength: 32, default: 'text' },
    },
  },
  ...CATEGORY_SCHEMAS,
  // PUT /api/config/{category}: the category's own schema (CATEGORY_SCHEMAS) is applied by the handler,
  // after the category is known to exist.
  ConfigCategoryUpdate: {
    type: 'object',
    description: 'VoiceSettings, DeviceSettings or MqttSettings, according to {category}.',
  },
};
