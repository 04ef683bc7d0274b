// What a value of a schema node is, as a TypeScript type and at run time, so that no type or conversion
// is written beside the schema by hand. A time span has two forms: its .NET text in files, requests and
// responses, and milliseconds in the loaded configuration and the settings the program acts on.
import { formatTimeSpan, parseTimeSpan } from './timespan.js';
import type { SchemaNode } from './schema.js';

/**
 * The value a node describes; `TimeSpan` is the form of time spans (`string` for text, `number` for
 * milliseconds). Sections become readonly objects, a map section (`additionalProperties` a schema) also
 * admits any other name, an `enum` becomes the union of its values.
 */
export type SchemaValue<N, TimeSpan> = N extends { readonly 'x-timespan': object }
  ? TimeSpan
  : N extends { readonly type: 'object'; readonly properties: infer P }
    ? SectionValue<P, N, TimeSpan>
    : N extends { readonly enum: readonly (infer E)[] }
      ? E
      : N extends { readonly type: 'array'; readonly items: infer I }
        ? readonly SchemaValue<I, TimeSpan>[]
        : N extends { readonly type: 'string' }
          ? string
          : N extends { readonly type: 'integer' }
            ? number
            : N extends { readonly type: 'boolean' }
              ? boolean
              : never;

type SectionValue<P, N, TimeSpan> = { readonly [K in keyof P]: SchemaValue<P[K], TimeSpan> } & (N extends {
  readonly additionalProperties: infer A extends object;
}
  ? Readonly<Record<string, SchemaValue<A, TimeSpan>>>
  : unknown);

/** A value in the program's form: time spans in milliseconds (the loaded configuration, settings). */
export type ConfigValue<N> = SchemaValue<N, number>;
/** A value in its JSON form: time spans as text (files, request and response bodies). */
export type JsonValue<N> = SchemaValue<N, string>;

/** The program's form of a valid leaf value in JSON form: a time span's text becomes milliseconds. */
export function toConfigValue(node: SchemaNode, json: unknown): unknown {
  return node['x-timespan'] && typeof json === 'string' ? parseTimeSpan(json) : json;
}

/** The JSON form of a leaf value in the program's form: a time span's milliseconds become its text. */
export function toJsonValue(node: SchemaNode, value: unknown): unknown {
  return node['x-timespan'] && typeof value === 'number' ? formatTimeSpan(value) : value;
}
