// The four layers of configuration (defaults < file < env < flags, lowest precedence first), each
// turned into values per key with the source they came from. Keys match the schema
// case-insensitively, as .NET configuration does; values are converted to the schema's types.
import type { ConfigSource } from './types.js';
import { CONFIG_SCHEMA, findProperty, leafKeys, resolveKey, type SchemaNode } from './schema.js';
import { closest } from './spelling.js';

export interface Entry {
  /** The key in the schema's spelling (a map entry keeps the spelling it was first given). */
  path: string[];
  value: unknown;
  source: ConfigSource;
  /** Where the value came from, for problem lines: `file /etc/x.json`, `env Server__Port`, `flag --Server.Port`. */
  origin: string;
  /** For arrays given by index: where each item came from. */
  itemOrigins?: string[];
}

/** Effective values by key; a key is its path, lower-cased, because keys match case-insensitively. */
export class Entries {
  private readonly byId = new Map<string, Entry>();

  set(entry: Entry): void {
    const id = entryId(entry.path);
    const old = this.byId.get(id);
    this.byId.set(id, old ? { ...entry, path: old.path } : entry);
  }

  get(path: readonly string[]): Entry | undefined {
    return this.byId.get(entryId(path));
  }

  all(): Entry[] {
    return [...this.byId.values()];
  }
}

const entryId = (path: readonly string[]): string => path.map((s) => s.toLowerCase()).join('\u0000');

/**
 * Converts text (env, flags; .NET files hold text too) to the schema's type where that is unambiguous;
 * anything else is left as it is for validation to report.
 */
export function convert(value: unknown, node: SchemaNode): unknown {
  if (node.type === 'integer' && typeof value === 'string' && /^\s*[+-]?\d+\s*$/.test(value)) return Number(value);
  if (node.type === 'boolean' && typeof value === 'string' && /^\s*(true|false)\s*$/i.test(value)) {
    return value.trim().toLowerCase() === 'true';
  }
  if (node.type === 'string' && (typeof value === 'number' || typeof value === 'boolean')) return String(value);
  if (node.type === 'string' && typeof value === 'string' && node.enum) {
    // Log levels are accepted in any case and kept in the schema's spelling.
    const lower = value.trim().toLowerCase();
    return node.enum.find((e) => String(e).toLowerCase() === lower) ?? value;
  }
  if (node.type === 'array') {
    const items = Array.isArray(value) ? value : typeof value === 'string' ? [value] : value;
    return Array.isArray(items) && node.items ? items.map((v) => convert(v, node.items!)) : items;
  }
  return value;
}

export function defaultEntries(): Entries {
  const entries = new Entries();
  for (const { path, node } of leafKeys()) {
    entries.set({ path: [...path], value: structuredClone(node.default), source: 'default', origin: 'built-in default' });
  }
  return entries;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Adds a parsed file's values; returns one problem line per key that is unknown or misplaced. */
export function addFile(entries: Entries, tree: unknown, file: string): string[] {
  const origin = `file ${file}`;
  if (!isObject(tree)) return [`${file}: must contain a JSON object, like the shipped config/appsettings.json`];
  const problems: string[] = [];
  const walk = (obj: Record<string, unknown>, node: SchemaNode, path: string[]): void => {
    for (const [name, value] of Object.entries(obj)) {
      const prop = findProperty(node, name);
      const map = typeof node.additionalProperties === 'object' ? node.additionalProperties : undefined;
      if (prop === undefined && !map) {
        problems.push(unknownKey([...path, name], origin));
        continue;
      }
      const child = prop === undefined ? map! : node.properties![prop]!;
      const childPath = [...path, prop ?? name];
      if (child.type !== 'object') entries.set({ path: childPath, value: convert(value, child), source: 'file', origin });
      else if (isObject(value)) walk(value, child, childPath);
      else problems.push(`${childPath.join('.')}: ${JSON.stringify(value)} from ${origin} is invalid: must be an object (a section of keys)`);
    }
  };
  walk(tree, CONFIG_SCHEMA, []);
  return problems;
}

interface IndexedArray {
  path: string[];
  node: SchemaNode;
  items: Array<{ index: number; value: unknown; origin: string }>;
}

/**
 * Adds `Section__Key` variables that name a known key; the rest of the environment is ignored. One that
 * starts with a section of ours and names no key in it (`Server__Prot`, a typo in a systemd drop-in) is
 * listed in `ignored`, to be warned about: it is no error, as ASP.NET Core ignores keys it does not
 * know and the environment may hold its other settings (`Logging__Console__FormatterName`), but left
 * unsaid the service starts with the default and the typo is never seen. An array given by index
 * (`ApiKeys__0`) replaces the file's array entirely.
 */
export function addEnv(entries: Entries, env: NodeJS.ProcessEnv, ignored: string[] = []): string[] {
  const problems: string[] = [];
  const seen = new Map<string, string>();
  const arrays = new Map<string, IndexedArray>();
  for (const name of Object.keys(env).sort()) {
    const raw = env[name];
    const segments = name.split('__');
    if (raw === undefined || segments.some((s) => s === '')) continue;
    const key = resolveKey(segments);
    if (!key) {
      if (segments.length > 1 && findProperty(CONFIG_SCHEMA, segments[0]!) !== undefined) {
        const hint = closestKey(segments.join('.'));
        ignored.push(`environment variable ${name} names no configuration key and is ignored${hint ? ` (did you mean ${hint.replaceAll('.', '__')}?)` : ''}`);
      }
      continue;
    }
    const origin = `env ${name}`;
    const label = key.kind === 'item' ? `${key.path.join('.')}[${key.index}]` : key.path.join('.');
    const earlier = seen.get(label.toLowerCase());
    if (earlier !== undefined) {
      problems.push(`${label}: set by both env ${earlier} and env ${name}; keep one`);
      continue;
    }
    seen.set(label.toLowerCase(), name);
    if (key.kind === 'leaf' && key.node.type === 'array') {
      problems.push(`${label}: from ${origin} is invalid: give arrays by index, like ${name}__0, ${name}__1`);
    } else if (key.kind === 'leaf') {
      entries.set({ path: key.path, value: convert(raw, key.node), source: 'env', origin });
    } else if (!/^\d{1,6}$/.test(key.index)) {
      problems.push(`${key.path.join('.')}: from ${origin} is invalid: the part after the last __ must be an index (0, 1, ...)`);
    } else {
      const id = key.path.join('.').toLowerCase();
      const array = arrays.get(id) ?? { path: key.path, node: key.node, items: [] };
      array.items.push({ index: Number(key.index), value: raw, origin });
      arrays.set(id, array);
    }
  }
  for (const { path, node, items } of arrays.values()) setIndexed(entries, path, node, items, 'env');
  return problems;
}

/**
 * Adds flags given as dot paths (`{"Server.Port": 5001}`); an array is given whole (`ApiKeys`, a
 * string or a list) or by index (`ApiKeys.0`). Unknown keys are problems: flags are typed on purpose.
 * `typed` names the flag as the user wrote it (`--port`), for the problems and the sources.
 */
export function addFlags(entries: Entries, flags: Record<string, unknown>, typed: Record<string, string> = {}): string[] {
  const problems: string[] = [];
  const arrays = new Map<string, IndexedArray>();
  for (const [name, value] of Object.entries(flags)) {
    if (value === undefined) continue;
    const origin = `flag --${Object.hasOwn(typed, name) ? typed[name] : name}`;
    const key = resolveKey(name.split('.'));
    if (!key) {
      problems.push(unknownKey(name.split('.'), origin));
    } else if (key.kind === 'leaf') {
      entries.set({ path: key.path, value: convert(value, key.node), source: 'flag', origin });
    } else if (!/^\d{1,6}$/.test(key.index)) {
      problems.push(`${name}: from ${origin} is invalid: the part after the last dot must be an index (0, 1, ...)`);
    } else {
      const id = key.path.join('.').toLowerCase();
      const array = arrays.get(id) ?? { path: key.path, node: key.node, items: [] };
      array.items.push({ index: Number(key.index), value, origin });
      arrays.set(id, array);
    }
  }
  for (const { path, node, items } of arrays.values()) setIndexed(entries, path, node, items, 'flag');
  return problems;
}

/** Items in index order; gaps close up, as the .NET configuration binder does. */
function setIndexed(entries: Entries, path: string[], node: SchemaNode, items: IndexedArray['items'], source: ConfigSource): void {
  items.sort((a, b) => a.index - b.index);
  entries.set({
    path,
    value: convert(items.map((i) => i.value), node),
    source,
    origin: items.map((i) => i.origin).join(', '),
    itemOrigins: items.map((i) => i.origin),
  });
}

function unknownKey(path: string[], origin: string): string {
  const key = path.join('.');
  const hint = closestKey(key);
  return `${key}: unknown key from ${origin}${hint ? ` (did you mean ${hint}?)` : ''}`;
}

/** The known key nearest in spelling, to catch typos; none when nothing is close. */
function closestKey(key: string): string | undefined {
  return closest(key, leafKeys().map((k) => k.key));
}
