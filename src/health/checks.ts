// Health checks of the three components (voice-service, database, mqtt): what one check
// returns, and the MQTT check. The voice-service and database checks live in their own files.
import { durationText } from '../log/duration.js';

export type HealthStatus = 'Healthy' | 'Degraded' | 'Unhealthy';

/** One component in the report, as .NET's UIResponseWriter writes a HealthReportEntry (camelCase). */
export interface HealthEntry {
  status: HealthStatus;
  description: string;
  /** .NET TimeSpan "c" text, e.g. `00:00:00.0123456`. */
  duration: string;
  data: Record<string, unknown>;
  /** The failure's message, when a failure caused the status. */
  exception?: string;
  tags: string[];
}

/** What a check produces; the report adds the duration. */
export interface CheckResult {
  status: HealthStatus;
  description: string;
  data?: Record<string, unknown>;
  exception?: string;
  tags?: string[];
}

/**
 * A check must resolve (never reject) with its verdict; the report still guards against both. Its tags
 * are the registration's, as ASP.NET Core keeps them: the entry of a check that timed out or threw
 * carries them too, so a dashboard filtering by tag still finds the failed component.
 */
export interface HealthCheck {
  (): Promise<CheckResult>;
  readonly tags?: readonly string[];
}

/** `run` registered with `tags`. */
export function taggedCheck(tags: readonly string[], run: () => Promise<CheckResult>): HealthCheck {
  return Object.assign(run, { tags });
}

export { createVoiceServiceCheck, type VoiceCheckOptions } from './voice-check.js';
export { createDatabaseCheck, type DatabaseCheckOptions, type DatabaseStatusSource } from './database-check.js';

/** What the MQTT check needs of the publisher (src/mqtt/publisher.ts fits). */
export interface MqttStatusSource {
  state(): {
    connected: boolean;
    lastError?: string;
    broker?: string;
    /** While connected: the oldest message the broker has not acknowledged has waited longer than `limitMs`. */
    stalled?: { unacknowledged: number; limitMs: number };
  };
  stats?(): { published: number; dropped: number; queued: number };
}

/** The mqtt entry's tags, whatever its state (MQTT switched off included). */
export const MQTT_TAGS: readonly string[] = ['mqtt'];

/**
 * Connected is Healthy, unless the broker has left a message unacknowledged for too long (it then
 * delivers nothing while the connection looks fine); not connected is Degraded, not Unhealthy: devices
 * and voice sessions work without the broker, only the smart-home view of them lags, so a missing or
 * stuck broker is Degraded, not Unhealthy.
 */
export function createMqttCheck(publisher: MqttStatusSource): HealthCheck {
  const tags = [...MQTT_TAGS];
  return taggedCheck(MQTT_TAGS, async () => {
    const state = publisher.state();
    const data: Record<string, unknown> = {};
    if (state.broker !== undefined) data.broker = state.broker;
    if (publisher.stats) Object.assign(data, publisher.stats());
    const where = state.broker ?? 'the MQTT broker';
    if (state.connected && state.stalled) {
      const { unacknowledged, limitMs } = state.stalled;
      const which = unacknowledged === 1 ? 'the message' : `the oldest of the ${unacknowledged} messages`;
      return {
        status: 'Degraded',
        description: `connected to ${where}, but ${which} it has not acknowledged was sent more than ${durationText(limitMs)} ago`,
        data,
        tags,
      };
    }
    if (state.connected) return { status: 'Healthy', description: `connected to ${where}`, data, tags };
    return { status: 'Degraded', description: state.lastError ?? `not connected to ${where}`, data, tags };
  });
}
