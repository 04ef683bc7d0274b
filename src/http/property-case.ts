// Property names in request bodies matched without regard to case, as ASP.NET Core reads JSON bodies
// (System.Text.Json with its web defaults: PropertyNameCaseInsensitive). A .NET client that serialises
// with System.Text.Json's plain defaults writes `DeviceId`; ASP.NET binds it to deviceId, and so does
// this. Where a body names one property twice in different cases, the last one wins, as there; the
// value it hid is noted (hidden-members.ts), as its type still counts.
import type { JsonSchema } from './request-schemas.js';
import { caseKey } from '../ignore-case.js';
import { noteHiddenMember } from './hidden-members.js';

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Each schema's property names by their caseKey: the schemas are fixed, and every request body passes here. */
const spellings = new WeakMap<JsonSchema, ReadonlyMap<string, string>>();

function spellingsOf(schema: JsonSchema, properties: Record<string, JsonSchema>): ReadonlyMap<string, string> {
  let spelled = spellings.get(schema);
  if (!spelled) {
    spelled = new Map(Object.keys(properties).map((name) => [caseKey(name), name]));
    spellings.set(schema, spelled);
  }
  return spelled;
}

/** Renames, in place, the properties of `body` (and of the objects nested in it the schema describes) to the schema's spelling. */
export function foldPropertyNames(schema: JsonSchema, body: unknown): void {
  const properties = schema.properties as Record<string, JsonSchema> | undefined;
  if (!properties || !isObject(body)) return;
  // Most bodies name every property in the schema's own spelling: nothing to rename, and no name can
  // then stand twice (an object's keys differ), so only the nested objects are left to fold.
  const keys = Object.keys(body);
  if (keys.every((key) => Object.hasOwn(properties, key))) {
    for (const key of keys) foldPropertyNames(properties[key]!, body[key]);
    return;
  }
  const spelled = spellingsOf(schema, properties);
  const last = new Map<string, unknown>();
  const renamed: string[] = [];
  for (const key of keys) {
    // A name sent in the schema's own spelling is its own caseKey's spelling: no folding needed to find it.
    const name = Object.hasOwn(properties, key) ? key : spelled.get(caseKey(key));
    if (name === undefined) continue;
    if (last.has(name)) noteHiddenMember(body, name, last.get(name));
    last.set(name, body[key]);
    if (key !== name) renamed.push(key);
  }
  for (const key of renamed) delete body[key];
  for (const [name, value] of last) {
    body[name] = value;
    foldPropertyNames(properties[name]!, value);
  }
}
