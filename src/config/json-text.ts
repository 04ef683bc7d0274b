// Reads a configuration file's JSON with the leniency of .NET's JSON configuration provider
// (// and /* */ comments, trailing commas), so appsettings.json files written for .NET load as
// they are. Errors carry line and column and never echo the file's text: it may hold secrets,
// and V8's own JSON.parse messages quote it. Nesting is limited as .NET's reader limits it (its
// JsonDocument's default MaxDepth, 64): the reader recurses per level, and so does everything that
// walks the values afterwards (merging, validation, problem lines), so a deeper file would overflow
// the stack rather than be refused. The configuration's own keys nest three deep.

import { isDeepStrictEqual } from 'node:util';
import { MAX_JSON_DEPTH } from '../json-depth.js';
import { caseKey } from '../ignore-case.js';

export class JsonTextError extends Error {
  constructor(
    readonly line: number,
    readonly column: number,
    readonly reason: string,
  ) {
    super(`line ${line}, column ${column}: ${reason}`);
    this.name = 'JsonTextError';
  }
}

const NUMBER = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;
const LITERALS: ReadonlyArray<readonly [string, unknown]> = [['true', true], ['false', false], ['null', null]];

const isSection = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * Folds `value`, given again under a key that `holder[key]` already has (ignoring case), into it: sections
 * merge key by key, a setting must repeat its value. Returns the path below `key` of the first setting
 * given two values, or undefined when they agree.
 */
function mergeDuplicate(holder: Record<string, unknown>, key: string, value: unknown): string[] | undefined {
  const existing = holder[key];
  if (!isSection(existing) || !isSection(value)) return isDeepStrictEqual(existing, value) ? undefined : [];
  // By folded key, looked up once per key: a search per key made two halves of a large section cost their product.
  const spelled = new Map(Object.keys(existing).map((k) => [caseKey(k), k] as const));
  for (const [childKey, childValue] of Object.entries(value)) {
    const folded = caseKey(childKey);
    const match = spelled.get(folded);
    if (match === undefined) {
      existing[childKey] = childValue;
      spelled.set(folded, childKey);
      continue;
    }
    const conflict = mergeDuplicate(existing, match, childValue);
    if (conflict !== undefined) return [childKey, ...conflict];
  }
  return undefined;
}

export function parseJsonText(text: string): unknown {
  return new Reader(text.startsWith('\uFEFF') ? text.slice(1) : text).document();
}

class Reader {
  private pos = 0;
  /** Objects and arrays open at `pos`, the one being read included. */
  private depth = 0;

  constructor(private readonly text: string) {}

  document(): unknown {
    this.skip();
    if (this.pos >= this.text.length) this.fail('the file is empty; expected a JSON object');
    const value = this.value();
    this.skip();
    if (this.pos < this.text.length) this.fail(`unexpected ${this.describe()} after the end of the document`);
    return value;
  }

  private value(): unknown {
    const c = this.text[this.pos];
    if (c === '{' || c === '[') {
      if (this.depth === MAX_JSON_DEPTH) this.fail(`objects and arrays nested more than ${MAX_JSON_DEPTH} deep (.NET refuses them too)`);
      this.depth++;
      const container = c === '{' ? this.object() : this.array();
      this.depth--;
      return container;
    }
    if (c === '"') return this.string();
    NUMBER.lastIndex = this.pos;
    const num = NUMBER.exec(this.text);
    if (num) {
      this.pos += num[0].length;
      // .NET keeps every configuration value as its text. A number is a number here only where that
      // loses nothing (its text is how JavaScript writes it); any other is kept as written and judged as
      // the same text from the environment or a flag would be: `5000.0` and `5e3` are refused as an int
      // where JSON.parse's 5000 would pass, and a password or an API key written without quotes stays the
      // digits written (12345678901234567890 was sent as 12345678901234567000, `1.10` compared as `1.1`).
      const value = Number(num[0]);
      return String(value) === num[0] ? value : num[0];
    }
    for (const [word, value] of LITERALS) {
      if (this.text.startsWith(word, this.pos)) {
        this.pos += word.length;
        return value;
      }
    }
    return this.fail(`expected a value but found ${this.describe()}`);
  }

  private object(): Record<string, unknown> {
    // A null prototype: a key named "__proto__" is then just a key.
    const out = Object.create(null) as Record<string, unknown>;
    // Configuration keys ignore case, so "Port" and "port" are the same key. A section given twice is
    // one section, as .NET reads it (its keys are paths: "Mqtt:Port"); a setting given twice with two
    // values is refused rather than letting the later silently win, as .NET's JSON configuration
    // provider refuses it ("A duplicate key ... was found"). Given twice with the same value it is
    // accepted, since nothing is lost, and the package's own file once held such a key (an edited copy
    // of it is kept by upgrades, and must still start). Kept by folded key: the first spelling's value.
    const seen = new Map<string, string>();
    this.pos++;
    for (;;) {
      this.skip();
      if (this.text[this.pos] === '}') {
        this.pos++;
        return out;
      }
      if (this.text[this.pos] !== '"') this.fail(`expected a property name in double quotes or '}' but found ${this.describe()}`);
      const keyAt = this.pos;
      const key = this.string();
      const folded = caseKey(key);
      this.skip();
      if (this.text[this.pos] !== ':') this.fail(`expected ':' after a property name but found ${this.describe()}`);
      this.pos++;
      this.skip();
      const value = this.value();
      const first = seen.get(folded);
      if (first === undefined) {
        seen.set(folded, key);
        out[key] = value;
      } else {
        const conflict = mergeDuplicate(out, first, value);
        if (conflict !== undefined) {
          this.pos = keyAt;
          const path = [key, ...conflict].join('.');
          this.fail(`duplicate key '${path.length > 64 ? `${path.slice(0, 64)}...` : path}' with another value (keys ignore case): give each key once`);
        }
      }
      this.skip();
      if (this.text[this.pos] === ',') this.pos++;
      else if (this.text[this.pos] !== '}') this.fail(`expected ',' or '}' but found ${this.describe()}`);
    }
  }

  private array(): unknown[] {
    const out: unknown[] = [];
    this.pos++;
    for (;;) {
      this.skip();
      if (this.text[this.pos] === ']') {
        this.pos++;
        return out;
      }
      out.push(this.value());
      this.skip();
      if (this.text[this.pos] === ',') this.pos++;
      else if (this.text[this.pos] !== ']') this.fail(`expected ',' or ']' but found ${this.describe()}`);
    }
  }

  private string(): string {
    const start = this.pos;
    this.pos++;
    while (this.pos < this.text.length && this.text[this.pos] !== '"') {
      const c = this.text.charCodeAt(this.pos);
      if (c < 0x20) this.fail('control character inside a string (unterminated string?)');
      this.pos += this.text[this.pos] === '\\' ? 2 : 1;
    }
    if (this.pos >= this.text.length) {
      this.pos = start;
      this.fail('unterminated string');
    }
    this.pos++;
    try {
      return JSON.parse(this.text.slice(start, this.pos)) as string;
    } catch {
      this.pos = start;
      return this.fail('invalid escape sequence in string');
    }
  }

  /** Skips white space and comments. */
  private skip(): void {
    for (;;) {
      const c = this.text[this.pos];
      if (c === ' ' || c === '\t' || c === '\n' || c === '\r') this.pos++;
      else if (this.text.startsWith('//', this.pos)) {
        const end = this.text.indexOf('\n', this.pos);
        this.pos = end < 0 ? this.text.length : end + 1;
      } else if (this.text.startsWith('/*', this.pos)) {
        const end = this.text.indexOf('*/', this.pos + 2);
        if (end < 0) this.fail('unterminated /* comment');
        this.pos = end + 2;
      } else return;
    }
  }

  /** The character at the current position, named without quoting the surrounding text. */
  private describe(): string {
    if (this.pos >= this.text.length) return 'the end of the file';
    const c = this.text.codePointAt(this.pos)!;
    // Where JSON has ASCII, a NUL is half or a quarter of a UTF-16 or UTF-32 unit read as UTF-8.
    if (c === 0) return 'character U+0000 (UTF-16 or UTF-32 without a byte order mark? Save the file as UTF-8)';
    return c > 0x20 && c < 0x7f ? `'${String.fromCodePoint(c)}'` : `character U+${c.toString(16).toUpperCase().padStart(4, '0')}`;
  }

  private fail(reason: string): never {
    const before = this.text.slice(0, this.pos);
    const line = before.split('\n').length;
    const column = this.pos - (before.lastIndexOf('\n') + 1) + 1;
    throw new JsonTextError(line, column, reason);
  }
}
