// Writes docs/configuration.md, the configuration reference, from the configuration schema and the
// configuration categories, so the reference cannot say what the program does not do.
// `npm run config-docs` writes it; `--check` only says whether it is current (test/config keeps it so).
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { SHORT_FLAGS } from '../src/config/load.js';
import { CONFIG_SCHEMA, type SchemaNode } from '../src/config/schema.js';
import { envName } from '../src/config/schema-keys.js';
import { TIME_SPAN_FORMATS } from '../src/config/timespan.js';
import { categoryKeys, CATEGORY_NAMES } from '../src/settings/definitions.js';

export const CONFIG_DOCS_FILE = fileURLToPath(new URL('../docs/configuration.md', import.meta.url));
export const REGENERATE = 'npm run config-docs';

/** A key as the reference lists it: a map's entries are one row, `<Category>` standing for the name. */
interface Row {
  path: string[];
  node: SchemaNode;
}

function rows(node: SchemaNode, at: string[]): Row[] {
  if (node.type !== 'object') return [{ path: at, node }];
  const named = Object.entries(node.properties ?? {}).flatMap(([name, child]) => rows(child, [...at, name]));
  const map = typeof node.additionalProperties === 'object' ? rows(node.additionalProperties, [...at, '<Category>']) : [];
  return [...named, ...map];
}

const code = (text: string): string => `\`${text}\``;
/** Table cells: a `|` would end the cell, a newline the row. */
const cell = (text: string): string => text.replace(/\|/g, '\\|').replace(/\s*\n\s*/g, ' ');
const words = (expected: string | undefined): string | undefined => expected?.replace(/^must be /, '');

function typeOf(node: SchemaNode): string {
  if (node['x-timespan']) return 'time span';
  if (node.type === 'array') return `array of ${typeOf(node.items ?? {})}s${node.writeOnly ? ', secret' : ''}`;
  if (node.type === 'string' || node.type === 'integer' || node.type === 'boolean') return node.type + (node.writeOnly ? ', secret' : '');
  throw new Error(`no documentation for a key of type ${String(node.type)}`);
}

/** What values a key takes, in words, from the keywords that decide it. */
export function rangeOf(node: SchemaNode): string {
  const span = node['x-timespan'];
  if (span) return `${span.minimum} to ${span.maximum}`;
  if (node.enum) return node.enum.join(', ') + (node.type === 'string' && node['x-expected']?.includes('any case') ? ' (any case)' : '');
  if (node.type === 'integer') return `${node.minimum ?? 'any'} to ${node.maximum ?? 'any'}`;
  if (node.type === 'boolean') return 'true or false';
  if (node.type === 'array') {
    const count = node.maxItems === undefined ? '' : `at most ${node.maxItems} items, `;
    return `${count}each ${rangeOf(node.items ?? {})}${node.uniqueItems ? ', no item twice' : ''}`;
  }
  if (node.type !== 'string') throw new Error(`no range for a key of type ${String(node.type)}`);
  const { minLength: min, maxLength: max } = node;
  const length = max === undefined ? undefined : min ? `${min} to ${max} characters` : `at most ${max} characters`;
  if (node.pattern !== undefined || node.format !== undefined) {
    const shape = words(node['x-expected']) ?? `matching ${code(node.pattern ?? node.format!)}`;
    return length === undefined ? shape : `${shape}; ${length}`;
  }
  if (length !== undefined) return length;
  if (min !== undefined) return min === 1 ? 'non-empty' : `at least ${min} characters`;
  return 'any text';
}

function defaultOf(node: SchemaNode): string {
  if (node.default === undefined) return 'none';
  if (node.default === '') return '(empty)';
  return code(typeof node.default === 'string' ? node.default : JSON.stringify(node.default));
}

const SHORT_BY_KEY = new Map<string, string>(Object.entries(SHORT_FLAGS).map(([flag, key]) => [key, flag]));

function flagsOf(row: Row): string {
  const key = row.path.join('.');
  const short = SHORT_BY_KEY.get(key);
  const whole = row.node.type === 'array' ? `${code(`--${key}`)} or ${code(`--${key}.0`)}, ...` : code(`--${key}`);
  return short === undefined ? whole : `${whole}, ${code(`--${short}`)}`;
}

function envOf(row: Row): string {
  const name = envName(row.path);
  return row.node.type === 'array' ? `${code(`${name}__0`)}, ${code(`${name}__1`)}, ...` : code(name);
}

function configTable(section: string, node: SchemaNode): string[] {
  const lines = [`## ${section}`, ''];
  if (node.type === 'object' && node.description) lines.push(node.description, '');
  lines.push('| Key | Environment | Flag | Type | Default | Values | Description |', '|---|---|---|---|---|---|---|');
  for (const row of rows(node, [section])) {
    const cells = [code(row.path.join('.')), envOf(row), flagsOf(row), typeOf(row.node), defaultOf(row.node), rangeOf(row.node), row.node.description ?? ''];
    lines.push(`| ${cells.map(cell).join(' | ')} |`);
  }
  return [...lines, ''];
}

function categoryTables(): string[] {
  const lines = [
    '## Configuration categories over HTTP',
    '',
    '`GET /api/config/{category}` (device or admin token) answers the effective values of a category;',
    '`PUT /api/config/{category}` (admin token) sets the keys its body names and keeps the others, refusing',
    'unknown keys and values out of range with 400. A value stored this way outlives restarts and overrides',
    'the configuration file and the built-in defaults, but not an environment variable or a flag; a key set',
    'to `null` (`{"audioSampleRate": null}`) drops the stored value, and the key reads the file\'s value, or its',
    'default, again. A key backed by a configuration key takes that key\'s type and values; some accept less',
    'over the API.',
    '',
  ];
  for (const category of CATEGORY_NAMES) {
    lines.push(`### ${code(category)}`, '', '| Key | Configuration key | Type | Default | Values | Description |', '|---|---|---|---|---|---|');
    for (const [name, key] of categoryKeys(category)) {
      const node: SchemaNode = key.configKey === undefined ? key.node : { ...key.node, ...key.narrowing };
      const backing = key.configKey === undefined ? 'none: kept by the API only' : code(key.configKey);
      const def = key.configKey === undefined ? defaultOf(node) : `the configuration's value`;
      const cells = [code(name), backing, typeOf(node), def, rangeOf(node), node.description ?? ''];
      lines.push(`| ${cells.map(cell).join(' | ')} |`);
    }
    lines.push('');
  }
  return lines;
}

/** The whole of docs/configuration.md. */
export function renderConfigDocs(): string {
  const lines = [
    '# Configuration reference',
    '',
    '<!-- Generated from src/config/schema.ts and src/settings/definitions.ts by `' + REGENERATE + '`: edit those, not this file. -->',
    '',
    'Settings come from, lowest precedence first: the built-in defaults below < the configuration file',
    '(`config/appsettings.json` as shipped, `--config PATH` for another) < environment variables < command-line',
    'flags. Key names match case-insensitively. `voice-hub config check` prints every value the service uses and',
    'where it came from: a value stored through the API (`PUT /api/config/{category}`), which overrides the file',
    'and the defaults (not the environment or flags), in the place of the key it overrides, as',
    '`(api, over the file value ...)`; then the stored values, with those an environment variable or a flag',
    'hides named as not used. An invalid value stops start-up with one line per problem and exit code 78.',
    '',
    '- **Environment**: the key with `__` between its parts (or `:`, as .NET also reads it: `Server:Port`); an array by index (`ApiKeys__0`, `ApiKeys__1`). A variable that starts with one of the sections below but names no key (`Server__Prot`), or names a key with single underscores (`SERVER_PORT`), is ignored with a warning at start, and listed by `config check`, with the key it probably meant.',
    '- **Flags**: the key in dot form (`--Server.Port 5001`); an array whole or by index. Short flags are listed',
    '  beside their key.',
    `- **Time spans**: .NET text, ${TIME_SPAN_FORMATS}; \`24:00:00\` is 24 hours. Seconds are required. \`GET /api/config/{category}\` and \`config check\` show a time span as it was written (\`24:00:00\` stays \`24:00:00\`), without white space around it, from whichever layer it came (a PUT too).`,
    '- **Secrets** are accepted like any value and never shown: `config check` prints `***` for a secret that is set, and a message quoting a command line (the owner of a port in use) masks their flags\' values. As a flag, a secret that starts with `-` is given as `--Mqtt.Password=VALUE`: given as a separate word it is refused (exit code 64) without being repeated.',
    '- **The file** is read as .NET reads appsettings.json: comments and trailing commas are fine, and the encoding is UTF-8 unless a byte order mark names UTF-16 or UTF-32 (as Windows editors save it); a section given twice (in any case) is one section; a setting given twice with two values is refused with its line and column (with the same value it is accepted). A key may be written as a path with `:` (`"Server:Port": 5000` is `Server.Port`), as .NET reads it; a dot is part of a name there, not a separator. A value is its text, as .NET keeps it: an integer setting written `5000.0` or `5e3` is refused as `"5000.0"` from the environment would be, and a password or API key written without quotes is the digits written. A key of no setting (a section below, or one of its keys, misspelt) is refused too, in the file as in a flag (`Server.Prot: unknown key from file ... (did you mean Server.Port?)`), where .NET ignores it: the setting would keep its default without a word. So is any other top-level section (`Kestrel`, `ConnectionStrings`): only the sections below are read.',
    '',
  ];
  for (const [section, node] of Object.entries<SchemaNode>(CONFIG_SCHEMA.properties)) lines.push(...configTable(section, node));
  lines.push(...categoryTables());
  return lines.join('\n').replace(/\n+$/, '\n');
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const text = renderConfigDocs();
  if (process.argv.includes('--check')) {
    let current = '';
    try {
      current = readFileSync(CONFIG_DOCS_FILE, 'utf8');
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e; // a missing file is merely not current
    }
    if (current !== text) {
      process.stderr.write(`${path.relative(process.cwd(), CONFIG_DOCS_FILE)} is out of date: run ${REGENERATE}\n`);
      process.exitCode = 1;
    }
  } else {
    writeFileSync(CONFIG_DOCS_FILE, text);
    process.stdout.write(`wrote ${path.relative(process.cwd(), CONFIG_DOCS_FILE)}\n`);
  }
}
