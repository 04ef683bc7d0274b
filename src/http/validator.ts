// The request bodies' validators (one per REQUEST_SCHEMAS name) as ajv compiles them, each on first
// use: the form tests run under tsx. The bundle replaces this module with the same validators as
// standalone code generated at build time (scripts/standalone-validators.ts, build.mjs), so the
// service neither loads ajv nor compiles on a first request.
import type { Ajv, ValidateFunction } from 'ajv';
import { vocabularyAjv } from '../config/ajv.js';
import { REQUEST_SCHEMAS } from './request-schemas.js';

/** Not strict: union types (a number or null) are part of the request schemas. `source`: for standaloneCode. */
export function requestAjv(source = false): Ajv {
  const ajv = vocabularyAjv({ strict: false }, source);
  for (const [name, schema] of Object.entries(REQUEST_SCHEMAS)) ajv.addSchema(schema, name);
  return ajv;
}

let ajv: Ajv | undefined;

/** The validator of the named request schema; undefined for any other name. */
export function requestValidator(name: string): ValidateFunction | undefined {
  return Object.hasOwn(REQUEST_SCHEMAS, name) ? (ajv ??= requestAjv()).getSchema(name) : undefined;
}
