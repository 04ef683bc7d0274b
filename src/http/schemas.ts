// Request-body validation: the schemas are in request-schemas.ts, their validators in validator.ts.
import type { ErrorObject, ValidateFunction } from 'ajv';
import { DomainError } from '../errors.js';
import { requestValidator } from './validator.js';
import { ILL_FORMED_TEXT, illFormedTextPaths } from '../well-formed.js';
import { MAX_JSON_DEPTH, nestsDeeperThan } from '../json-depth.js';
import { dropNulls } from './null-as-absent.js';
import { foldPropertyNames } from './property-case.js';
import { REQUEST_SCHEMAS } from './request-schemas.js';

/**
 * As many errors as one answer holds: ASP.NET's MaxModelValidationErrors, 200, the last of them saying
 * the rest went unsaid (its ModelStateDictionary records the 200th as TooManyModelErrorsException under
 * the empty key). A 64 KiB body of 21,000 wrong items otherwise answered 800 KB of errors.
 */
const MAX_MODEL_ERRORS = 200;
const TOO_MANY_ERRORS = 'The maximum number of allowed model errors has been reached.';

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
 */
export function validateBody(schemaName: string, body: unknown): void {
  if (nestsDeeperThan(body, MAX_JSON_DEPTH)) {
    throw new DomainError('invalid_argument', 'The request body is invalid.', { $: [`The JSON value nests more than ${MAX_JSON_DEPTH} objects and arrays.`] });
  }
  const validate = validatorFor(schemaName);
  const schema = REQUEST_SCHEMAS[schemaName]!;
  foldPropertyNames(schema, body);
  dropNulls(schema, body);
  const valid = validate(body);
  const illFormed = illFormedTextPaths(body, MAX_MODEL_ERRORS);
  if (valid && illFormed.length === 0) return;
  throw new DomainError('invalid_argument', 'The request body is invalid.', fieldErrors(validate.errors ?? [], illFormed));
}

function fieldErrors(errors: ErrorObject[], illFormed: Array<Array<string | number>>): Record<string, string[]> {
  // A Map, not an object literal: a field may be named `__proto__`.
  const out = new Map<string, string[]>();
  let count = 0;
  /** False once the answer is full: the marker took the last place. */
  const add = (key: string, message: string): boolean => {
    if (count === MAX_MODEL_ERRORS - 1) {
      out.set('', [TOO_MANY_ERRORS]);
      count++;
    }
    if (count >= MAX_MODEL_ERRORS) return false;
    const messages = out.get(key);
    if (messages) messages.push(message);
    else out.set(key, [message]);
    count++;
    return true;
  };
  for (const path of illFormed) {
    if (!add(path.join('.') || '$', ILL_FORMED_TEXT)) break;
  }
  for (const e of errors) {
    if (count >= MAX_MODEL_ERRORS) break;
    let field = e.instancePath.split('/').slice(1).join('.');
    let message = e.message ?? 'is invalid';
    if (e.keyword === 'required') {
      const missing = String((e.params as { missingProperty: string }).missingProperty);
      field = field ? `${field}.${missing}` : missing;
      message = `The ${missing} field is required.`;
    } else if (e.keyword === 'additionalProperties') {
      const extra = String((e.params as { additionalProperty: string }).additionalProperty);
      field = field ? `${field}.${extra}` : extra;
      message = `Unknown setting '${extra}'.`;
    } else if (e.keyword === 'type' && Array.isArray((e.params as { type: unknown }).type)) {
      message = `must be ${((e.params as { type: string[] }).type).join(' or ')}`;
    } else if (e.keyword === 'enum') {
      message = `must be one of ${(e.params as { allowedValues: unknown[] }).allowedValues.map((v) => JSON.stringify(v)).join(', ')}`;
    }
    add(field || '$', message);
  }
  return Object.fromEntries(out);
}
