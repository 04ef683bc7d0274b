// Walks over the configuration schema: its keys as dot paths and environment names, the secret ones,
// a key as written (any letter case, `A__B` or `A.B`) resolved to the schema's spelling, and the
// built-in defaults as a configuration tree.
import { CONFIG_SCHEMA, type SchemaNode } from './schema.js';
import { caseKey } from '../ignore-case.js';

export interface LeafKey {
  /** Segments from the root; a map entry's last segment is its name ("Microsoft.AspNetCore"). */
  readonly path: readonly string[];
  readonly key: string;
  readonly node: SchemaNode;
}

/** Every key with a value of its own (maps contribute the entries the schema names), in schema order. */
export function leafKeys(node: SchemaNode = CONFIG_SCHEMA, path: string[] = []): LeafKey[] {
  if (node.type !== 'object') return [{ path, key: path.join('.'), node }];
  return Object.entries(node.properties ?? {}).flatMap(([name, child]) => leafKeys(child, [...path, name]));
}

/**
 * The environment variable for a key (`__` is the nesting separator, as in .NET). A map entry's name may
 * hold dots (`Microsoft.AspNetCore`), which a shell variable's name cannot: they become `__` too, and
 * resolveKey joins the parts under a map back with dots.
 */
export const envName = (path: readonly string[]): string => path.flatMap((segment) => segment.split('.')).join('__');

/** Dot paths of the secret keys, from `writeOnly` in the schema. */
export const SECRET_KEYS: readonly string[] = Object.freeze(leafKeys().filter((k) => k.node.writeOnly).map((k) => k.key));

export type Resolved =
  | { kind: 'leaf'; path: string[]; node: SchemaNode }
  | { kind: 'item'; path: string[]; node: SchemaNode; index: string };

/** Case-insensitive property lookup; returns the schema's spelling. */
export function findProperty(node: SchemaNode, name: string): string | undefined {
  const props = node.properties ?? {};
  if (Object.hasOwn(props, name)) return name;
  const wanted = caseKey(name);
  return Object.keys(props).find((p) => caseKey(p) === wanted);
}

/**
 * Whether a key has an empty part (`Logging.LogLevel..x`, `Logging__LogLevel____x`, a leading or trailing
 * separator, a map's key `""` or `".x"` in the file): it names no key, though under a map the rest
 * would be taken as a name (the log category `.x`, which no logger has) and quietly do nothing.
 */
export const hasEmptyPart = (segments: readonly string[]): boolean => segments.some((s) => s === '');
/** Why such a key is refused, after its name; `separator` as the source spells it. */
export const emptyPartText = (separator: string): string =>
  `names no key: a key has no empty part (no ${separator} doubled, leading or trailing)`;

/**
 * Maps key segments (split from `A__B` or `A.B`) to a key of the schema, case-insensitively.
 * Under a map the rest of the segments, joined with dots, is one name; under an array the next
 * segment is an index. Sections and unknown keys resolve to undefined.
 */
export function resolveKey(segments: readonly string[]): Resolved | undefined {
  let node: SchemaNode = CONFIG_SCHEMA;
  const path: string[] = [];
  for (let i = 0; i < segments.length; i++) {
    const seg = segments[i]!;
    if (node.type === 'object') {
      const prop = findProperty(node, seg);
      if (prop !== undefined) {
        path.push(prop);
        node = node.properties![prop]!;
        continue;
      }
      if (typeof node.additionalProperties === 'object') {
        return { kind: 'leaf', path: [...path, segments.slice(i).join('.')], node: node.additionalProperties };
      }
      return undefined;
    }
    if (node.type === 'array' && i === segments.length - 1) return { kind: 'item', path, node, index: seg };
    return undefined;
  }
  return node.type === 'object' ? undefined : { kind: 'leaf', path, node };
}

/** The built-in defaults as an appsettings.json tree (time spans as text), from the schema. */
export function schemaDefaults(node: SchemaNode = CONFIG_SCHEMA): unknown {
  if (node.type !== 'object') return structuredClone(node.default);
  const out: Record<string, unknown> = {};
  for (const [name, child] of Object.entries(node.properties ?? {})) out[name] = schemaDefaults(child);
  return out;
}
