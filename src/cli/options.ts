// A command's own flags, declared once: their kind, description and default. yargs is given them
// without a type (so it keeps every value as the text typed, and a flag with nothing after it as
// `true`), and readOption turns the text into the declared type; yargs' own conversion would make
// `--port abc` null, `--port=` 0 and fill a default in for a `--port` with no value.
import { closest } from '../config/spelling.js';
import { publicServerUrl } from '../upstream/public-url.js';
import { splitZone } from '../zoned-url.js';

interface Common {
  describe: string;
  /** A credential: never quoted in a message (see preParseProblems). */
  secret?: true;
}
export type OptionSpec =
  | (Common & { kind: 'string'; default?: string })
  /** An http:// or https:// address. */
  | (Common & { kind: 'url'; default?: string; /** Takes an IPv6 zone (`[fe80::1%25eth0]`), which the command dials itself. */ zone?: boolean })
  | (Common & { kind: 'integer'; default?: number; min?: number; max?: number })
  /** A decimal number (`1.5`, `1e3`); `above` is an exclusive lower bound. */
  | (Common & { kind: 'number'; default?: number; above?: number; min?: number; max?: number })
  | (Common & { kind: 'choice'; choices: readonly string[]; default?: string })
  /** Off unless given; `--flag`, `--flag true` or `--flag false`. */
  | (Common & { kind: 'boolean' });

export type OptionSpecs = Readonly<Record<string, OptionSpec>>;

type ValueOf<S extends OptionSpec> = S extends { kind: 'integer' | 'number' }
  ? number
  : S extends { kind: 'boolean' }
    ? boolean
    : S extends { kind: 'choice'; choices: readonly (infer C)[] }
      ? C
      : string;

/** The values of a command's flags: with a default or boolean always set, otherwise when given. */
export type OptionValues<S extends OptionSpecs> = {
  [K in keyof S]: S[K] extends { default: unknown } | { kind: 'boolean' } ? ValueOf<S[K]> : ValueOf<S[K]> | undefined;
};

/** What a yargs option needs for --help; it parses nothing itself (see the top of this file). */
export function yargsOption(spec: OptionSpec): { describe: string; type?: 'boolean' } {
  if (spec.kind === 'boolean') return { describe: spec.describe, type: 'boolean' };
  const notes = [`[${spec.kind === 'integer' || spec.kind === 'number' ? 'number' : 'string'}]`];
  if (spec.kind === 'choice') notes.push(`[choices: ${spec.choices.map((c) => JSON.stringify(c)).join(', ')}]`);
  if (spec.default !== undefined) notes.push(`[default: ${JSON.stringify(spec.default)}]`);
  return { describe: `${spec.describe}  ${notes.join(' ')}` };
}

/** A flag's value as typed (yargs: text, `true` for a bare flag, an array when repeated) or a problem. */
export type Read<T> = { ok: true; value: T } | { ok: false; problem: string };

const bad = (problem: string): Read<never> => ({ ok: false, problem });

/** One given value of the flag `--name`: not repeated, not missing. */
export function singleText(name: string, raw: unknown): Read<string> {
  if (Array.isArray(raw)) return bad(`--${name} is given more than once`);
  if (raw === true || raw === '') return bad(`--${name} needs a value`);
  if (typeof raw !== 'string') return bad(`--${name} needs a value`);
  return { ok: true, value: raw };
}

export function readOption(name: string, spec: OptionSpec, raw: unknown): Read<unknown> {
  if (spec.kind === 'boolean') {
    if (Array.isArray(raw)) return bad(`--${name} is given more than once`);
    return typeof raw === 'boolean' ? { ok: true, value: raw } : bad(`--${name} is on or off: give it alone, or true or false`);
  }
  const text = singleText(name, raw);
  if (!text.ok) return text;
  const v = text.value;
  switch (spec.kind) {
    case 'string':
      return text;
    case 'url':
      return readUrl(name, v, spec.zone ?? false);
    case 'integer': {
      if (!/^[+-]?\d+$/.test(v.trim())) return bad(`--${name} needs a whole number, not '${v}'`);
      const n = Number(v);
      if (spec.min !== undefined && n < spec.min) return bad(`--${name} must be ${rangeText(spec.min, spec.max)}, not ${n}`);
      if (spec.max !== undefined && n > spec.max) return bad(`--${name} must be ${rangeText(spec.min, spec.max)}, not ${n}`);
      return { ok: true, value: n };
    }
    case 'number': {
      if (!/^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$/.test(v.trim())) return bad(`--${name} needs a number, not '${v}'`);
      const n = Number(v);
      const range = numberRange(spec);
      if ((spec.above !== undefined && !(n > spec.above)) || (spec.min !== undefined && n < spec.min) || (spec.max !== undefined && !(n <= spec.max))) {
        return bad(`--${name} must be ${range}, not ${n}`);
      }
      return { ok: true, value: n };
    }
    case 'choice': {
      if (spec.choices.includes(v)) return text;
      const hint = closest(v, spec.choices);
      return bad(`--${name} must be ${orList(spec.choices)}, not '${v}'${hint ? ` (did you mean ${hint}?)` : ''}`);
    }
  }
}

function readUrl(name: string, v: string, zone: boolean): Read<string> {
  // An http address all the same, which this command cannot dial (its clients take no zone): said so,
  // rather than that it is no http address.
  if (!zone && splitZone(v).zone !== undefined) {
    return bad(`--${name} cannot name a link-local address with its interface (${publicServerUrl(v)}): give the service's IPv4, ULA or global IPv6 address, or its name`);
  }
  let url: URL;
  try {
    url = new URL(zone ? splitZone(v).text : v);
  } catch {
    // Unparsed, its user info and query cannot be told from the rest: `http//user:password@host`, `http:/x?access_token=`.
    const shown = v.includes('@') ? 'an address with an @ (not quoted: it may hold a password)' : v.includes('?') ? 'an address with a ? (not quoted: its query may hold a token)' : `'${v}'`;
    return bad(`--${name} needs an http:// or https:// address such as http://127.0.0.1:5000, not ${shown}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    // A user name, password or query is shown as the upstream URL is: not at all.
    const shown = url.username || url.password || url.search ? publicServerUrl(v) : v;
    return bad(`--${name} needs an http:// or https:// address such as http://127.0.0.1:5000, not '${shown}'`);
  }
  return { ok: true, value: v };
}

/** `more than 0 and at most 86400`, `at least 1`: the whole range, whichever bound was crossed. */
function numberRange(spec: { above?: number; min?: number; max?: number }): string {
  const low = spec.above !== undefined ? `more than ${spec.above}` : spec.min !== undefined ? `at least ${spec.min}` : undefined;
  const high = spec.max !== undefined ? `at most ${spec.max}` : undefined;
  return [low, high].filter(Boolean).join(' and ');
}

function rangeText(min: number | undefined, max: number | undefined): string {
  if (min !== undefined && max !== undefined) return `${min} to ${max}`;
  return min !== undefined ? `at least ${min}` : `at most ${max}`;
}

export function orList(items: readonly string[]): string {
  return items.length <= 1 ? (items[0] ?? '') : `${items.slice(0, -1).join(', ')} or ${items[items.length - 1]}`;
}
