// A whole number written with a fraction or an exponent (`16000.0`, `1.6e4`) is not an integer to ASP.NET
// Core: System.Text.Json reads an Int32 only from digits, and the body is a 400. JSON.parse makes the same
// number of both spellings, so the spelling is read here from the text: a second parse of it, made only
// when the text has such a number, in which each one is a marker string instead. The request schemas'
// integer fields then judge the marker (schemas.ts); a number field takes `20.0` as the number it is.
// So is a number past Int32 (`2147483648`, `1e400`), which System.Text.Json cannot convert either, where
// the validator takes it as an integer (Infinity too) and would judge only its range or list of values.
import { randomBytes } from 'node:crypto';
import type { ErrorObject } from 'ajv';
import { parseInTextOrder } from './member-order.js';
import { schemaTypes, type JsonSchema } from './request-schemas.js';

/** Unlike any string a client can know to send: a fresh nonce of each process. */
const MARKER = `\u0000whole-number-with-fraction-syntax-${randomBytes(8).toString('hex')}`;

/** A JSON string token or a JSON number token; in valid JSON nothing else holds a digit. */
const TOKEN = /"(?:[^"\\]|\\.)*"|-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?/g;

/**
 * True for every text holding a number token that may be whole though written with a fraction or an
 * exponent, or be past Int32 (and for some that hold none): an exponent; a fraction of zeros alone
 * (`16000.0`); 16 digits in a row, the dot aside (`15999.9999999999999` is 16000); or 10 digits in a row
 * (`2147483648`; no fewer make a number past Int32). A token without an exponent, with
 * a fraction not all zeros and 15 digits at most is never whole: a double keeps 15 significant digits
 * (DBL_DIG), so the decimal is what the double rounds back to, and it is not whole. `"temperature":41.5`
 * is thus spared the scan of every token below (3 % of a status update's CPU).
 */
const MAYBE_WHOLE_WITH_FRACTION = /\d[eE]|\.0+(?!\d)|(?:\d\.?){16}|\d{10}/;

/** The range of .NET's Int32, the type of every integer field of the interface. */
const INT32_MIN = -(2 ** 31);
const INT32_MAX = 2 ** 31 - 1;

/**
 * Whether System.Text.Json refuses a number token for an Int32 that the validator takes for an integer
 * (ajv's integer check passes Infinity, which `1e400` parses to): one written with a fraction or an
 * exponent, or one past Int32. A fraction that stays one (`16000.5`) the validator refuses itself.
 */
function noInt32(token: string): boolean {
  const value = Number(token);
  if (!Number.isInteger(value) && Number.isFinite(value)) return false;
  return /[.eE]/.test(token) || !(value >= INT32_MIN && value <= INT32_MAX);
}

/** What parseBody saw of each body object: its twin with the markers, for the bodies that have any. */
const twins = new WeakMap<object, unknown>();

/**
 * JSON.parse, noting the whole numbers of `text` written with a fraction or an exponent, a name written
 * twice at its last place (member-order.ts). Throws as JSON.parse does.
 */
export function parseBody(text: string): unknown {
  const value = parseInTextOrder(text);
  if (typeof value === 'object' && value !== null && MAYBE_WHOLE_WITH_FRACTION.test(text)) {
    let marked = false;
    const twinText = text.replace(TOKEN, (token) => {
      if (token.startsWith('"') || !noInt32(token)) return token;
      marked = true;
      return JSON.stringify(MARKER);
    });
    if (marked) twins.set(value, parseInTextOrder(twinText));
  }
  return value;
}

/**
 * The twin of a body parseBody returned, in which each whole number written with a fraction or an
 * exponent is a marker (fractionSyntaxErrors judges them); undefined when the body has none. Changes made to the body
 * after parsing (names folded, nulls dropped) must be made to the twin too.
 */
export function markedTwin(body: unknown): unknown {
  return typeof body === 'object' && body !== null ? twins.get(body) : undefined;
}

/** Whether a value of a body's twin stands for a whole number written with a fraction or an exponent. */
const isWholeWithFraction = (value: unknown): boolean => value === MARKER;

/**
 * A type error, as the validator words one, for each field of `schema` that takes an integer (and no
 * other number) and that `twin` gives a whole number written with a fraction or an exponent.
 */
export function fractionSyntaxErrors(schema: JsonSchema, twin: unknown, path: ReadonlyArray<string | number> = []): ErrorObject[] {
  if (isWholeWithFraction(twin)) {
    const types = schemaTypes(schema);
    if (!types.includes('integer') || types.includes('number')) return [];
    return [{ keyword: 'type', instancePath: path.map((p) => `/${p}`).join(''), schemaPath: '#/type', params: { type: types.length === 1 ? types[0] : types }, message: `must be ${types.join(',')}` }];
  }
  if (Array.isArray(twin)) {
    const items = schema.items as JsonSchema | undefined;
    return items ? twin.flatMap((item, i) => fractionSyntaxErrors(items, item, [...path, i])) : [];
  }
  const properties = schema.properties as Record<string, JsonSchema> | undefined;
  if (!properties || typeof twin !== 'object' || twin === null) return [];
  return Object.entries(properties).flatMap(([name, property]) =>
    Object.hasOwn(twin, name) ? fractionSyntaxErrors(property, (twin as Record<string, unknown>)[name], [...path, name]) : [],
  );
}
