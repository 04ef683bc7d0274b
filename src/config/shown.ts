// How a configuration value is shown wherever one is echoed: `config check`, a problem line, a quoted
// command line. The schema marks what may not be shown as it is, once per key: a secret (`writeOnly`)
// never is; a value that may carry credentials in part (`x-public-form`: a URL's user info and query)
// only in its public form. That form is defined beside what uses the value (publicServerUrl in
// src/upstream/public-url.ts), a layer above this one, so callers pass it in; where one cannot (the
// problem lines of loadConfig, when its caller gives none) such a value is not shown at all.
import { BIDI_CONTROLS, UNICODE_LINE_BREAKS, unicodeEscape } from '../hidden-characters.js';
import type { SchemaNode } from './schema.js';

export const MASK = '***';

/** The public form of a value that may carry credentials, e.g. publicServerUrl. */
export type PublicForm = (text: string) => string;

/** Problem lines quote a value up to this many characters: a file may hold megabytes in one value. */
const MAX_QUOTED = 80;

const mayCarryCredentials = (node: SchemaNode): boolean => node['x-public-form'] !== undefined;

const NOT_A_HOST = '(not shown: not a host name or address, it may hold credentials)';

/** A host's public form: itself once it is one (its pattern says so), else nothing of it. */
const hostForm = (node: SchemaNode): PublicForm => (text) => (node.pattern !== undefined && new RegExp(node.pattern, 'u').test(text) ? text : NOT_A_HOST);

/** The public form that applies to `node`: a host's is defined here, a URL's by the caller. */
const formOf = (node: SchemaNode, publicForm: PublicForm): PublicForm => (node['x-public-form'] === 'host' ? hostForm(node) : publicForm);

/** A value as `config check` shows it: a set secret as MASK (an empty one stays "", so "not set" shows). */
export function shownValue(node: SchemaNode, value: unknown, publicForm: PublicForm): unknown {
  if (node.writeOnly) return masked(value);
  if (mayCarryCredentials(node) && typeof value === 'string') return formOf(node, publicForm)(value);
  return value;
}

function masked(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(masked);
  return value === '' ? '' : MASK;
}

/** What a quoted command line shows for the value `text` of a flag setting `node`; undefined: the text itself. */
export function shownArgument(node: SchemaNode, text: string, publicForm: PublicForm): string | undefined {
  if (node.writeOnly) return MASK;
  if (mayCarryCredentials(node)) return formOf(node, publicForm)(text);
  return undefined;
}

/** The offending value in a problem line: a secret only described, a credential-bearing one in its public form. */
export function problemValue(node: SchemaNode, value: unknown, publicForm: PublicForm | undefined): string {
  if (node.writeOnly) return value === '' ? '""' : typeof value === 'string' ? `(secret, ${[...value].length} characters)` : '(secret)';
  if (mayCarryCredentials(node)) {
    // Not a string (`["ws://user:key@host"]`, refused for that), its public form is not defined either.
    if (node['x-public-form'] === 'host') return typeof value === 'string' && hostForm(node)(value) === value ? quoted(value) : NOT_A_HOST;
    if (!publicForm || typeof value !== 'string') return '(not shown: it may hold credentials)';
    const shown = publicForm(value);
    // Said, or `ws://host/v` would seem to be refused for a fragment it does not show.
    return shown === value ? quoted(value) : `${quoted(shown)} (shown in its public form)`;
  }
  return quoted(value);
}

/** A name as a message quotes it: a variable's or a flag's may be as long as the environment or command line allows. */
export function shownName(name: string): string {
  return name.length > 64 ? `${name.slice(0, 61)}...` : name;
}

/**
 * What JSON.stringify leaves as it is and a terminal or a log line would not show as it is: C1 controls,
 * the line and paragraph separators (a log line turns them into spaces), and the marks that reorder or
 * hide text (bidirectional overrides and isolates, U+200E/F and U+061C).
 */
const UNSHOWN = new RegExp(`[\\x7f-\\x9f${UNICODE_LINE_BREAKS}${BIDI_CONTROLS}]`, 'g');

/** A value as JSON text that shows every character it holds: those JSON leaves alone escaped as \uXXXX. */
export function jsonText(value: unknown): string {
  const text = JSON.stringify(value) ?? String(value);
  return text.replace(UNSHOWN, unicodeEscape);
}

/** JSON text of a value, cut short; the length given is the value's own (a string's characters, not its quotes and escapes). */
export function quoted(value: unknown): string {
  const text = typeof value === 'number' ? String(value) : jsonText(value);
  if (text.length <= MAX_QUOTED) return text;
  const length = typeof value === 'string' ? [...value].length : text.length;
  return `${text.slice(0, MAX_QUOTED - 3)}... (${length} characters)`;
}
