// Request-body validation: the schemas are in request-schemas.ts, their validators in validator.ts.
import type { ErrorObject, ValidateFunction } from 'ajv';
import { DomainError } from '../errors.js';
import { requestValidator } from './validator.js';
import { ILL_FORMED_TEXT, illFormedTextPaths } from '../well-formed.js';
import { MAX_JSON_DEPTH, nestsDeeperThan } from '../json-depth.js';

/** As many ill-formed strings as are named in one answer: ASP.NET's MaxModelValidationErrors, 200. */
const MAX_REPORTED_ILL_FORMED = 200;

export { REQUEST_SCHEMAS, type JsonSchema } from './request-schemas.js';

function validatorFor(schemaName: string): ValidateFunction {
  const validate = requestValidator(schemaName);
  if (!validate) throw new Error(`no schema named ${schemaName}`);
  return validate;
}

/**
 * Validates `body` against the named schema; throws a DomainError carrying per-field messages. Every
 * string in the body, named by the schema or not, must be well-formed text: that is a property of
 * string validation here, not of particular fields, so no id, name or message can be stored changed.
 */
export function validateBody(schemaName: string, body: unknown): void {
  if (nestsDeeperThan(body, MAX_JSON_DEPTH)) {
    throw new DomainError('invalid_argument', 'The request body is invalid.', { $: [`The JSON value nests more than ${MAX_JSON_DEPTH} objects and arrays.`] });
  }
  const validate = validatorFor(schemaName);
  const valid = validate(body);
  const illFormed = illFormedTextPaths(body, MAX_REPORTED_ILL_FORMED);
  if (valid && illFormed.length === 0) return;
  throw new DomainError('invalid_argument', 'The request body is invalid.', fieldErrors(validate.errors ?? [], illFormed));
}

function fieldErrors(errors: ErrorObject[], illFormed: Array<Array<string | number>>): Record<string, string[]> {
  // A Map, not an object literal: a field may be named `__proto__`.
  const out = new Map<string, string[]>();
  for (const path of illFormed) {
    const key = path.join('.') || '$';
    out.set(key, [...(out.get(key) ?? []), ILL_FORMED_TEXT]);
  }
  for (const e of errors) {
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
    const key = field || '$';
    out.set(key, [...(out.get(key) ?? []), message]);
  }
  return Object.fromEntries(out);
}
