// An Ajv instance that knows the schemas' own vocabulary (vocabulary.ts). Both validators, the
// configuration's (validator.ts) and the request bodies' (src/http/validator.ts), are compiled with it:
// by tests under tsx at run time, by the build into standalone code (scripts/standalone-validators.ts),
// so the service itself carries neither ajv nor its compiler.
import { _, Ajv, str, stringify, type KeywordDefinition, type Options } from 'ajv';
import type { TimeSpanBounds } from './schema.js';
import { vocabulary } from './vocabulary.js';

/**
 * `x-timespan: { minimum, maximum }`: a time span within the bounds. Written as code, not as a
 * `validate` callback, so that the standalone form can name the check: `vocabulary.isTimeSpanWithin`.
 */
const timeSpanKeyword: KeywordDefinition = {
  keyword: 'x-timespan',
  type: 'string',
  schemaType: 'object',
  error: {
    message: ({ schema }) => str`must be a time span from ${(schema as TimeSpanBounds).minimum} to ${(schema as TimeSpanBounds).maximum}`,
    params: ({ schema }) => _`{minimum: ${(schema as TimeSpanBounds).minimum}, maximum: ${(schema as TimeSpanBounds).maximum}}`,
  },
  code(cxt) {
    const within = cxt.gen.scopeValue('func', { ref: vocabulary.isTimeSpanWithin, code: _`vocabulary.isTimeSpanWithin` });
    const bounds = cxt.gen.scopeValue('obj', { ref: cxt.schema, code: stringify(cxt.schema) });
    cxt.fail(_`!${within}(${cxt.data}, ${bounds})`);
  },
};

/** `source`: keep each function's source, for ajv's standaloneCode. */
export function vocabularyAjv(options: Options, source: boolean): Ajv {
  // The schemas are ours and test/config checks them against the meta-schema: skipped here.
  const ajv = new Ajv({ ...options, allErrors: true, validateSchema: false, code: { source, formats: _`vocabulary.formats` } });
  for (const [name, format] of Object.entries(vocabulary.formats)) ajv.addFormat(name, format);
  ajv.addKeyword(timeSpanKeyword);
  ajv.addKeyword({ keyword: 'x-expected', schemaType: 'string' });
  ajv.addKeyword({ keyword: 'x-public-form', schemaType: 'string' });
  ajv.addKeyword({ keyword: 'x-max-names', schemaType: 'number' });
  return ajv;
}
