// What Swagger UI's "Try it out" fills in: one realistic example per request body and path parameter
// (a kitchen satellite speaker, metrics in their ranges, a session of the shipped audio format), so a
// trial call does something sensible instead of sending text generated from a pattern. Each example is
// checked against the very schema the service validates with (test/openapi).
import type { CategoryName, CategoryValues } from '../../settings/definitions.js';

type Json = Record<string, unknown>;

/** The device every example is about. */
export const EXAMPLE_DEVICE_ID = 'kitchen-satellite';
/** A session id as POST /api/voice/start returns it (a UUID). */
const EXAMPLE_SESSION_ID = '3f2b8c1e-5a47-4d2e-9b6f-0c8d1e2a4b7c';

/** Request body examples by request schema name. */
export const REQUEST_EXAMPLES: Readonly<Record<string, Json>> = {
  RegisterDeviceRequest: {
    deviceId: EXAMPLE_DEVICE_ID,
    deviceName: 'Kitchen satellite',
    deviceType: 'esp32-s3-box-3',
    capabilities: ['audio', 'wake-word', 'led-ring'],
    location: 'kitchen',
  },
  DeviceStatusRequest: { status: 'online', batteryLevel: 87, temperature: 41.5, memoryUsage: 62.5, cpuUsage: 18 },
  StartSessionRequest: {
    deviceId: EXAMPLE_DEVICE_ID,
    userId: 'alice',
    sessionConfig: { audioFormat: 'opus', sampleRate: 16000, channels: 1, autoMode: false },
  },
  StopSessionRequest: { sessionId: EXAMPLE_SESSION_ID },
  SessionMessageRequest: { sessionId: EXAMPLE_SESSION_ID, text: 'What is the weather like today?', messageType: 'text' },
};

/** PUT /api/config/{category}: one example per category, each a partial update as PUT merges it. */
export const CATEGORY_EXAMPLES: { readonly [C in CategoryName]: Partial<CategoryValues<C>> } = {
  voice: { enableNoiseReduction: true, wakeWords: ['hey jarvis', 'ok kitchen'] },
  device: { maxDevices: 20, tokenExpiration: '24:00:00' },
  mqtt: { brokerAddress: 'homeassistant.local', port: 1883, username: 'voice-hub' },
};

/** Path parameter examples by parameter name. */
export const PARAMETER_EXAMPLES: Readonly<Record<string, string>> = {
  deviceId: EXAMPLE_DEVICE_ID,
  category: 'voice',
};
