// JSON Schema (draft-07, as ajv reads the request schemas) -> OpenAPI 3.0 Schema Object. OpenAPI 3.0
// has its own dialect: `type` is one string and null is `nullable: true`; no `$schema`, `$id`, `const`
// or `examples`; exclusive bounds are booleans beside minimum/maximum. A keyword 3.0 cannot express is
// refused with an error rather than dropped, so a request schema the document would show wrongly fails
// the OpenAPI tests instead of misleading a reader.
import { TIME_SPAN_PATTERN } from '../../config/timespan.js';

type Schema = Record<string, unknown>;

/** Keywords that mean the same in both dialects and hold no sub-schema. */
const SAME = new Set([
  'title', 'description', 'format', 'default', 'example', 'enum', 'required', 'pattern', 'multipleOf',
  'minimum', 'maximum', 'minLength', 'maxLength', 'minItems', 'maxItems', 'uniqueItems', 'minProperties',
  'maxProperties', 'readOnly', 'writeOnly', 'deprecated', 'nullable', '$ref', 'discriminator', 'externalDocs',
]);
/** Meta keywords with no meaning for a reader of the document. */
const DROPPED = new Set(['$schema', '$id', '$comment']);

const isSchema = (v: unknown): v is Schema => typeof v === 'object' && v !== null && !Array.isArray(v);

function sub(value: unknown, at: string): Schema {
  if (!isSchema(value)) throw new Error(`${at}: expected a schema object`);
  return toOpenApiSchema(value, at);
}

/**
 * The OpenAPI 3.0 form of `schema`: a new object (the input, which ajv compiled, is never touched).
 * `at` names the place in error messages, e.g. `RegisterDeviceRequest`.
 */
export function toOpenApiSchema(schema: Schema, at = '#'): Schema {
  const out: Schema = {};
  for (const [key, value] of Object.entries(schema)) {
    const here = `${at}/${key}`;
    if (DROPPED.has(key)) continue;
    if (key === 'type') {
      const types = Array.isArray(value) ? value : [value];
      const real = types.filter((t) => t !== 'null');
      if (real.length !== 1) throw new Error(`${here}: ${JSON.stringify(value)} has no OpenAPI 3.0 form (one type, optionally with null)`);
      out.type = real[0];
      if (real.length < types.length) out.nullable = true;
    } else if (key === 'const') {
      out.enum = [structuredClone(value)];
    } else if (key === 'examples') {
      if (!Array.isArray(value)) throw new Error(`${here}: expected an array`);
      if (value.length > 0) out.example = structuredClone(value[0]);
    } else if (key === 'exclusiveMinimum' || key === 'exclusiveMaximum') {
      if (typeof value === 'boolean') {
        out[key] = value; // already the 3.0 form
      } else {
        const bound = key === 'exclusiveMinimum' ? 'minimum' : 'maximum';
        if (bound in schema) throw new Error(`${here}: both ${bound} and ${key} given; 3.0 has one bound`);
        out[bound] = value;
        out[key] = true;
      }
    } else if (key === 'properties') {
      if (!isSchema(value)) throw new Error(`${here}: expected an object`);
      // A Map first: a property may be named `__proto__`.
      const props = new Map<string, Schema>();
      for (const [name, s] of Object.entries(value)) props.set(name, sub(s, `${here}/${name}`));
      out.properties = Object.fromEntries(props);
    } else if (key === 'items') {
      if (Array.isArray(value)) throw new Error(`${here}: tuple items have no OpenAPI 3.0 form`);
      out.items = sub(value, here);
    } else if (key === 'additionalProperties') {
      out.additionalProperties = typeof value === 'boolean' ? value : sub(value, here);
    } else if (key === 'not') {
      out.not = sub(value, here);
    } else if (key === 'allOf' || key === 'anyOf' || key === 'oneOf') {
      if (!Array.isArray(value)) throw new Error(`${here}: expected an array`);
      out[key] = value.map((s, i) => sub(s, `${here}/${i}`));
    } else if (key === 'x-timespan') {
      out[key] = structuredClone(value);
      // The form of a time span as a pattern a generic validator checks (the bounds are in the description).
      if (schema.pattern === undefined) out.pattern = TIME_SPAN_PATTERN;
    } else if (SAME.has(key) || key.startsWith('x-')) {
      // `x-` keys are specification extensions, which a 3.0 Schema Object may carry (`x-timespan`).
      out[key] = structuredClone(value);
    } else {
      throw new Error(`${here}: JSON Schema keyword '${key}' has no OpenAPI 3.0 equivalent`);
    }
  }
  if (out.nullable === true && out.type === undefined) throw new Error(`${at}: nullable needs a type in OpenAPI 3.0`);
  return out;
}
