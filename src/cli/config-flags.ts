// Configuration on the command line: `--config FILE`, any key in dot form (`--Server.Port 5001`,
// `--ApiKeys.0 k`, `--AllowedHosts h`, case-insensitive as in the file) and the short flags
// (`--port`, `--data-dir`, ...) mapped to their keys. Only the use of the flag is checked here (given
// once, not missing its value, an array given whole or by index, not both): that is bad usage, exit 64. Whether the value is allowed, of the wrong
// type (`--port abc`) or out of range (`--port 70000`), is the configuration's judgement, the same for a
// file, the environment and a flag: exit 78.
import { ARRAY_INDEXES, canonicalIndex, isArrayIndex } from '../config/layers.js';
import { resolveFlag, SHORT_FLAGS } from '../config/load.js';
import { type SchemaNode } from '../config/schema.js';
import { emptyPartText, hasEmptyPart, resolveKey } from '../config/schema-keys.js';
import { shownName } from '../config/shown.js';
import { singleText, yargsOption, type Read } from './options.js';

export type ShortFlag = keyof typeof SHORT_FLAGS;

export const CONFIG_FILE_FLAG = 'config';
const CONFIG_FILE_DESCRIBE = 'configuration file (default: config/appsettings.json in the working directory, else beside the program, if present)';

/** What each short flag sets, in a few words; the key, type and default come from the schema. */
const SHORT_DESCRIBE: Record<ShortFlag, string> = {
  port: 'HTTP port',
  host: 'address to listen on',
  'data-dir': 'database and signing key',
  'log-level': 'Trace, Debug, Information, Warning, Error, Critical or None',
  'voice-server-url': 'upstream voice server (ws:// or wss://)',
  'https-port': 'HTTPS port, when a certificate is set',
  cert: 'PEM certificate; turns HTTPS on',
  key: 'PEM private key of the certificate',
};

export const ALL_SHORT_FLAGS = Object.keys(SHORT_FLAGS) as ShortFlag[];

function nodeOf(key: string): SchemaNode {
  const resolved = resolveKey(key.split('.'));
  if (resolved?.kind !== 'leaf') throw new Error(`short flag for ${key}, which is not a key of the schema`);
  return resolved.node;
}

/** yargs options (for --help) of `--config` and the given short flags. */
export function configYargsOptions(short: readonly ShortFlag[]): Record<string, { describe: string }> {
  const options: Record<string, { describe: string }> = { [CONFIG_FILE_FLAG]: yargsOption({ kind: 'string', describe: CONFIG_FILE_DESCRIBE }) };
  for (const flag of short) {
    const key = SHORT_FLAGS[flag];
    const node = nodeOf(key);
    const shown = node.default === '' ? undefined : node.default;
    const base = { describe: `${key}: ${SHORT_DESCRIBE[flag]}` };
    options[flag] = yargsOption(
      node.type === 'integer' ? { kind: 'integer', ...base, ...(typeof shown === 'number' ? { default: shown } : {}) } : { kind: 'string', ...base, ...(typeof shown === 'string' ? { default: shown } : {}) },
    );
  }
  return options;
}

/** What a configuration flag sets: its key and value, and for an array, whether the whole of it or one item. */
export interface ConfigFlag {
  key: string;
  value: unknown;
  /** The array's key, in the schema's spelling, when the flag gives a whole array (`--ApiKeys`) or an item (`--ApiKeys.0`). */
  array?: { key: string; whole: boolean };
}

/**
 * A flag that is not one of the command's own: the configuration key it sets and its value, a problem
 * with its name or value, or undefined when it names no configuration key.
 */
export function readConfigFlag(name: string, raw: unknown, short: readonly ShortFlag[]): Read<ConfigFlag> | undefined {
  const resolved = resolveFlag(name, short);
  if (!resolved) return undefined;
  const node = resolved.kind === 'item' ? resolved.node.items : resolved.node;
  if (!node) return undefined;
  if (hasEmptyPart(name.split('.'))) return { ok: false, problem: `--${shownName(name)} ${emptyPartText('dot')}` };
  // `--ApiKeys.x` names no item: a flag spelt wrong, as an unknown one is.
  if (resolved.kind === 'item' && !isArrayIndex(resolved.index)) {
    return { ok: false, problem: `--${shownName(name)}: the part after the last dot must be an index of ${resolved.path.join('.')}, ${ARRAY_INDEXES}` };
  }
  const problem = valueProblem(name, raw, node);
  if (problem) return { ok: false, problem };
  // In the schema's spelling, so two spellings of one key (`--apikeys.00`, `--ApiKeys.0`) are seen to be one.
  const spelled = [...resolved.path, ...(resolved.kind === 'item' ? [canonicalIndex(resolved.index)] : [])].join('.');
  const array = resolved.kind === 'item' ? { key: resolved.path.join('.'), whole: false } : resolved.node.type === 'array' ? { key: spelled, whole: true } : undefined;
  return { ok: true, value: { key: spelled, value: raw, ...(array ? { array } : {}) } };
}

function valueProblem(name: string, raw: unknown, node: SchemaNode): string | undefined {
  // A boolean key needs its value as any other key does (`--Mqtt.HomeAssistantDiscovery false`): read
  // bare as `true`, a value left out by mistake turned a setting on, and its type decided whether a flag
  // without its value was bad usage.
  // A whole array may be given by repeating its flag (`--ApiKeys a --ApiKeys b`).
  const values = node.type === 'array' && Array.isArray(raw) ? raw : [raw];
  for (const v of values) {
    if (v === true || (Array.isArray(v) && node.type !== 'array')) return singleTextProblem(name, v);
    if (typeof v !== 'string') return `--${name} needs a value`;
    // A value of the wrong type (`--port abc`) is no usage problem: the configuration judges it, as it
    // would the same text from the file or the environment (exit 78, naming the key and the source).
  }
  return undefined;
}

function singleTextProblem(name: string, raw: unknown): string {
  const read = singleText(name, raw);
  return read.ok ? `--${name} needs a value` : read.problem;
}
