// One JSON Schema per request body. ajv validates with these and the OpenAPI document embeds the
// very same objects, so documentation and validation cannot drift apart.
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import { addSchemaVocabulary } from '../config/keywords.js';
import { DomainError } from '../errors.js';
import { OPUS_CHANNEL_COUNTS, OPUS_SAMPLE_RATES } from '../opus-format.js';
import { CATEGORY_SCHEMAS } from '../settings/schemas.js';
import { ILL_FORMED_TEXT, illFormedTextPaths } from '../well-formed.js';

export type JsonSchema = Record<string, unknown>;

const id = (description: string): JsonSchema => ({
  type: 'string',
  minLength: 1,
  maxLength: 128,
  // Printable text only: ids end up in MQTT topics, logs and URLs.
  pattern: '^[^\\u0000-\\u001f\\u007f]*$',
  description,
});
const percent = (description: string): JsonSchema => ({ type: ['number', 'null'], minimum: 0, maximum: 100, description });

export const REQUEST_SCHEMAS: Record<string, JsonSchema> = {
  RegisterDeviceRequest: {
    type: 'object',
    required: ['deviceId', 'deviceName', 'deviceType'],
    properties: {
      deviceId: id('Unique id chosen by the device; becomes the device `id`.'),
      deviceName: { type: 'string', minLength: 1, maxLength: 256 },
      deviceType: { type: 'string', minLength: 1, maxLength: 128 },
      capabilities: { type: 'array', maxItems: 64, items: { type: 'string', minLength: 1, maxLength: 64 }, default: [] },
      location: { type: 'string', maxLength: 256, default: '' },
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
      userId: { type: 'string', maxLength: 128, default: '' },
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
};

// Each schema is compiled on its first request, not at start-up: compiling all of them (and ajv's
// meta-schema, to check ours) was a fifth of the start-up time, which a Pi pays at every boot. The
// schemas are ours and test/api compiles each one, so the meta-schema check is skipped.
const ajv = new Ajv({ allErrors: true, strict: false, validateSchema: false });
// The category schemas are made of configuration keys: a time span is checked as in a configuration file.
addSchemaVocabulary(ajv);
const validators = new Map<string, ValidateFunction>();

function validatorFor(schemaName: string): ValidateFunction {
  let validate = validators.get(schemaName);
  if (!validate) {
    if (!Object.hasOwn(REQUEST_SCHEMAS, schemaName)) throw new Error(`no schema named ${schemaName}`);
    validate = ajv.compile(REQUEST_SCHEMAS[schemaName]!);
    validators.set(schemaName, validate);
  }
  return validate;
}

/**
 * Validates `body` against the named schema; throws a DomainError carrying per-field messages. Every
 * string in the body, named by the schema or not, must be well-formed text: that is a property of
 * string validation here, not of particular fields, so no id, name or message can be stored changed.
 */
export function validateBody(schemaName: string, body: unknown): void {
  const validate = validatorFor(schemaName);
  const valid = validate(body);
  const illFormed = illFormedTextPaths(body);
  if (valid && illFormed.length === 0) return;
  throw new DomainError('invalid_argument', 'The request body is invalid.', fieldErrors(validate.errors ?? [], illFormed));
}

function fieldErrors(errors: ErrorObject[], illFormed: Array<Array<string | number>>): Record<string, string[]> {
  // A Map, not an object literal: a field may be named `__proto__`.
  const out = new Map<string, string[]>();
  for (const path of illFormed) {
    const key = path.join('.') || '$';
    out.set(key, [...(out.get(key) ?? []), ILL_FORMED_TEXT]);
  }
  for (const e of errors) {
    let field = e.instancePath.split('/').slice(1).join('.');
    let message = e.message ?? 'is invalid';
    if (e.keyword === 'required') {
      const missing = String((e.params as { missingProperty: string }).missingProperty);
      field = field ? `${field}.${missing}` : missing;
      message = `The ${missing} field is required.`;
    } else if (e.keyword === 'additionalProperties') {
      const extra = String((e.params as { additionalProperty: string }).additionalProperty);
      field = field ? `${field}.${extra}` : extra;
      message = `Unknown setting '${extra}'.`;
    } else if (e.keyword === 'enum') {
      message = `must be one of ${(e.params as { allowedValues: unknown[] }).allowedValues.map((v) => JSON.stringify(v)).join(', ')}`;
    }
    const key = field || '$';
    out.set(key, [...(out.get(key) ?? []), message]);
  }
  return Object.fromEntries(out);
}

// PUT /api/config/{category}: the category's own schema (CATEGORY_SCHEMAS) is applied by the handler,
// after the category is known to exist.
REQUEST_SCHEMAS.ConfigCategoryUpdate = {
  type: 'object',
  description: 'VoiceSettings, DeviceSettings or MqttSettings, according to {category}.',
};
validators.set('ConfigCategoryUpdate', ajv.compile(REQUEST_SCHEMAS.ConfigCategoryUpdate));
