// Configuration categories readable and writable over HTTP. A value stored through the API overrides
// the file and the built-in defaults but not an environment variable or a flag, which the operator
// on the box set on purpose.
import type { AppConfig, ConfigSource, LoadedConfig } from '../config/types.js';
import { isTimeSpanWithin, TOKEN_EXPIRATION_BOUNDS } from '../config/schema.js';
import { formatTimeSpan, parseTimeSpan } from '../config/timespan.js';
import { DomainError } from '../errors.js';
import type { SettingsRepository } from '../store/types.js';

interface KeyDef {
  /** Dot path of the configuration key behind this setting, if any. */
  configKey?: string;
  fromConfig?: (c: AppConfig) => unknown;
  fallback?: unknown;
}

const CATEGORIES: Record<string, Record<string, KeyDef>> = {
  voice: {
    enableVoice: { configKey: 'VoiceService.EnableVoice', fromConfig: (c) => c.VoiceService.EnableVoice },
    audioSampleRate: { configKey: 'VoiceService.AudioSampleRate', fromConfig: (c) => c.VoiceService.AudioSampleRate },
    audioChannels: { configKey: 'VoiceService.AudioChannels', fromConfig: (c) => c.VoiceService.AudioChannels },
    enableNoiseReduction: { fallback: false },
    wakeWords: { fallback: [] },
  },
  device: {
    allowDeviceRegistration: {
      configKey: 'DeviceManagement.AllowDeviceRegistration',
      fromConfig: (c) => c.DeviceManagement.AllowDeviceRegistration,
    },
    maxDevices: { configKey: 'DeviceManagement.MaxDevices', fromConfig: (c) => c.DeviceManagement.MaxDevices },
    tokenExpiration: {
      configKey: 'DeviceManagement.TokenExpiration',
      fromConfig: (c) => formatTimeSpan(c.DeviceManagement.TokenExpiration),
    },
  },
  mqtt: {
    brokerAddress: { configKey: 'Mqtt.BrokerAddress', fromConfig: (c) => c.Mqtt.BrokerAddress },
    port: { configKey: 'Mqtt.Port', fromConfig: (c) => c.Mqtt.Port },
    // Never the password: categories are readable with a device token.
    username: { configKey: 'Mqtt.Username', fromConfig: (c) => c.Mqtt.Username },
  },
};

export const CATEGORY_NAMES = Object.keys(CATEGORIES);

export interface VoiceSettings {
  enableVoice: boolean;
  audioSampleRate: number;
  audioChannels: number;
  enableNoiseReduction: boolean;
  wakeWords: string[];
}
export interface DeviceSettings {
  allowDeviceRegistration: boolean;
  maxDevices: number;
  tokenExpirationMs: number;
}

/** The writable part of the MQTT settings (never the password). */
export interface MqttSettings {
  brokerAddress: string;
  port: number;
  username: string;
}

export type SettingSource = ConfigSource | 'api';

export type CategoryListener = (category: string, values: Record<string, unknown>) => void;

export class ConfigCategories {
  private readonly cache = new Map<string, Record<string, unknown>>();
  private readonly listeners: CategoryListener[] = [];

  constructor(
    private readonly loaded: LoadedConfig,
    private readonly repo: SettingsRepository,
  ) {}

  /** Called after every successful PUT with the category's new effective values. */
  onChange(listener: CategoryListener): void {
    this.listeners.push(listener);
  }

  has(category: string): boolean {
    return Object.hasOwn(CATEGORIES, category);
  }

  /** Effective values of a category; throws not_found for an unknown category. */
  get(category: string): Record<string, unknown> {
    const cached = this.cache.get(category);
    if (cached) return cached;
    const defs = this.defs(category);
    const stored = this.repo.get(category);
    const out: Record<string, unknown> = {};
    for (const [key, def] of Object.entries(defs)) out[key] = this.value(def, key, stored);
    this.cache.set(category, out);
    return out;
  }

  /** Where each effective value comes from, for `config check`. */
  sources(category: string): Record<string, SettingSource> {
    const defs = this.defs(category);
    const stored = this.repo.get(category);
    const out: Record<string, SettingSource> = {};
    for (const [key, def] of Object.entries(defs)) {
      const source = def.configKey ? (this.loaded.sources.get(def.configKey) ?? 'default') : 'default';
      out[key] = operatorSet(source) ? source : Object.hasOwn(stored, key) ? 'api' : source;
    }
    return out;
  }

  /** Merges `patch` (already schema-validated) into the stored values, durably; returns the effective values. */
  async put(category: string, patch: Record<string, unknown>): Promise<Record<string, unknown>> {
    this.defs(category);
    if (category === 'device' && typeof patch.tokenExpiration === 'string') {
      checkTokenExpiration(patch.tokenExpiration);
    }
    await this.repo.put(category, { ...this.repo.get(category), ...patch });
    this.cache.delete(category);
    const values = this.get(category);
    for (const listener of this.listeners) listener(category, values);
    return values;
  }

  voice(): VoiceSettings {
    return this.get('voice') as unknown as VoiceSettings;
  }

  mqtt(): MqttSettings {
    const m = this.get('mqtt');
    return { brokerAddress: m.brokerAddress as string, port: m.port as number, username: m.username as string };
  }

  device(): DeviceSettings {
    const d = this.get('device');
    return {
      allowDeviceRegistration: d.allowDeviceRegistration as boolean,
      maxDevices: d.maxDevices as number,
      tokenExpirationMs: parseTimeSpan(d.tokenExpiration as string),
    };
  }

  private defs(category: string): Record<string, KeyDef> {
    if (!this.has(category)) throw new DomainError('not_found', `configuration category '${category}' does not exist`);
    return CATEGORIES[category]!;
  }

  private value(def: KeyDef, key: string, stored: Record<string, unknown>): unknown {
    const source = def.configKey ? this.loaded.sources.get(def.configKey) : undefined;
    if (def.fromConfig && source && operatorSet(source)) return def.fromConfig(this.loaded.config);
    if (Object.hasOwn(stored, key)) return stored[key];
    return def.fromConfig ? def.fromConfig(this.loaded.config) : def.fallback;
  }
}

const operatorSet = (s: ConfigSource): boolean => s === 'env' || s === 'flag';

// The schema's pattern admits any number of days, and parseTimeSpan throws past what a time span can
// count: the range of the configuration file's DeviceManagement.TokenExpiration applies, as a 400.
function checkTokenExpiration(text: string): void {
  if (isTimeSpanWithin(text, TOKEN_EXPIRATION_BOUNDS)) return;
  const { minimum, maximum } = TOKEN_EXPIRATION_BOUNDS;
  throw new DomainError('invalid_argument', 'The request body is invalid.', {
    tokenExpiration: [`must be a time span from ${minimum} to ${maximum}`],
  });
}
