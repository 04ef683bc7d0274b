// A number written as a JSON string (`"sampleRate":"16000"`, `"temperature":"21.5"`) is that number to
// ASP.NET Core: MVC reads bodies with System.Text.Json's web defaults (JsonSerializerDefaults.Web), whose
// NumberHandling is AllowReadingFromString, so a client (firmware that formats every value as text)
// gets a 200 where the validator saw a string and answered 400. The string's text must be what
// System.Text.Json's Utf8Parser reads whole as the field's type: an optional sign and digits for an
// Int32 (no fraction, exponent, white space, nor anything past Int32), and for a number also a fraction
// and an exponent, finite. Anything else stays a string and gets the validator's type error, as the
// failed conversion does there. The named literals (`"NaN"`, `"Infinity"`), which it also reads under
// that option, stay strings here: no range takes them, so they are a 400 either way.
import { schemaTypes, type JsonSchema } from './request-schemas.js';

const INT32_TEXT = /^[+-]?\d+$/;
const NUMBER_TEXT = /^[+-]?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?$/;

/**
 * The number a string is for a field of `schema`, as System.Text.Json reads a quoted number; undefined
 * where it reads none: a field that takes text or no number, or a text that is no number of its type.
 */
export function quotedNumber(schema: JsonSchema, text: string): number | undefined {
  const types = schemaTypes(schema);
  if (types.includes('string')) return undefined;
  if (types.includes('number')) {
    if (!NUMBER_TEXT.test(text)) return undefined;
    const value = Number(text);
    return Number.isFinite(value) ? value : undefined;
  }
  if (!types.includes('integer') || !INT32_TEXT.test(text)) return undefined;
  const value = Number(text);
  return value >= -(2 ** 31) && value <= 2 ** 31 - 1 ? value + 0 : undefined;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * Replaces, in place, each string of `value` that a numeric field of `schema` reads as a number with
 * that number, following the schema's properties (their names as it spells them: property-case.ts ran
 * first) and items.
 */
export function readQuotedNumbers(schema: JsonSchema, value: unknown): void {
  const items = schema.items as JsonSchema | undefined;
  if (Array.isArray(value)) {
    if (!items) return;
    value.forEach((item, i) => {
      const number = typeof item === 'string' ? quotedNumber(items, item) : undefined;
      if (number !== undefined) value[i] = number;
      else readQuotedNumbers(items, item);
    });
    return;
  }
  const properties = schema.properties as Record<string, JsonSchema> | undefined;
  if (!properties || !isObject(value)) return;
  for (const [name, property] of Object.entries(properties)) {
    if (!Object.hasOwn(value, name)) continue;
    const member = value[name];
    const number = typeof member === 'string' ? quotedNumber(property, member) : undefined;
    if (number !== undefined) value[name] = number;
    else readQuotedNumbers(property, member);
  }
}
