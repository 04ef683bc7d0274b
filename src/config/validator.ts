// The configuration's validator as ajv compiles it on first use: the form tests run under tsx. The
// bundle replaces this module with the same validator as standalone code generated at build time
// (scripts/standalone-validators.ts, build.mjs), so the service neither loads ajv nor compiles at start.
import type { Ajv, ValidateFunction } from 'ajv';
import { vocabularyAjv } from './ajv.js';
import { CONFIG_SCHEMA } from './schema.js';

/** The schema's name in its Ajv instance and in the standalone code. */
export const CONFIG_SCHEMA_NAME = 'Config';

/** Strict: the schema is ours and complete. `source`: for standaloneCode. */
export function configAjv(source = false): Ajv {
  const ajv = vocabularyAjv({ strict: true }, source);
  ajv.addSchema(CONFIG_SCHEMA, CONFIG_SCHEMA_NAME);
  return ajv;
}

let ajv: Ajv | undefined;

export function configValidator(): ValidateFunction {
  return (ajv ??= configAjv()).getSchema(CONFIG_SCHEMA_NAME)!;
}
