// Loads the effective configuration (docs/operations.md, "Configuration"): schema defaults < file < environment
// < flags, validated as a whole before anything starts. Every problem is collected, one line each (the
// first MAX_LISTED_PROBLEMS, then how many more), and thrown together as a ConfigError, which the CLI
// turns into exit code 78. A file the system will not let this user read is no configuration problem
// but the machine's: its error is thrown as it is (src/cli/fatal.ts, exit code 1).
import { readBoundedFile, unreadableReason } from '../bounded-file.js';
import { readlinkSync } from 'node:fs';
import path from 'node:path';
import { isLinkItself, nothingAt } from '../path-entry.js';
import { decodeConfigBytes } from './file-encoding.js';
import { JsonTextError, parseJsonText } from './json-text.js';
import { addEnv, addFile, addFlags, defaultEntries, type Entries } from './layers.js';
import { own, setOwn } from './own.js';
import { Problems } from './problems.js';
import { CONFIG_SCHEMA, type SchemaNode } from './schema.js';
import { resolveKey, type Resolved } from './schema-keys.js';
import { toConfigValue } from './schema-value.js';
import type { PublicForm } from './shown.js';
import type { AppConfig, ConfigSource, LoadedConfig } from './types.js';
import { buildTree, validate } from './validate.js';

/** The shipped appsettings.json is a few KiB; room for generated files of thousands of keys. */
const MAX_CONFIG_FILE_BYTES = 16 * 1024 * 1024;

export class ConfigError extends Error {
  constructor(readonly problems: readonly string[]) {
    super(`invalid configuration:\n${problems.map((p) => `  ${p}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}

/** Short command-line flags and the keys they set (`--port 5001` is `--Server.Port 5001`). */
export const SHORT_FLAGS = {
  port: 'Server.Port',
  host: 'Server.Host',
  'data-dir': 'Storage.DataDir',
  'log-level': 'Logging.LogLevel.Default',
  'voice-server-url': 'VoiceService.ServerUrl',
  'https-port': 'Server.HttpsPort',
  cert: 'Server.Certificate.Path',
  key: 'Server.Certificate.KeyPath',
} as const satisfies Record<string, string>;

/**
 * The key a command-line flag names: one of the `short` flags given, or a key in dot form (any case, an
 * array item by index); undefined for anything else.
 */
export function resolveFlag(name: string, short: readonly string[] = Object.keys(SHORT_FLAGS)): Resolved | undefined {
  const key = short.includes(name) && Object.hasOwn(SHORT_FLAGS, name) ? SHORT_FLAGS[name as keyof typeof SHORT_FLAGS] : name;
  return /^[A-Za-z]/.test(key) ? resolveKey(key.split('.')) : undefined;
}

export interface LoadOptions {
  /** `--config PATH`: must exist. */
  file?: string;
  /**
   * When `file` is not given, the first of these at which anything is (the shipped
   * config/appsettings.json), read as `file` would be: a dangling link or a folder there is reported,
   * not passed over. None is read when nothing is at any of them.
   */
  defaultFiles?: readonly string[];
  /** The environment to read `Section__Key` variables from; none when not given. */
  env?: NodeJS.ProcessEnv;
  /** Dot-path keys to values, as parsed from the command line. */
  flags?: Record<string, unknown>;
  /** Dot-path keys to the flag as typed, when it was not the key itself (`--port`). */
  flagNames?: Record<string, string>;
  /** How problem lines show a value that may carry credentials (shown.ts); not at all when not given. */
  publicForm?: PublicForm;
}

export function loadConfig(opts: LoadOptions = {}): LoadedConfig {
  const entries = defaultEntries();
  const problems = new Problems();
  const ignored = new Problems('ignored environment variables');
  const file = readFile(opts, problems, entries);
  addEnv(entries, opts.env ?? {}, problems, ignored);
  addFlags(entries, opts.flags ?? {}, problems, opts.flagNames);
  const tree = buildTree(entries);
  validate(tree, entries, problems, opts.publicForm);
  if (problems.size > 0) throw new ConfigError(problems.lines());
  // The tree passed the schema's validation just above, so it has the shape AppConfig reads from the schema.
  return deepFreeze({ config: toAppConfig(tree) as AppConfig, sources: sourcesOf(entries), timeSpanTexts: timeSpanTexts(tree), file, ignored: ignored.lines() });
}

/** Reads and adds the configuration file; returns its absolute path, or undefined when none was read. */
function readFile(opts: LoadOptions, problems: Problems, entries: Entries): string | undefined {
  const given = opts.file ?? opts.defaultFiles?.find((f) => !nothingAt(path.resolve(f)));
  if (given === undefined) return undefined;
  const file = path.resolve(given);
  let text: string;
  try {
    text = decodeConfigBytes(readBoundedFile(file, MAX_CONFIG_FILE_BYTES));
  } catch (e) {
    const { code, syscall } = e as NodeJS.ErrnoException;
    // A path that names no file is the configuration's mistake (--config with a typo, or a folder, a
    // device, a huge file); the system's other refusals (EACCES: the file is root's or another user's)
    // are the machine's, as for every other file the service reads (docs/operations.md): whoever runs
    // it fixes them, not an edit.
    if (syscall !== undefined && code !== 'ENOENT' && code !== 'EISDIR' && code !== 'ENOTDIR') throw e;
    // Through a link, ENOENT is the target's: the link itself is there, and is what was typed or found.
    const reason = code === 'ENOENT' && isLinkItself(file)
      ? `it is a symbolic link to ${readlinkSync(file)}, which does not exist`
      : unreadableReason(code, MAX_CONFIG_FILE_BYTES, 'a configuration file');
    problems.add(`${file}: cannot read the configuration file: ${reason}`);
    return undefined;
  }
  let tree: unknown;
  try {
    tree = parseJsonText(text);
  } catch (e) {
    if (!(e instanceof JsonTextError)) throw e;
    problems.add(`${file}:${e.line}:${e.column}: invalid JSON: ${e.reason}`);
    return file;
  }
  addFile(entries, tree, file, problems);
  return file;
}

/** The validated tree with time spans converted to milliseconds, in the schema's key order. */
function toAppConfig(value: unknown, node: SchemaNode = CONFIG_SCHEMA): unknown {
  if (node.type !== 'object') return toConfigValue(node, value);
  const obj = value as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const [name, child] of Object.entries(node.properties ?? {})) setOwn(out, name, toAppConfig(own(obj, name), child));
  const map = node.additionalProperties;
  if (typeof map === 'object') {
    for (const [name, v] of Object.entries(obj)) if (!Object.hasOwn(out, name)) setOwn(out, name, toAppConfig(v, map));
  }
  return out;
}

/** The configured text of each time span key of the validated tree, trimmed as it was parsed. */
function timeSpanTexts(tree: unknown): ReadonlyMap<string, string> {
  const texts = new Map<string, string>();
  const walk = (value: unknown, node: SchemaNode, path: string[]): void => {
    if (node['x-timespan'] && typeof value === 'string') texts.set(path.join('.'), value.trim());
    if (node.type !== 'object' || typeof value !== 'object' || value === null) return;
    for (const [name, child] of Object.entries(node.properties ?? {})) walk((value as Record<string, unknown>)[name], child, [...path, name]);
  };
  walk(tree, CONFIG_SCHEMA, []);
  return texts;
}

function sourcesOf(entries: Entries): ReadonlyMap<string, ConfigSource> {
  return new Map(entries.all().map((e) => [e.path.join('.'), e.source] as const));
}

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    if (!(value instanceof Map)) for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}
