// Request-body validation: the schemas are in request-schemas.ts, their validators in validator.ts.
import type { ErrorObject, ValidateFunction } from 'ajv';
import { DomainError } from '../errors.js';
import { requestValidator } from './validator.js';
import { ILL_FORMED_TEXT, illFormedTextPaths } from '../well-formed.js';
import { MAX_BODY_DEPTH, nestsDeeperThan } from '../json-depth.js';
import { dropNulls } from './null-as-absent.js';
import { fractionSyntaxErrors, markedTwin } from './number-syntax.js';
import { foldPropertyNames } from './property-case.js';
import { readQuotedNumbers } from './quoted-numbers.js';
import { hiddenNotes, hiddenValues, hiddenValueTypeErrors, holdsHidden } from './hidden-members.js';
import { REQUEST_SCHEMAS, type JsonSchema } from './request-schemas.js';
import { pointerSegments } from '../config/validate.js';

/**
 * As many errors as one answer holds: ASP.NET's MaxModelValidationErrors, 200, the last of them saying
 * the rest went unsaid (its ModelStateDictionary records the 200th as TooManyModelErrorsException under
 * the empty key). A 64 KiB body of 21,000 wrong items otherwise answered 800 KB of errors.
 */
const MAX_MODEL_ERRORS = 200;
const TOO_MANY_ERRORS = 'The maximum number of allowed model errors has been reached.';
/**
 * ...and as much text at most: a name is clipped to MAX_NAME_CHARS in a field's key (each error repeats
 * its path; 200 errors under one 62,000-character name answered 12 MB to a 64 KB body), and past
 * MAX_ERROR_CHARS of keys and messages the answer is full as it is at 200 errors.
 */
const MAX_NAME_CHARS = 128;
const MAX_ERROR_CHARS = 64 * 1024;
/**
 * Values (object members and array items, nested ones included) a body may hold: far more than any
 * request of this API has (its largest, a registration, about 70). The validator looks at every value,
 * and 32,000 wrong items in 64 KB took it 45 ms; past this a body is refused for its size alone.
 */
export const MAX_BODY_VALUES = 1024;

export { REQUEST_SCHEMAS, type JsonSchema } from './request-schemas.js';

function validatorFor(schemaName: string): ValidateFunction {
  const validate = requestValidator(schemaName);
  if (!validate) throw new Error(`no schema named ${schemaName}`);
  return validate;
}

/**
 * Validates `body` against the named schema; throws a DomainError carrying per-field messages. Property
 * names are first given the schema's spelling whatever their case (property-case.ts), and a null is
 * removed as an absent property (null-as-absent.ts), so defaults apply. Every
 * string in the body, named by the schema or not, must be well-formed text: that is a property of
 * string validation here, not of particular fields, so no id, name or message can be stored changed.
 * An integer field given `16000.0` or `1.6e4` is refused as ASP.NET refuses it (number-syntax.ts), when
 * the body came from parseBody. A number written as a string is read as that number where the field
 * takes one (quoted-numbers.ts), as ASP.NET Core's web defaults read it.
 */
export function validateBody(schemaName: string, body: unknown): void {
  if (nestsDeeperThan(body, MAX_BODY_DEPTH)) {
    throw new DomainError('invalid_argument', 'The request body is invalid.', { $: [`The JSON value nests more than ${MAX_BODY_DEPTH} objects and arrays.`] });
  }
  if (holdsMoreValuesThan(body, MAX_BODY_VALUES)) {
    throw new DomainError('invalid_argument', 'The request body is invalid.', { $: [`The JSON value holds more than ${MAX_BODY_VALUES} values.`] });
  }
  const validate = validatorFor(schemaName);
  const schema = REQUEST_SCHEMAS[schemaName]!;
  // The twin (number-syntax.ts) is changed as the body is, so its markers stay where the values are.
  const twin = markedTwin(body);
  const notesBefore = hiddenNotes();
  for (const value of twin === undefined ? [body] : [body, twin]) {
    foldPropertyNames(schema, value);
    dropNulls(schema, value);
    readQuotedNumbers(schema, value);
  }
  const valid = validate(body);
  const errors = validate.errors ?? [];
  const typeErrors = twin === undefined ? [] : fractionSyntaxErrors(schema, twin);
  const illFormed = illFormedTextPaths(body, MAX_MODEL_ERRORS);
  // Values a later occurrence of their name hid (hidden-members.ts): read as their property's type too.
  if (hiddenNotes() !== notesBefore || holdsHidden(body) || holdsHidden(twin)) {
    const hidden = hiddenValues(schema, body);
    for (const { path, value, schema: property } of hidden) {
      typeErrors.push(...hiddenValueTypeErrors(property, value, path));
      for (const at of illFormedTextPaths(value, MAX_MODEL_ERRORS)) illFormed.push([...path, ...at]);
    }
    for (const { path, value, schema: property } of twin === undefined ? [] : hiddenValues(schema, twin)) typeErrors.push(...fractionSyntaxErrors(property, value, path));
  }
  if (valid && typeErrors.length === 0 && illFormed.length === 0) return;
  throw new DomainError('invalid_argument', 'The request body is invalid.', fieldErrors(schema, [...typeErrors, ...errors], illFormed));
}

/**
 * What a pattern stands for, where the schema says it in words (`x-expected`, as the configuration's
 * problem lines word it): `must be a host name, ...` rather than the regular expression.
 */
function patternExpected(schema: JsonSchema, schemaPath: string): string | undefined {
  let node: unknown = schema;
  for (const segment of schemaPath.replace(/^#\//, '').split('/').slice(0, -1)) {
    node = typeof node === 'object' && node !== null && Object.hasOwn(node, segment) ? (node as Record<string, unknown>)[segment] : undefined;
  }
  const expected = typeof node === 'object' && node !== null ? (node as Record<string, unknown>)['x-expected'] : undefined;
  return typeof expected === 'string' ? expected : undefined;
}

function fieldErrors(schema: JsonSchema, errors: ErrorObject[], illFormed: Array<Array<string | number>>): Record<string, string[]> {
  // A Map, not an object literal: a field may be named `__proto__`.
  const out = new Map<string, string[]>();
  let count = 0;
  let chars = 0;
  /** False once the answer is full: the marker took the last place. */
  const add = (key: string, message: string): boolean => {
    if (count < MAX_MODEL_ERRORS && (count === MAX_MODEL_ERRORS - 1 || chars + key.length + message.length > MAX_ERROR_CHARS)) {
      out.set('', [TOO_MANY_ERRORS]);
      count = MAX_MODEL_ERRORS;
    }
    if (count >= MAX_MODEL_ERRORS) return false;
    const messages = out.get(key);
    if (messages) messages.push(message);
    else out.set(key, [message]);
    count++;
    chars += key.length + message.length;
    return true;
  };
  for (const path of illFormed) {
    if (!add(fieldKey(path) || '$', ILL_FORMED_TEXT)) break;
  }
  // A value of the wrong type is one error, as ASP.NET's failed conversion is: what its range or list of
  // values would say of it is beside the point.
  const wrongType = new Set(errors.filter((e) => e.keyword === 'type').map((e) => e.instancePath));
  for (const e of errors) {
    if (count >= MAX_MODEL_ERRORS) break;
    if (e.keyword !== 'type' && wrongType.has(e.instancePath)) continue;
    const path = errorPath(schema, e.instancePath);
    let field = fieldKey(path);
    let message = e.message ?? 'is invalid';
    if (e.keyword === 'required') {
      const missing = String((e.params as { missingProperty: string }).missingProperty);
      field = fieldKey([...path, missing]);
      message = `The ${missing} field is required.`;
    } else if (e.keyword === 'additionalProperties') {
      const extra = clipped(String((e.params as { additionalProperty: string }).additionalProperty));
      field = fieldKey([...path, extra]);
      message = `Unknown setting '${extra}'.`;
    } else if (e.keyword === 'type' && Array.isArray((e.params as { type: unknown }).type)) {
      message = `must be ${((e.params as { type: string[] }).type).join(' or ')}`;
    } else if (e.keyword === 'pattern') {
      message = patternExpected(schema, e.schemaPath) ?? message;
    } else if (e.keyword === 'enum') {
      message = `must be one of ${(e.params as { allowedValues: unknown[] }).allowedValues.map((v) => JSON.stringify(v)).join(', ')}`;
    } else if (e.keyword === 'uniqueItems') {
      // ajv's own text ("items ## 2 and 0 are identical") reads as a fault of the service; its j is the later item.
      const { i, j } = e.params as { i: number; j: number };
      message = `must NOT have duplicate items: item ${j} repeats item ${i}`;
    }
    add(field || '$', message);
  }
  return Object.fromEntries(out);
}

const clipped = (name: string): string => (name.length > MAX_NAME_CHARS ? `${name.slice(0, MAX_NAME_CHARS)}…` : name);

/**
 * A field's key as ASP.NET Core writes it: names joined by dots, an array's index in brackets
 * (`capabilities[1]`, `metadata.room`), each name clipped.
 */
function fieldKey(path: ReadonlyArray<string | number>): string {
  let key = '';
  for (const part of path) key += typeof part === 'number' ? `[${part}]` : key === '' ? clipped(part) : `.${clipped(part)}`;
  return key;
}

/**
 * A validator error's path: its `instancePath` (a JSON Pointer) as names and indexes, a segment an index
 * where the schema says an array is. The pointer alone cannot tell `/tags/1` from a property named "1".
 */
function errorPath(schema: JsonSchema, instancePath: string): Array<string | number> {
  const path: Array<string | number> = [];
  let node: JsonSchema | undefined = schema;
  for (const segment of pointerSegments(instancePath)) {
    const items: unknown = node?.items;
    if (typeof items === 'object' && items !== null && /^(0|[1-9]\d*)$/.test(segment)) {
      path.push(Number(segment));
      node = items as JsonSchema;
      continue;
    }
    path.push(segment);
    const properties = node?.properties as Record<string, JsonSchema> | undefined;
    const additional: unknown = node?.additionalProperties;
    node = properties && Object.hasOwn(properties, segment) ? properties[segment] : typeof additional === 'object' && additional !== null ? (additional as JsonSchema) : undefined;
  }
  return path;
}

/** Whether `value` holds more than `max` values below it; stops counting there. Nesting is bounded before this runs. */
function holdsMoreValuesThan(value: unknown, max: number): boolean {
  let left = max;
  const walk = (v: unknown): boolean => {
    if (typeof v !== 'object' || v === null) return false;
    for (const child of Array.isArray(v) ? v : Object.values(v)) {
      if (--left < 0 || walk(child)) return true;
    }
    return false;
  };
  return walk(value);
}
