// Response schemas and shared response descriptions for the OpenAPI document. Request schemas are
// not here: they live in src/http/schemas.ts, where ajv uses them.
import { HUB_EVENTS, hubEventNames, hubSchemaName } from '../hub-events.js';
import type { ResponseDoc } from '../../http/router.js';
import { CATEGORY_NAMES } from '../../settings/definitions.js';
import { valuesSchemaName } from '../../settings/schemas.js';

export const ref = (name: string): Record<string, unknown> => ({ $ref: `#/components/schemas/${name}` });

const nullableNumber = { type: 'number', nullable: true };

export const RESPONSE_SCHEMAS: Record<string, Record<string, unknown>> = {
  ProblemDetails: {
    type: 'object',
    description: 'RFC 7807 problem, as ASP.NET Core writes it.',
    properties: {
      type: { type: 'string' },
      title: { type: 'string' },
      status: { type: 'integer' },
      detail: { type: 'string' },
      traceId: { type: 'string' },
    },
  },
  ValidationProblemDetails: {
    type: 'object',
    properties: {
      type: { type: 'string' },
      title: { type: 'string', example: 'One or more validation errors occurred.' },
      status: { type: 'integer', example: 400 },
      detail: { type: 'string' },
      errors: { type: 'object', additionalProperties: { type: 'array', items: { type: 'string' } } },
      traceId: { type: 'string' },
    },
  },
  DeviceInfo: {
    type: 'object',
    properties: { id: { type: 'string' }, name: { type: 'string' }, status: { type: 'string' }, lastSeen: { type: 'string', format: 'date-time' } },
  },
  TokenGrant: {
    type: 'object',
    properties: {
      deviceToken: { type: 'string', description: 'HS256 JWT; send as Authorization: Bearer' },
      expiresAt: { type: 'string', format: 'date-time' },
      deviceInfo: ref('DeviceInfo'),
    },
  },
  Device: {
    type: 'object',
    properties: {
      id: { type: 'string' },
      name: { type: 'string' },
      type: { type: 'string' },
      status: { type: 'string' },
      location: { type: 'string' },
      lastSeen: { type: 'string', format: 'date-time' },
      metrics: {
        type: 'object',
        properties: { batteryLevel: nullableNumber, temperature: nullableNumber, memoryUsage: nullableNumber, cpuUsage: nullableNumber },
      },
    },
  },
  DeviceList: {
    type: 'object',
    properties: { devices: { type: 'array', items: ref('Device') }, totalCount: { type: 'integer' } },
  },
  ConfigCategory: {
    description: 'Effective values of the category {category} names: VoiceValues, DeviceValues or MqttValues.',
    anyOf: CATEGORY_NAMES.map((category) => ref(valuesSchemaName(category))),
  },
  StartSessionResponse: {
    type: 'object',
    properties: {
      sessionId: { type: 'string', format: 'uuid' },
      status: { type: 'string', example: 'started' },
      websocketUrl: { type: 'string', example: 'ws://192.168.1.20:5000/voice-hub' },
      message: { type: 'string' },
    },
  },
  VoiceSession: {
    type: 'object',
    properties: {
      id: { type: 'string', format: 'uuid' },
      sessionId: { type: 'string', format: 'uuid' },
      deviceId: { type: 'string' },
      userId: { type: 'string' },
      state: { type: 'string', enum: ['Starting', 'Active', 'Stopped', 'Failed'] },
      startTime: { type: 'string', format: 'date-time' },
      endTime: { type: 'string', format: 'date-time', nullable: true },
      endReason: { type: 'string', nullable: true },
      audioPacketsSent: { type: 'integer' },
      config: {
        type: 'object',
        properties: {
          audioFormat: { type: 'string' },
          sampleRate: { type: 'integer' },
          channels: { type: 'integer' },
          autoMode: { type: 'boolean' },
          serverUrl: {
            type: 'string',
            description: 'VoiceService.ServerUrl without user info, query or fragment',
            example: 'ws://voice.local:5050/voice',
          },
        },
      },
    },
  },
  HealthEntry: {
    type: 'object',
    properties: {
      status: { type: 'string', enum: ['Healthy', 'Degraded', 'Unhealthy'] },
      description: { type: 'string' },
      duration: { type: 'string', example: '00:00:00.0123456' },
      data: { type: 'object', additionalProperties: true },
      exception: { type: 'string' },
      tags: { type: 'array', items: { type: 'string' } },
    },
  },
  HealthReport: {
    type: 'object',
    description: "The shape of .NET's UIResponseWriter; entries voice-service, database, mqtt.",
    properties: {
      status: { type: 'string', enum: ['Healthy', 'Degraded', 'Unhealthy'] },
      totalDuration: { type: 'string', example: '00:00:00.0312345' },
      entries: { type: 'object', additionalProperties: ref('HealthEntry') },
    },
  },
  // The payloads of the hub events: no HTTP operation refers to them; they are here so the document shows
  // device developers the shapes the hub pushes. Generated from the hub's event map.
  ...hubEventSchemas(),
};

/** `Hub<target>` for every hub event whose payload is an object. */
function hubEventSchemas(): Record<string, Record<string, unknown>> {
  const out: Record<string, Record<string, unknown>> = {};
  for (const name of hubEventNames) {
    const schemaName = hubSchemaName(name);
    const { to, when, schema } = HUB_EVENTS[name];
    if (schemaName) out[schemaName] = { ...schema, description: `Hub event ${name}, to ${to}, ${when}.` };
  }
  return out;
}

const problemJson = { contentType: 'application/problem+json' };

export const PROBLEM = {
  any: { ...problemJson, schema: ref('ProblemDetails') },
  validation: { description: 'Invalid body or parameters', ...problemJson, schema: ref('ValidationProblemDetails') } as ResponseDoc,
  unauthorized: {
    description: 'Missing, malformed, expired, revoked or forged token',
    ...problemJson,
    schema: ref('ProblemDetails'),
    headers: {
      'WWW-Authenticate':
        'The bearer challenge (RFC 6750): `Bearer` without a token or with another scheme, `Bearer error="invalid_token", error_description="<why>"` for a token refused.',
    },
  } as ResponseDoc,
  /** An operation whose change is on disk before its answer: with the data directory not writable (full, read-only) nothing changes. */
  storage: { description: 'The database could not be written (data directory full or read-only, or the file would grow past Storage.MaxDatabaseBytes); nothing was changed', ...problemJson, schema: ref('ProblemDetails') } as ResponseDoc,
};
