// Configuration categories readable and writable over HTTP. A value stored through the API overrides
// the file and the built-in defaults but not an environment variable or a flag, which the operator
// on the box set on purpose. Which keys there are, and what each may hold, is definitions.ts's table.
import { toConfigValue, toJsonValue } from '../config/schema-value.js';
import { problemValue } from '../config/shown.js';
import type { AppConfig, ConfigSource, LoadedConfig } from '../config/types.js';
import { DomainError } from '../errors.js';
import type { SettingsRepository } from '../store/types.js';
import {
  categoryKeys,
  CATEGORY_NAMES,
  isCategoryName,
  type CategoryKey,
  type CategoryName,
  type CategorySettings,
  type DeviceSettings,
  type MqttSettings,
  type VoiceSettings,
} from './definitions.js';

export { CATEGORY_NAMES, type DeviceSettings, type MqttSettings, type VoiceSettings } from './definitions.js';

export type SettingSource = ConfigSource | 'api';

export type CategoryListener = (category: string, values: Record<string, unknown>) => void;

/** Whether a value stored for `category`'s key `name` is one its write schema accepts (the API's own check). */
export type StoredValueCheck = (category: CategoryName, name: string, value: unknown) => boolean;

export class ConfigCategories {
  private readonly cache = new Map<string, Record<string, unknown>>();
  private readonly listeners: CategoryListener[] = [];

  /**
   * Stored values are checked as a PUT checks them: the file holds what a PUT wrote, but one edited by
   * hand, or written by another voice-hub whose range was wider, gave the program a value of the wrong
   * type (a sample rate of "abc": every session start a 400 blaming the client's sessionConfig). Such a
   * value is left stored and not used; the configuration's applies, and `unusable()` names it.
   */
  constructor(
    private readonly loaded: LoadedConfig,
    private readonly repo: SettingsRepository,
    private readonly accepts: StoredValueCheck = () => true,
  ) {}

  /**
   * Stored values not used because their category's write schema refuses them, as `category.key = value`
   * (for the log and `config check`): the value as a problem line quotes it, so a broker address that
   * holds a login (`mqtt://user:password@broker`, stored before addresses had to be host names) is not shown.
   */
  unusable(): string[] {
    const out: string[] = [];
    for (const category of CATEGORY_NAMES) {
      const stored = this.repo.get(category);
      for (const [name, key] of categoryKeys(category)) {
        if (Object.hasOwn(stored, name) && !this.accepts(category, name, stored[name])) out.push(`${category}.${name} = ${problemValue(key.node, stored[name], undefined)}`);
      }
    }
    return out;
  }

  /** Each stored value in use that stands for a configuration key, by that key: what overrides the file or a default. */
  storedByConfigKey(): Map<string, unknown> {
    const out = new Map<string, unknown>();
    for (const category of CATEGORY_NAMES) {
      const sources = this.sources(category);
      const values = this.get(category);
      for (const [name, key] of categoryKeys(category)) {
        if (key.configKey !== undefined && sources[name] === 'api') out.set(key.configKey, values[name]);
      }
    }
    return out;
  }

  /**
   * Stored values an environment variable or a flag overrides, as `category.key = value` with that
   * source: a PUT of them was answered 200 with the operator's value, and `config check` says why.
   */
  overridden(): Array<{ setting: string; configKey: string; source: ConfigSource }> {
    const out: Array<{ setting: string; configKey: string; source: ConfigSource }> = [];
    for (const category of CATEGORY_NAMES) {
      const stored = this.repo.get(category);
      for (const [name, { configKey }] of categoryKeys(category)) {
        const source = configKey === undefined ? undefined : this.loaded.sources.get(configKey);
        if (configKey === undefined || !source || !operatorSet(source) || !this.usable(category, name, stored)) continue;
        out.push({ setting: `${category}.${name} = ${JSON.stringify(stored[name])}`, configKey, source });
      }
    }
    return out;
  }

  /** Called after every PUT that reached the store, stored or reverted, with the category's effective values then. */
  onChange(listener: CategoryListener): void {
    this.listeners.push(listener);
  }

  has(category: string): boolean {
    return isCategoryName(category);
  }

  /** Effective values of a category, time spans as text; throws not_found for an unknown category. */
  get(category: string): Record<string, unknown> {
    const cached = this.cache.get(category);
    if (cached) return cached;
    const out = this.effective(this.known(category), this.repo.get(category));
    this.cache.set(category, out);
    return out;
  }

  /** Where each effective value comes from, for `config check`. */
  sources(category: string): Record<string, SettingSource> {
    const known = this.known(category);
    const keys = categoryKeys(known);
    const stored = this.repo.get(category);
    const out: Record<string, SettingSource> = {};
    for (const [name, key] of keys) {
      const source = key.configKey === undefined ? 'default' : (this.loaded.sources.get(key.configKey) ?? 'default');
      out[name] = operatorSet(source) ? source : this.usable(known, name, stored) ? 'api' : source;
    }
    return out;
  }

  /**
   * Merges `patch` (already validated against the category's write schema) into the stored values,
   * durably; a null removes the stored value, so the key reads the configuration's (or its default) again.
   */
  async put(category: string, patch: Record<string, unknown>): Promise<Record<string, unknown>> {
    const name = this.known(category);
    // A Map first: a key may be named `__proto__` (the write schema refuses unknown keys, but not here).
    const merged = new Map(Object.entries(this.repo.get(category)));
    const keys = new Map(categoryKeys(name));
    for (const [key, value] of Object.entries(patch)) {
      if (value === null) merged.delete(key);
      // A time span is kept trimmed, as it is parsed and as the configuration's reads back.
      else merged.set(key, keys.get(key)?.node['x-timespan'] && typeof value === 'string' ? value.trim() : value);
    }
    const stored = Object.fromEntries(merged);
    try {
      await this.repo.put(category, stored);
    } catch (e) {
      // Reverted, and told: an earlier write's listeners ran while this one was in memory, unsaved, and
      // applied its values (an MQTT connection to its broker), which the revert has now taken back. A
      // store closed meanwhile (shutdown) has nothing left to apply; the write's own failure is the answer.
      let current: Record<string, unknown>;
      try {
        this.cache.delete(name);
        current = this.get(name);
      } catch {
        throw e;
      }
      this.notify(name, current);
      throw e;
    }
    // The answer is this write's result, which the client can check its own values against.
    this.changed(name);
    return this.effective(name, stored);
  }

  /** The listeners apply what is in memory now: a later write may have landed while this one was written. */
  private changed(category: CategoryName): void {
    this.cache.delete(category);
    this.notify(category, this.get(category));
  }

  private notify(category: CategoryName, current: Record<string, unknown>): void {
    for (const listener of this.listeners) listener(category, current);
  }

  private effective(category: CategoryName, stored: Record<string, unknown>): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    for (const [name, key] of categoryKeys(category)) out[name] = this.value(key, name, this.usable(category, name, stored) ? stored : {});
    return out;
  }

  private usable(category: CategoryName, name: string, stored: Record<string, unknown>): boolean {
    return Object.hasOwn(stored, name) && this.accepts(category, name, stored[name]);
  }

  /** Effective values of a category in the program's form: time spans in milliseconds. */
  settings<C extends CategoryName>(category: C): CategorySettings<C> {
    const values = this.get(category);
    const out: Record<string, unknown> = {};
    for (const [name, key] of categoryKeys(category)) out[name] = toConfigValue(key.node, values[name]);
    // Stored values passed the category's write schema, the others the configuration's: each key holds
    // what the type, read from the same schemas, says.
    return out as CategorySettings<C>;
  }

  voice(): VoiceSettings {
    return this.settings('voice');
  }

  device(): DeviceSettings {
    return this.settings('device');
  }

  mqtt(): MqttSettings {
    return this.settings('mqtt');
  }

  private known(category: string): CategoryName {
    if (!isCategoryName(category)) throw new DomainError('not_found', `configuration category '${category}' does not exist`);
    return category;
  }

  private value(key: CategoryKey, name: string, stored: Record<string, unknown>): unknown {
    if (key.configKey === undefined) return Object.hasOwn(stored, name) ? stored[name] : structuredClone(key.node.default);
    // A configured time span reads back in the form it was written in.
    const configured = this.loaded.timeSpanTexts.get(key.configKey) ?? toJsonValue(key.node, configValue(this.loaded.config, key.path));
    const source = this.loaded.sources.get(key.configKey);
    if (source && operatorSet(source)) return configured;
    return Object.hasOwn(stored, name) ? stored[name] : configured;
  }
}

const operatorSet = (s: ConfigSource): boolean => s === 'env' || s === 'flag';

/** The loaded value of the configuration key at `path`. */
function configValue(config: AppConfig, path: readonly string[]): unknown {
  let value: unknown = config;
  for (const segment of path) value = isRecord(value) && Object.hasOwn(value, segment) ? value[segment] : undefined;
  return value;
}

const isRecord = (v: unknown): v is Readonly<Record<string, unknown>> => typeof v === 'object' && v !== null;
