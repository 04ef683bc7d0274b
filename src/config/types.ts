// The effective configuration as the rest of the program sees it: merged, validated, frozen, time spans
// in milliseconds. Its type is read from the schema, so a key added there is typed here at once.
import type { CONFIG_SCHEMA, LOG_LEVELS } from './schema.js';
import type { ConfigValue } from './schema-value.js';

export type LogLevelName = (typeof LOG_LEVELS)[number];

/** Every section and key of the schema; time spans in milliseconds. */
export type AppConfig = ConfigValue<typeof CONFIG_SCHEMA>;

/** Where an effective value came from, lowest precedence first. */
export type ConfigSource = 'default' | 'file' | 'env' | 'flag';

export interface LoadedConfig {
  readonly config: AppConfig;
  /** Source of every leaf key, by dot path ("VoiceService.ServerUrl", "ApiKeys"). */
  readonly sources: ReadonlyMap<string, ConfigSource>;
  /**
   * The text of every time span key as it was configured (`24:00:00`), by dot path: the program reads
   * milliseconds, but what it shows back is the operator's own form, not a reformatting (`1.00:00:00`).
   */
  readonly timeSpanTexts: ReadonlyMap<string, string>;
  /** The configuration file that was read, if any. */
  readonly file: string | undefined;
  /** What was given but not taken, to be warned about (an environment variable of our sections that names no key). */
  readonly ignored?: readonly string[];
}
