// A null for a property is read as if the property were absent, as ASP.NET Core binds it: .NET clients
// serialising with System.Text.Json's defaults send null for every property they leave unset. So an
// optional one takes its default, and a required one is missing ("The deviceId field is required.", as
// ASP.NET says of a null in a non-nullable property). One whose schema takes null (a status metric, a
// settings key) keeps its null, which means something there.
import { orNull } from '../settings/schemas.js';
import type { JsonSchema } from './request-schemas.js';

function takesNull(schema: JsonSchema): boolean {
  const type = schema.type;
  return type === 'null' || (Array.isArray(type) && type.includes('null'));
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Removes, in place, the null properties of `body` and of the objects nested in it the schema describes. */
export function dropNulls(schema: JsonSchema, body: unknown): void {
  const properties = schema.properties as Record<string, JsonSchema> | undefined;
  if (!properties || !isObject(body)) return;
  for (const [name, property] of Object.entries(properties)) {
    if (!Object.hasOwn(body, name)) continue;
    if (body[name] === null && !takesNull(property)) delete body[name];
    else dropNulls(property, body[name]);
  }
}

/**
 * `schema` as a client may write it, for the API document: an optional property whose schema refuses
 * null takes it (its type and enum gain null), as dropNulls reads it as absent. A required one is left
 * as it is, since its null is answered as a missing one; the walk is dropNulls's own (`properties`, down
 * into the objects they describe). A new object: the input, which ajv compiled, is not touched.
 */
export function nullsReadAsAbsent(schema: JsonSchema): JsonSchema {
  const properties = schema.properties as Record<string, JsonSchema> | undefined;
  if (!properties) return schema;
  const required = new Set(Array.isArray(schema.required) ? (schema.required as string[]) : []);
  const out = new Map<string, JsonSchema>();
  for (const [name, property] of Object.entries(properties)) {
    const inner = nullsReadAsAbsent(property);
    out.set(name, required.has(name) || takesNull(inner) || inner.type === undefined ? inner : orNull(inner));
  }
  return { ...schema, properties: Object.fromEntries(out) };
}
