// The docs name a configuration key in its dot form (`Cors.AllowedOrigins`), the form of its flag, of
// `config check` and of docs/configuration.md: README, protocol.md and decisions.md wrote
// `Cors:AllowedOrigins`, which as a flag (`--Cors:AllowedOrigins`) is refused. ASP.NET Core's colon
// form is named only where the text says how it is read (`Server:Port` in the environment, `--Server:Port`).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { it } from 'node:test';
import { leafKeys } from '../../src/config/schema-keys.js';
import { REPO_ROOT } from '../support/docs.js';

const FILES = ['README.md', ...['configuration', 'decisions', 'https', 'operations', 'packaging', 'protocol', 'security'].map((n) => `docs/${n}.md`)];
/** Where the colon form is the point: how the environment and the command line take it. */
const EXPLAINED = new Set(['docs/configuration.md: `Server:Port`', 'docs/operations.md: `--Server:Port`']);

it('the docs write configuration keys with dots, not colons', () => {
  const found: string[] = [];
  for (const file of FILES) {
    const text = readFileSync(path.join(REPO_ROOT, file), 'utf8');
    for (const { key } of leafKeys().filter(({ key }) => key.includes('.'))) {
      const colon = key.replaceAll('.', ':');
      for (const written of [`\`${colon}\``, `\`--${colon}\``]) {
        if (text.includes(written) && !EXPLAINED.has(`${file}: ${written}`)) found.push(`${file}: ${written}`);
      }
    }
  }
  assert.deepEqual(found, []);
});
