// A member of a body written more than once (`{"rate":"bad","rate":16000}`, or in two letter cases):
// the last occurrence wins (member-order.ts, property-case.ts), yet System.Text.Json, as ASP.NET Core
// binds a body, reads every occurrence into the property's type, and an earlier one it cannot read
// fails the body with a 400 as a last one would. The values the last ones hid are noted here, by the
// object that held them, for the validator to read each one as the property's type (schemas.ts).
import type { ErrorObject } from 'ajv';
import { caseKey } from '../ignore-case.js';
import { quotedNumber } from './quoted-numbers.js';
import { schemaTypes, type JsonSchema } from './request-schemas.js';

const hidden = new WeakMap<object, Array<[string, unknown]>>();
/** Bodies whose objects hold hidden values somewhere: most hold none, and are not walked for them. */
const bodiesWithHidden = new WeakSet<object>();
/** Notes made so far in this process: a parse or a fold that changed it noted some. */
let notes = 0;

export const hiddenNotes = (): number => notes;

/** Marks `body` as holding hidden values in its objects. */
export const markHoldsHidden = (body: object): void => void bodiesWithHidden.add(body);

export const holdsHidden = (body: unknown): boolean => typeof body === 'object' && body !== null && bodiesWithHidden.has(body);

/** Notes that `object`'s member `name` (as written) had `value` before a later occurrence replaced it. */
export function noteHiddenMember(object: object, name: string, value: unknown): void {
  notes++;
  const list = hidden.get(object);
  if (list) list.push([name, value]);
  else hidden.set(object, [[name, value]]);
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

interface HiddenValue {
  /** Property names from the body's root, as the schema spells them. */
  readonly path: readonly string[];
  readonly value: unknown;
  /** The schema of the property at `path`. */
  readonly schema: JsonSchema;
}

/** The hidden values of the properties `schema` describes, in `body` and the objects nested in it. */
export function hiddenValues(schema: JsonSchema, body: unknown, path: readonly string[] = []): HiddenValue[] {
  const properties = schema.properties as Record<string, JsonSchema> | undefined;
  if (!properties || !isObject(body)) return [];
  const out: HiddenValue[] = [];
  const noted = hidden.get(body);
  if (noted !== undefined) {
    const spelled = new Map(Object.keys(properties).map((name) => [caseKey(name), name]));
    for (const [written, value] of noted) {
      const name = spelled.get(caseKey(written));
      // A null hidden by a later value is read as nothing, as a last one is (null-as-absent.ts).
      if (name !== undefined && value !== null) out.push({ path: [...path, name], value, schema: properties[name]! });
    }
  }
  for (const [name, property] of Object.entries(properties)) {
    if (Object.hasOwn(body, name)) out.push(...hiddenValues(property, body[name], [...path, name]));
  }
  return out;
}

const typeOf = (value: unknown): string =>
  value === null ? 'null' : Array.isArray(value) ? 'array' : Number.isInteger(value) ? 'integer' : typeof value;

/**
 * Type errors of a hidden value, worded as the validator words them: whether it, and what it holds that
 * the schema describes, can be read as their types. Its range and the like are not judged: ASP.NET
 * validates the bound value, which is the last. Walks the value once, so many hidden values cost no more
 * than the text that held them.
 */
export function hiddenValueTypeErrors(schema: JsonSchema, value: unknown, path: ReadonlyArray<string | number>): ErrorObject[] {
  const types = schemaTypes(schema);
  // A number written as a string is read as one where the field takes a number (quoted-numbers.ts).
  const type = typeOf((typeof value === 'string' ? quotedNumber(schema, value) : undefined) ?? value);
  if (types.length > 0 && !types.includes(type) && !(type === 'integer' && types.includes('number'))) {
    const instancePath = path.map((p) => `/${p}`).join('');
    return [{ keyword: 'type', instancePath, schemaPath: '#/type', params: { type: types.length === 1 ? types[0] : types }, message: `must be ${types.join(',')}` }];
  }
  if (Array.isArray(value)) {
    const items = schema.items as JsonSchema | undefined;
    return items ? value.flatMap((item, i) => hiddenValueTypeErrors(items, item, [...path, i])) : [];
  }
  const properties = schema.properties as Record<string, JsonSchema> | undefined;
  if (!properties || !isObject(value)) return [];
  const spelled = new Map(Object.keys(properties).map((name) => [caseKey(name), name]));
  return Object.entries(value).flatMap(([written, member]) => {
    const name = spelled.get(caseKey(written));
    // A null is read as nothing (null-as-absent.ts).
    return name === undefined || member === null ? [] : hiddenValueTypeErrors(properties[name]!, member, [...path, name]);
  });
}
