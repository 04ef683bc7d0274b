// The configuration categories readable and writable over HTTP, key by key. A key either stands for a key
// of the configuration schema, from which it takes its type, range, description and default (the loaded
// configuration's value), or is a setting only the API holds, with its schema and default here. The write
// schemas, the defaults and the TypeScript types of the categories all come from this one table.
import { CONFIG_SCHEMA, type SchemaNode } from '../config/schema.js';
import type { ConfigValue, JsonValue } from '../config/schema-value.js';

type Sections = typeof CONFIG_SCHEMA.properties;
type SectionName = { [S in keyof Sections]: Sections[S] extends { readonly type: 'object' } ? S : never }[keyof Sections];
type KeysOf<S extends SectionName> = Sections[S] extends { readonly properties: infer P } ? P : never;

/** Keywords a category may add to a configuration key's schema, to refuse more over the API. */
export type Narrowing = Pick<SchemaNode, 'minLength' | 'maxLength' | 'minimum' | 'maximum'>;

export interface ConfigBackedKey<N extends SchemaNode = SchemaNode> {
  /** Dot path of the configuration key, e.g. `VoiceService.AudioSampleRate`. */
  readonly configKey: string;
  readonly path: readonly [string, string];
  readonly node: N;
  readonly narrowing: Narrowing;
}

export interface ApiOnlyKey<N extends SchemaNode = SchemaNode> {
  readonly configKey?: undefined;
  /** Its schema, with the default a category has before anything is stored. */
  readonly node: N & { readonly default: unknown };
}

export type CategoryKey = ConfigBackedKey | ApiOnlyKey;

export function fromConfig<S extends SectionName, K extends keyof KeysOf<S> & string>(
  section: S,
  key: K,
  narrowing: Narrowing = {},
): ConfigBackedKey<KeysOf<S>[K] & SchemaNode> {
  const sectionNode: SchemaNode = CONFIG_SCHEMA.properties[section];
  const node = sectionNode.properties?.[key];
  // Categories are readable with a device token: a secret must never become one of their keys.
  if (!node || node.type === 'object' || node.writeOnly) throw new Error(`${section}.${key} cannot be a category key`);
  // The generic parameters name exactly this node; TypeScript cannot follow an index through them.
  return { configKey: `${section}.${key}`, path: [section, key], node: node as KeysOf<S>[K] & SchemaNode, narrowing };
}

/**
 * Text that starts and ends with a character other than white space, and holds no control character or
 * line break. The empty text passes: minLength alone refuses it, in one message.
 */
const WAKE_WORD = '^(?:[^\\s\\u0000-\\u001f\\u007f-\\u009f](?:[^\\u0000-\\u001f\\u007f-\\u009f\\u2028\\u2029]*[^\\s\\u0000-\\u001f\\u007f-\\u009f])?)?$';

const apiOnly = <const N extends SchemaNode & { readonly default: unknown }>(node: N): ApiOnlyKey<N> => ({ node });

export const CATEGORIES = {
  voice: {
    enableVoice: fromConfig('VoiceService', 'EnableVoice'),
    audioSampleRate: fromConfig('VoiceService', 'AudioSampleRate'),
    audioChannels: fromConfig('VoiceService', 'AudioChannels'),
    enableNoiseReduction: apiOnly({
      type: 'boolean',
      default: false,
      description: 'Kept for the devices: whether they reduce noise before sending audio.',
    }),
    wakeWords: apiOnly({
      type: 'array',
      default: [],
      maxItems: 32,
      // A device compares what it hears with each word: one twice, one of white space alone, or one
      // with a space at an end or a line break inside can never be heard as written.
      uniqueItems: true,
      items: {
        type: 'string',
        minLength: 1,
        maxLength: 64,
        pattern: WAKE_WORD,
        'x-expected': 'must be a word or phrase: no white space at its start or end, no control characters (U+0000 to U+001F, U+007F to U+009F) or line breaks',
      },
      description: 'Kept for the devices: the words that wake them, each once.',
    }),
  },
  device: {
    allowDeviceRegistration: fromConfig('DeviceManagement', 'AllowDeviceRegistration'),
    maxDevices: fromConfig('DeviceManagement', 'MaxDevices'),
    tokenExpiration: fromConfig('DeviceManagement', 'TokenExpiration'),
  },
  mqtt: {
    // Over the API the broker address cannot be emptied (which switches MQTT off) and is a host name's
    // length at most; the file, environment and flags keep the configuration schema's wider range.
    brokerAddress: fromConfig('Mqtt', 'BrokerAddress', { minLength: 1, maxLength: 253 }),
    port: fromConfig('Mqtt', 'Port'),
    // Never the password: categories are readable with a device token.
    username: fromConfig('Mqtt', 'Username'),
  },
} as const satisfies Record<string, Record<string, CategoryKey>>;

export type CategoryName = keyof typeof CATEGORIES;
type KeyNode<C extends CategoryName, K extends keyof (typeof CATEGORIES)[C]> = (typeof CATEGORIES)[C][K] extends {
  readonly node: infer N;
}
  ? N
  : never;

/** A category's values as GET returns them and PUT takes them: time spans as text. */
export type CategoryValues<C extends CategoryName> = { [K in keyof (typeof CATEGORIES)[C]]: JsonValue<KeyNode<C, K>> };
/** A category's values as the program acts on them: time spans in milliseconds. */
export type CategorySettings<C extends CategoryName> = { readonly [K in keyof (typeof CATEGORIES)[C]]: ConfigValue<KeyNode<C, K>> };

export type VoiceSettings = CategorySettings<'voice'>;
export type DeviceSettings = CategorySettings<'device'>;
/** The writable part of the MQTT settings (never the password). */
export type MqttSettings = CategorySettings<'mqtt'>;

export function isCategoryName(name: string): name is CategoryName {
  return Object.hasOwn(CATEGORIES, name);
}

export const CATEGORY_NAMES: readonly CategoryName[] = Object.keys(CATEGORIES).filter(isCategoryName);

/** The keys of a category by name, in the order GET lists them. */
export function categoryKeys(category: CategoryName): ReadonlyArray<readonly [string, CategoryKey]> {
  return Object.entries(CATEGORIES[category]);
}
