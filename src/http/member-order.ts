// A property a JSON body names more than once. System.Text.Json, as ASP.NET Core binds a body, meets the
// members in the order they are written and sets the property at each one, so the last written wins,
// also among spellings that differ only in case (property-case.ts keeps the last by its place in the
// object). JSON.parse keeps the last value of a name written twice but leaves it at the place of its
// first: `{"rate":8000,"Rate":12000,"rate":16000}` became {rate: 16000, Rate: 12000}, and 12000 won.
// The values a later occurrence hid are noted (hidden-members.ts): their type still counts.
import { MAX_BODY_DEPTH, nestsDeeperThan } from '../json-depth.js';
import { hiddenNotes, markHoldsHidden, noteHiddenMember } from './hidden-members.js';

/** A JSON string token; in valid JSON no quote stands outside one. */
const STRING = /"(?:[^"\\]|\\.)*"/g;
/** Ends each name of the renamed text: no name a client sends ends with it, since its ordinal follows. */
const ORDINAL = '\u0000';

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** JSON.parse, with each name written more than once in one object at the place of its last occurrence. */
export function parseInTextOrder(text: string): unknown {
  const value: unknown = JSON.parse(text);
  // Deeper than the limit the body is refused anyway (schemas.ts), and is not walked here.
  if (typeof value !== 'object' || value === null || nestsDeeperThan(value, MAX_BODY_DEPTH)) return value;
  const members = memberCount(value);
  // Each name is followed by a colon: as many colons as members, and no name can have been written twice.
  // Most bodies end here, without the scan of every string below (it doubled the parse of a status update).
  if (colons(text) === members) return value;
  const names = nameTokens(text);
  if (names.length === members) return value;
  // Each name made unique by its ordinal, so the parse keeps every occurrence in the order written.
  const escaped = JSON.stringify(ORDINAL).slice(1, -1);
  let ordinal = 0;
  const renamed = replaceTokens(text, names, (token) => `${token.slice(0, -1)}${escaped}${ordinal++}"`);
  const before = hiddenNotes();
  const body = lastWins(JSON.parse(renamed));
  if (hiddenNotes() !== before && typeof body === 'object' && body !== null) markHoldsHidden(body);
  return body;
}

function colons(text: string): number {
  let n = 0;
  for (let i = text.indexOf(':'); i !== -1; i = text.indexOf(':', i + 1)) n++;
  return n;
}

/** Where each member name of `text` (valid JSON) starts and ends: the strings followed by a colon. */
function nameTokens(text: string): Array<[number, number]> {
  const out: Array<[number, number]> = [];
  STRING.lastIndex = 0;
  for (let m = STRING.exec(text); m; m = STRING.exec(text)) {
    const end = m.index + m[0].length;
    let i = end;
    while (text.charCodeAt(i) === 0x20 || text.charCodeAt(i) === 0x09 || text.charCodeAt(i) === 0x0a || text.charCodeAt(i) === 0x0d) i++;
    if (text.charCodeAt(i) === 0x3a) out.push([m.index, end]);
  }
  return out;
}

function replaceTokens(text: string, tokens: Array<[number, number]>, replace: (token: string) => string): string {
  const parts: string[] = [];
  let at = 0;
  for (const [start, end] of tokens) {
    parts.push(text.slice(at, start), replace(text.slice(start, end)));
    at = end;
  }
  parts.push(text.slice(at));
  return parts.join('');
}

function memberCount(value: unknown): number {
  if (Array.isArray(value)) return value.reduce((n: number, item) => n + memberCount(item), 0);
  if (!isObject(value)) return 0;
  let n = 0;
  for (const key of Object.keys(value)) n += 1 + memberCount(value[key]);
  return n;
}

/** The value with the ordinals taken off its names, a name written again moved to its latest place. */
function lastWins(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(lastWins);
  if (!isObject(value)) return value;
  const members = new Map<string, unknown>();
  const hidden: Array<[string, unknown]> = [];
  for (const [marked, member] of Object.entries(value)) {
    const name = marked.slice(0, marked.lastIndexOf(ORDINAL));
    if (members.has(name)) hidden.push([name, members.get(name)]);
    members.delete(name);
    members.set(name, lastWins(member));
  }
  // fromEntries defines each member as its own property, a `__proto__` one included.
  const object = Object.fromEntries(members);
  for (const [name, member] of hidden) noteHiddenMember(object, name, member);
  return object;
}
