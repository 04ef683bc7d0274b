// The health checks /health runs: the upstream voice server, the database and its disk, the MQTT broker.
import type { AppConfig } from '../config/types.js';
import { createDatabaseCheck, createVoiceServiceCheck, type HealthCheck } from '../health/checks.js';
import type { ConfiguredMqttPublisher } from '../mqtt/configured.js';
import type { ConfigCategories } from '../settings/categories.js';
import type { Store } from '../store/types.js';

export function createHealthChecks(
  config: AppConfig,
  deps: { store: Store; categories: ConfigCategories; mqtt: ConfiguredMqttPublisher; voiceCa: Buffer | undefined },
): Record<string, HealthCheck> {
  return {
    'voice-service': createVoiceServiceCheck({
      serverUrl: config.VoiceService.ServerUrl,
      apiKey: config.VoiceService.ApiKey,
      enabled: () => deps.categories.voice().enableVoice,
      timeoutMs: config.VoiceService.ConnectTimeout,
      ca: deps.voiceCa,
    }),
    database: createDatabaseCheck(deps.store, { dataDir: config.Storage.DataDir, minFreeBytes: config.Storage.MinFreeBytes }),
    mqtt: deps.mqtt.healthCheck(),
  };
}
