// Validates the merged configuration against the schema (validator.ts) and words each problem as one
// line naming the key, the value (as shown.ts shows it), where it came from and what was expected.
import type { ErrorObject } from 'ajv';
import { own, setOwn } from './own.js';
import type { Problems } from './problems.js';
import { configValidator } from './validator.js';
import { type SchemaNode } from './schema.js';
import { resolveKey } from './schema-keys.js';
import { problemValue, type PublicForm } from './shown.js';
import type { Entries, Entry } from './layers.js';

/** The merged tree, as appsettings.json would hold it. */
export function buildTree(entries: Entries): Record<string, unknown> {
  const root: Record<string, unknown> = {};
  for (const { path, value } of entries.all()) {
    let obj = root;
    for (const seg of path.slice(0, -1)) obj = (own(obj, seg) ?? setOwn(obj, seg, {})) as Record<string, unknown>;
    setOwn(obj, path[path.length - 1]!, value);
  }
  return root;
}

/** Adds one line per key whose effective value is invalid (ajv may report a key more than once). */
export function validate(tree: Record<string, unknown>, entries: Entries, problems: Problems, publicForm?: PublicForm): void {
  const validator = configValidator();
  if (validator(tree)) return;
  const seen = new Set<string>();
  for (const error of validator.errors ?? []) {
    const found = describe(error, entries);
    if (seen.has(found.key)) continue;
    seen.add(found.key);
    problems.add(() => found.text(publicForm));
  }
}

interface Found {
  key: string;
  /** Worded only for a listed problem. */
  text: (publicForm: PublicForm | undefined) => string;
}

/** The names of a validator error's `instancePath`, a JSON Pointer (RFC 6901: `~1` is `/`, `~0` is `~`). */
export const pointerSegments = (instancePath: string): string[] =>
  instancePath.split('/').slice(1).map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));

function describe(error: ErrorObject, entries: Entries): Found {
  const segments = pointerSegments(error.instancePath);
  const direct = entries.get(segments);
  if (direct) return line(direct, undefined, error);
  const parent = entries.get(segments.slice(0, -1));
  if (parent && Array.isArray(parent.value)) return line(parent, Number(segments[segments.length - 1]), error);
  // Not a key of its own (cannot happen with defaults for every key); say what ajv said.
  const key = segments.join('.') || '(root)';
  return { key, text: () => `${key}: ${error.message ?? 'is invalid'}` };
}

/** A string over its length limit: what the key's own words would not say (they describe its characters). */
const tooLong = (error: ErrorObject): string | undefined =>
  error.keyword === 'maxLength' ? `must be at most ${String(error.params.limit)} characters` : undefined;

function line(entry: Entry, index: number | undefined, error: ErrorObject): Found {
  const key = entry.path.join('.') + (index === undefined ? '' : `[${index}]`);
  return {
    key,
    text: (publicForm) => {
      const node: SchemaNode = resolveKey(entry.path)?.node ?? {};
      const value = index === undefined ? entry.value : (entry.value as unknown[])[index];
      const origin = index === undefined ? entry.origin : (entry.itemOrigins?.[index] ?? entry.origin);
      const expected = tooLong(error) ?? (index === undefined ? node : (node.items ?? node))['x-expected'] ?? 'is not a valid value';
      return `${key}: ${problemValue(node, value, publicForm)} from ${origin} is invalid: ${expected}`;
    },
  };
}
