// docs/configuration.md is generated from the schema and the categories: it must be what the generator
// writes now, and list every key with its environment name, flag, type, default and values.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { CONFIG_DOCS_FILE, rangeOf, REGENERATE, renderConfigDocs } from '../../scripts/config-docs.js';
import { envName, leafKeys } from '../../src/config/schema-keys.js';
import { OPUS_SAMPLE_RATES } from '../../src/opus-format.js';
import { ROOT } from '../support/service.js';

describe('the configuration reference (docs/configuration.md)', () => {
  it('is what the generator writes from the schema now', () => {
    const current = readFileSync(CONFIG_DOCS_FILE, 'utf8');
    assert.ok(current === renderConfigDocs(), `docs/configuration.md is out of date with the schema: run \`${REGENERATE}\` and commit the result`);
  });

  it('has a row for every key: name, environment variable, flag, type, default, values, description', () => {
    const text = renderConfigDocs();
    for (const { key, path, node } of leafKeys()) {
      const row = text.split('\n').find((line) => line.startsWith(`| \`${key}\` |`));
      assert.ok(row, `no row for ${key}`);
      const cells = row.slice(2, -2).split(' | ');
      assert.equal(cells.length, 7, row);
      const env = node.type === 'array' ? `\`${envName(path)}__0\`` : `\`${envName(path)}\``;
      assert.ok(cells[1]!.startsWith(env), `${key}: ${cells[1]}`);
      assert.ok(cells[2]!.startsWith(`\`--${key}\``), `${key}: ${cells[2]}`);
      assert.ok(cells[6]!.includes(node.description!.split('|')[0]!.slice(0, 20)), `${key}: description`);
    }
    assert.match(text, /\| `Server\.Port` \| `Server__Port` \| `--Server\.Port`, `--port` \| integer \| `5000` \| 0 to 65535 \| /);
    assert.match(text, /\| `DeviceManagement\.TokenExpiration` \| [^|]+ \| [^|]+ \| time span \| `24:00:00` \| 00:00:01 to 3650\.00:00:00 \| /);
    assert.match(text, /\| `Mqtt\.Password` \| [^|]+ \| [^|]+ \| string, secret \| \(empty\) \| /);
    assert.match(text, /\| `Logging\.LogLevel\.Microsoft\.AspNetCore` \| `Logging__LogLevel__Microsoft__AspNetCore` \| /);
    assert.ok(text.includes(`| \`audioSampleRate\` | \`VoiceService.AudioSampleRate\` | integer | the configuration's value | ${OPUS_SAMPLE_RATES.join(', ')} | `));
    assert.match(text, /\| `brokerAddress` \| `Mqtt\.BrokerAddress` \| string \| the configuration's value \| a host name, [^|]+; 1 to 253 characters \| /);
  });

  it('words each kind of range', () => {
    const cases: Array<[Parameters<typeof rangeOf>[0], string]> = [
      [{ type: 'integer', minimum: 1, maximum: 9 }, '1 to 9'],
      [{ type: 'integer', enum: [1, 2] }, '1, 2'],
      [{ type: 'string', 'x-timespan': { minimum: '00:00:01', maximum: '01:00:00' } }, '00:00:01 to 01:00:00'],
      [{ type: 'string', pattern: 'x', 'x-expected': 'must be a thing' }, 'a thing'],
      [{ type: 'string', pattern: 'x', 'x-expected': 'must be a thing', minLength: 1, maxLength: 9 }, 'a thing; 1 to 9 characters'],
      [{ type: 'string', minLength: 1 }, 'non-empty'],
      [{ type: 'string', maxLength: 8 }, 'at most 8 characters'],
      [{ type: 'string' }, 'any text'],
      [{ type: 'boolean' }, 'true or false'],
      [{ type: 'array', maxItems: 3, items: { type: 'string', minLength: 1, maxLength: 4 } }, 'at most 3 items, each 1 to 4 characters'],
    ];
    for (const [node, words] of cases) assert.equal(rangeOf(node), words, JSON.stringify(node));
    assert.throws(() => rangeOf({ type: 'object' }), /no range for a key of type object/);
  });

  it('`config-docs --check` exits 0 when the file is current', () => {
    const run = spawnSync(process.execPath, ['--import', 'tsx', 'scripts/config-docs.ts', '--check'], { cwd: ROOT, encoding: 'utf8', timeout: 60_000 });
    assert.equal(run.status, 0, run.stderr);
    assert.equal(run.stdout, '');
  });
});
