// Write bodies of the configuration categories, derived from their keys (definitions.ts): every key
// optional (PUT merges), unknown keys refused, and each key's type and range those of the configuration
// key behind it (narrowed where the category says so) or of its API-only schema. Every key may also be
// null, which removes the value stored through the API (JSON merge patch, RFC 7396): without it a value
// once written over the API hid the configuration file's for good.
import type { SchemaNode } from '../config/schema.js';
import { categoryKeys, CATEGORY_NAMES, type CategoryKey, type CategoryName } from './definitions.js';

/**
 * What says what a value may be, and the words for a pattern (`x-expected`, which a refusal quotes
 * rather than the regular expression); defaults (PUT merges) and secrets stay behind.
 */
const WRITE_KEYWORDS = ['type', 'enum', 'minimum', 'maximum', 'minLength', 'maxLength', 'pattern', 'format', 'maxItems', 'uniqueItems', 'x-timespan'] as const;

function writeNode(node: SchemaNode): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const keyword of WRITE_KEYWORDS) if (node[keyword] !== undefined) out[keyword] = structuredClone(node[keyword]);
  if (node.pattern !== undefined && node['x-expected'] !== undefined) out['x-expected'] = node['x-expected'];
  if (node.items) out.items = writeNode(node.items);
  return out;
}

function keySchema(key: CategoryKey): Record<string, unknown> {
  const { node } = key;
  // JSON Schema has no keyword for a time span's range: the description says it in words.
  const timeSpan = node['x-timespan'] && node['x-expected'] ? ` Value: ${node['x-expected'].replace(/^must be /, '')}.` : '';
  const narrowing = key.configKey === undefined ? {} : key.narrowing;
  const written = { ...writeNode(node), ...narrowing, description: `${node.description ?? ''}${timeSpan} null removes the value stored through the API.` };
  return orNull(written);
}

/** `schema` that also takes null: its type gains 'null', and so does its enum, which applies to every value. */
export function orNull(schema: Record<string, unknown>): Record<string, unknown> {
  const types = Array.isArray(schema.type) ? (schema.type as string[]) : [schema.type as string];
  const out: Record<string, unknown> = { ...schema, type: [...types, 'null'] };
  if (Array.isArray(schema.enum)) out.enum = [...(schema.enum as unknown[]), null];
  return out;
}

/** The component name of a category's write schema: `voice` -> `VoiceSettings`. */
export const schemaName = (category: CategoryName): string => `${category[0]!.toUpperCase()}${category.slice(1)}Settings`;

function categorySchema(category: CategoryName): Record<string, unknown> {
  return {
    type: 'object',
    additionalProperties: false,
    properties: Object.fromEntries(categoryKeys(category).map(([name, key]) => [name, keySchema(key)])),
  };
}

export const CATEGORY_SCHEMAS: Record<string, Record<string, unknown>> = Object.fromEntries(
  CATEGORY_NAMES.map((c) => [schemaName(c), categorySchema(c)]),
);

/** Category name in the URL -> its write schema. */
export const CATEGORY_BODY: Record<string, string> = Object.fromEntries(CATEGORY_NAMES.map((c) => [c, schemaName(c)]));

/** The component name of a category's values as GET and PUT answer them: `voice` -> `VoiceValues`. */
export const valuesSchemaName = (category: CategoryName): string => `${category[0]!.toUpperCase()}${category.slice(1)}Values`;

/**
 * A category's values as they are answered: every key, each of its configuration key's type and range
 * (a value from the file, which the category's narrowing does not bind) or of its API-only schema, never
 * null (the answer is the effective value, whatever is stored).
 */
function valuesSchema(category: CategoryName): Record<string, unknown> {
  const keys = categoryKeys(category);
  return {
    type: 'object',
    additionalProperties: false,
    required: keys.map(([name]) => name),
    properties: Object.fromEntries(keys.map(([name, { node }]) => [name, { ...writeNode(node), description: node.description ?? '' }])),
  };
}

export const CATEGORY_VALUE_SCHEMAS: Record<string, Record<string, unknown>> = Object.fromEntries(
  CATEGORY_NAMES.map((c) => [valuesSchemaName(c), valuesSchema(c)]),
);
