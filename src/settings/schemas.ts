// Write bodies of the configuration categories (docs/protocol.md, "Configuration categories"): every key
// optional (PUT merges), unknown keys and out-of-range values refused.
const SAMPLE_RATES = [8000, 12000, 16000, 24000, 48000];
const TIME_SPAN = '^(\\d+\\.)?\\d{1,3}:[0-5]\\d:[0-5]\\d(\\.\\d{1,7})?$';

export const CATEGORY_SCHEMAS: Record<string, Record<string, unknown>> = {
  VoiceSettings: {
    type: 'object',
    additionalProperties: false,
    properties: {
      enableVoice: { type: 'boolean' },
      audioSampleRate: { type: 'integer', enum: SAMPLE_RATES },
      audioChannels: { type: 'integer', enum: [1, 2] },
      enableNoiseReduction: { type: 'boolean' },
      wakeWords: { type: 'array', maxItems: 32, items: { type: 'string', minLength: 1, maxLength: 64 } },
    },
  },
  DeviceSettings: {
    type: 'object',
    additionalProperties: false,
    properties: {
      allowDeviceRegistration: { type: 'boolean' },
      maxDevices: { type: 'integer', minimum: 0, maximum: 100000 },
      tokenExpiration: { type: 'string', pattern: TIME_SPAN, description: '.NET time span, e.g. 24:00:00 or 7.00:00:00' },
    },
  },
  MqttSettings: {
    type: 'object',
    additionalProperties: false,
    properties: {
      brokerAddress: { type: 'string', minLength: 1, maxLength: 253 },
      port: { type: 'integer', minimum: 1, maximum: 65535 },
      username: { type: 'string', maxLength: 256 },
    },
  },
};

/** Category name in the URL -> its write schema. */
export const CATEGORY_BODY: Record<string, string> = { voice: 'VoiceSettings', device: 'DeviceSettings', mqtt: 'MqttSettings' };
