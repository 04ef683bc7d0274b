// The four layers of configuration (defaults < file < env < flags, lowest precedence first), each
// turned into values per key with the source they came from. Keys match the schema
// case-insensitively, as .NET configuration does; values are converted to the schema's types.
import { isDeepStrictEqual } from 'node:util';
import type { ConfigSource } from './types.js';
import type { Problems } from './problems.js';
import { caseKey } from '../ignore-case.js';
import { CONFIG_SCHEMA, type SchemaNode } from './schema.js';
import { emptyPartText, findProperty, hasEmptyPart, leafKeys, resolveKey } from './schema-keys.js';
import { quoted, shownName } from './shown.js';
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

/** Keys are one when .NET's configuration takes them for one: OrdinalIgnoreCase, part by part. */
const entryId = (path: readonly string[]): string => path.map(caseKey).join('\u0000');

/**
 * Converts text (env, flags; .NET files hold text too) to the schema's type where that is unambiguous;
 * anything else is left as it is for validation to report.
 */
export function convert(value: unknown, node: SchemaNode): unknown {
  // Past 2^53 a double is not the digits given: the text is kept, so the problem line quotes what was typed.
  if (node.type === 'integer' && typeof value === 'string' && /^\s*[+-]?\d+\s*$/.test(value) && Number.isSafeInteger(Number(value))) return Number(value);
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

/** Adds a parsed file's values, and one problem per key that is unknown or misplaced. */
export function addFile(entries: Entries, tree: unknown, file: string, problems: Problems): void {
  const origin = `file ${file}`;
  if (!isObject(tree)) {
    problems.add(`${file}: must contain a JSON object, like the shipped config/appsettings.json`);
    return;
  }
  const walk = (obj: Record<string, unknown>, node: SchemaNode, path: string[]): void => {
    const names = Object.keys(obj);
    // Refused before each key costs its entry and its check.
    const most = node['x-max-names'];
    if (most !== undefined && names.length > most) {
      problems.add(`${path.join('.')}: from ${origin} has ${names.length} keys, more than the ${most} it may have`);
      return;
    }
    for (const name of names) {
      const value = obj[name];
      // .NET reads a file's key as a path with `:` between its parts: {"Server:Port": 80} is Server.Port.
      if (name.includes(':')) {
        const parts = name.split(':');
        if (hasEmptyPart(parts)) problems.add(() => `${shownName([...path, JSON.stringify(name)].join('.'))}: from ${origin} ${emptyPartText(':')}`);
        else walk(nestedUnder(parts, value), node, path);
        continue;
      }
      const prop = findProperty(node, name);
      const map = typeof node.additionalProperties === 'object' ? node.additionalProperties : undefined;
      if (prop === undefined && !map) {
        problems.add(() => (name.includes('.') && resolveKey([...path, ...name.split('.')]) ? dottedFileKey([...path, name], origin) : unknownKey([...path, name], origin)));
        continue;
      }
      if (prop === undefined && hasEmptyPart(name.split('.'))) {
        problems.add(() => `${shownName([...path, JSON.stringify(name)].join('.'))}: from ${origin} ${emptyPartText('dot')}`);
        continue;
      }
      const child = prop === undefined ? map! : node.properties![prop]!;
      const childPath = [...path, prop ?? name];
      if (child.type !== 'object') {
        const converted = convert(value, child);
        // Given twice only through a path key beside its nesting: .NET refuses that as a duplicate key.
        const earlier = entries.get(childPath);
        if (earlier?.source === 'file' && earlier.origin === origin && !isDeepStrictEqual(earlier.value, converted)) {
          problems.add(() => `${childPath.join('.')}: given twice in ${origin}, with two values (once as a "Section:Key" name); keep one`);
          continue;
        }
        entries.set({ path: childPath, value: converted, source: 'file', origin });
      }
      else if (isObject(value)) walk(value, child, childPath);
      else problems.add(() => `${childPath.join('.')}: ${quoted(value)} from ${origin} is invalid: must be an object (a section of keys)`);
    }
  };
  walk(tree, CONFIG_SCHEMA, []);
}

interface IndexedArray {
  path: string[];
  node: SchemaNode;
  items: Array<{ index: number; value: unknown; origin: string }>;
}

/** An array item's index without leading zeros: `ApiKeys__00` is item 0, as `ApiKeys__0` is. */
export const canonicalIndex = (text: string): string => text.replace(/^0+(?=\d)/, '');

/**
 * Whether the last part of `ApiKeys__0` or `--ApiKeys.0` is an index: decimal digits, leading zeros
 * ignored as canonicalIndex drops them (`0000001` is 1), of a value small enough that no array of
 * millions is made. It was the digits that were counted, so `.0000001` was refused as no index while
 * `.01` was item 1.
 */
export const isArrayIndex = (text: string): boolean => /^\d+$/.test(text) && /^\d{1,6}$/.test(canonicalIndex(text));
/** The indexes isArrayIndex takes, for the problems that refuse another. */
export const ARRAY_INDEXES = '0 to 999999 (decimal digits; leading zeros are ignored)';

/**
 * Adds `Section__Key` (or `Section:Key`) variables that name a known key; the rest of the environment is
 * ignored. One that
 * starts with a section of ours and names no key in it (`Server__Prot`, a typo in a systemd drop-in) is
 * added to `ignored`, to be warned about: it is no error, as ASP.NET Core ignores keys it does not
 * know and the environment may hold its other settings (`Logging__Console__FormatterName`), but left
 * unsaid the service starts with the default and the typo is never seen. An array given by index
 * (`ApiKeys__0`) replaces the file's array entirely (see setIndexed).
 */
export function addEnv(entries: Entries, env: NodeJS.ProcessEnv, problems: Problems, ignored: Problems): void {
  const seen = new Map<string, string>();
  const arrays = new Map<string, IndexedArray>();
  for (const name of Object.keys(env).sort()) {
    const raw = env[name];
    // .NET reads `__` as its key delimiter `:`, and `:` itself (Environment="Server:Port=80" in a unit).
    const segments = name.split(/__|:/);
    if (raw === undefined) continue;
    const key = resolveKey(segments);
    const origin = `env ${shownName(name)}`;
    if (key && hasEmptyPart(segments)) {
      // Under a map or an array the rest would be taken as a name or an index: a key nobody reads.
      problems.add(() => `environment variable ${shownName(name)} ${emptyPartText('__ or :')}`);
      continue;
    }
    if (!key) {
      if (segments.length === 1 && resolveKey(name.split('_'))?.kind === 'leaf') {
        // SERVER_PORT, as other daemons spell their variables: said, as the service would start on the default.
        ignored.add(() => `environment variable ${shownName(name)} is not read: keys take a double underscore (${resolveKey(name.split('_'))!.path.join('__')})`);
      } else if (findProperty(CONFIG_SCHEMA, segments[0]!) !== undefined) {
        // A section's name alone (Storage=/mnt/usb) is a value no key takes, as .NET ignores it.
        ignored.add(() => {
          if (segments.length === 1) return `environment variable ${shownName(name)} names a section, not a key, and is ignored: give its keys (${findProperty(CONFIG_SCHEMA, name)}__<Key>)`;
          const hint = closestKey(segments.join('.'));
          return `environment variable ${shownName(name)} names no configuration key and is ignored${hint ? ` (did you mean ${hint.replaceAll('.', '__')}?)` : ''}`;
        });
      }
      continue;
    }
    const label = key.kind === 'item' ? `${key.path.join('.')}[${canonicalIndex(key.index)}]` : key.path.join('.');
    const earlier = seen.get(caseKey(label));
    if (earlier !== undefined) {
      problems.add(`${shownName(label)}: set by both ${earlier} and ${origin}; keep one`);
      continue;
    }
    seen.set(caseKey(label), origin);
    if (key.kind === 'leaf' && key.node.type === 'array') {
      problems.add(`${label}: from ${origin} is invalid: give arrays by index, like ${name}__0, ${name}__1`);
    } else if (key.kind === 'leaf') {
      entries.set({ path: key.path, value: convert(raw, key.node), source: 'env', origin });
    } else if (!isArrayIndex(key.index)) {
      problems.add(`${key.path.join('.')}: from ${origin} is invalid: the part after the last __ must be an index, ${ARRAY_INDEXES}`);
    } else {
      const id = entryId(key.path);
      const array = arrays.get(id) ?? { path: key.path, node: key.node, items: [] };
      array.items.push({ index: Number(key.index), value: raw, origin });
      arrays.set(id, array);
    }
  }
  for (const { path, node, items } of arrays.values()) setIndexed(entries, path, node, items, 'env', problems);
}

/**
 * Adds flags given as dot paths (`{"Server.Port": 5001}`); an array is given whole (`ApiKeys`, a
 * string or a list) or by index (`ApiKeys.0`), not both: the whole array and an item of it would be
 * two values for one place, and one of them lost. Unknown keys are problems: flags are typed on
 * purpose. `typed` names the flag as the user wrote it (`--port`), for the problems and the sources.
 * The command line refuses an array given both ways, and an index that is none, before this as bad usage
 * (src/cli/command.ts, parseArgs, exit 64); these checks guard flags handed to the loader otherwise.
 */
export function addFlags(entries: Entries, flags: Record<string, unknown>, problems: Problems, typed: Record<string, string> = {}): void {
  const arrays = new Map<string, IndexedArray>();
  const wholes = new Map<string, string>();
  for (const [name, value] of Object.entries(flags)) {
    if (value === undefined) continue;
    const origin = `flag --${shownName(Object.hasOwn(typed, name) ? typed[name]! : name)}`;
    const key = resolveKey(name.split('.'));
    if (key && hasEmptyPart(name.split('.'))) {
      problems.add(() => `${origin} ${emptyPartText('dot')}`);
    } else if (!key) {
      problems.add(() => unknownKey(name.split('.'), origin));
    } else if (key.kind === 'leaf') {
      if (key.node.type === 'array') wholes.set(entryId(key.path), origin);
      entries.set({ path: key.path, value: convert(value, key.node), source: 'flag', origin });
    } else if (!isArrayIndex(key.index)) {
      problems.add(`${shownName(name)}: from ${origin} is invalid: the part after the last dot must be an index, ${ARRAY_INDEXES}`);
    } else {
      const id = entryId(key.path);
      const array = arrays.get(id) ?? { path: key.path, node: key.node, items: [] };
      array.items.push({ index: Number(key.index), value, origin });
      arrays.set(id, array);
    }
  }
  for (const [id, { path, node, items }] of arrays) {
    const whole = wholes.get(id);
    if (whole === undefined) setIndexed(entries, path, node, items, 'flag', problems);
    else problems.add(`${path.join('.')}: given both whole (${whole}) and by index (${items[0]!.origin}): give the array one way`);
  }
}

/**
 * The array a layer gives by index: its items in index order, gaps closing up as the .NET configuration
 * binder closes them, and replacing the lower layers' array whole. Unlike ASP.NET Core, whose keys are
 * merged one by one, an item is not laid over the lower layer's item of that index: what the effective
 * array holds is then what one layer says, and an environment or a flag can shorten the file's list
 * (revoke one of its ApiKeys) instead of only overwriting its items. An index given twice (`.0` and
 * `.00`) is refused: which of its values was meant is not known.
 */
function setIndexed(entries: Entries, path: string[], node: SchemaNode, items: IndexedArray['items'], source: ConfigSource, problems: Problems): void {
  items.sort((a, b) => a.index - b.index);
  const twice = items.findIndex((item, i) => i > 0 && items[i - 1]!.index === item.index);
  if (twice > 0) {
    problems.add(`${path.join('.')}[${items[twice]!.index}]: set by both ${items[twice - 1]!.origin} and ${items[twice]!.origin}; keep one`);
    return;
  }
  entries.set({
    path,
    value: convert(items.map((i) => i.value), node),
    source,
    origin: items.map((i) => i.origin).join(', '),
    itemOrigins: items.map((i) => i.origin),
  });
}

/** `{"A": {"B": value}}` for the parts A, B: objects without a prototype, as the file's own are. */
function nestedUnder(parts: readonly string[], value: unknown): Record<string, unknown> {
  let nested = value;
  for (const part of [...parts].reverse()) {
    const level = Object.create(null) as Record<string, unknown>;
    level[part] = nested;
    nested = level;
  }
  return nested as Record<string, unknown>;
}

/** A file key written with dots, as flags are: in a file a dot is part of a name, so the closest key would be itself. */
function dottedFileKey(path: string[], origin: string): string {
  return `${shownName(path.join('.'))}: unknown key from ${origin}: in a file a dot is part of the name; nest the key ({"A": {"B": ...}}) or write it "A:B"`;
}

function unknownKey(path: string[], origin: string): string {
  const key = path.join('.');
  const hint = closestKey(key);
  return `${shownName(key)}: unknown key from ${origin}${hint ? ` (did you mean ${hint}?)` : ''}`;
}

/** The known key nearest in spelling, to catch typos; none when nothing is close. */
function closestKey(key: string): string | undefined {
  return closest(key, leafKeys().map((k) => k.key));
}
