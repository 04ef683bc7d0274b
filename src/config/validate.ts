// Validates the merged configuration against the schema (validator.ts) and words each problem as one
// line naming the key, the value (never a secret's), where it came from and what was expected.
import type { ErrorObject } from 'ajv';
import { own, setOwn } from './own.js';
import { configValidator } from './validator.js';
import { resolveKey, type SchemaNode } from './schema.js';
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

/** One line per key whose effective value is invalid; empty when the configuration is valid. */
export function validate(tree: Record<string, unknown>, entries: Entries): string[] {
  const validator = configValidator();
  if (validator(tree)) return [];
  const lines = new Map<string, string>();
  for (const error of validator.errors ?? []) {
    const line = describe(error, entries);
    if (!lines.has(line.key)) lines.set(line.key, line.text);
  }
  return [...lines.values()];
}

function describe(error: ErrorObject, entries: Entries): { key: string; text: string } {
  const segments = error.instancePath.split('/').slice(1).map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
  const direct = entries.get(segments);
  if (direct) return line(direct, undefined);
  const parent = entries.get(segments.slice(0, -1));
  if (parent && Array.isArray(parent.value)) return line(parent, Number(segments[segments.length - 1]));
  // Not a key of its own (cannot happen with defaults for every key); say what ajv said.
  const key = segments.join('.') || '(root)';
  return { key, text: `${key}: ${error.message ?? 'is invalid'}` };
}

function line(entry: Entry, index: number | undefined): { key: string; text: string } {
  const resolved = resolveKey(entry.path);
  const node: SchemaNode = resolved?.node ?? {};
  const key = entry.path.join('.') + (index === undefined ? '' : `[${index}]`);
  const value = index === undefined ? entry.value : (entry.value as unknown[])[index];
  const origin = index === undefined ? entry.origin : (entry.itemOrigins?.[index] ?? entry.origin);
  const expected = (index === undefined ? node : (node.items ?? node))['x-expected'] ?? 'is not a valid value';
  return { key, text: `${key}: ${show(value, node)} from ${origin} is invalid: ${expected}` };
}

/** The offending value, except a secret's, which is only described. */
function show(value: unknown, node: SchemaNode): string {
  if (node.writeOnly) return value === '' ? '""' : typeof value === 'string' ? `(secret, ${[...value].length} characters)` : '(secret)';
  if (typeof value === 'number') return String(value);
  return JSON.stringify(value) ?? String(value);
}
