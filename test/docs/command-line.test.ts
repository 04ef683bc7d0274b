// docs/operations.md's two tables of the command line, held to the command specs that --help is printed
// from (src/cli/commands.ts): every flag a command takes is in its row of "flags besides --help", and
// its row of exit codes lists exactly the codes its --help ends with. A flag added to a command (the
// simulator's --drop-every, --drop-for, --stateful-reconnect and --late-after were missing) or an exit
// code changed fails this test until the page says it.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { COMMANDS, type CommandSpec } from '../../src/cli/commands.js';
import { ALL_SHORT_FLAGS } from '../../src/cli/config-flags.js';
import { REPO_ROOT } from '../support/docs.js';

const page = readFileSync(path.join(REPO_ROOT, 'docs/operations.md'), 'utf8');

/** The table that follows the line `heading` starts, as its rows' cells (header and rule skipped). */
function table(heading: string): string[][] {
  const lines = page.split('\n');
  const start = lines.findIndex((l) => l.startsWith(heading));
  assert.ok(start >= 0, `docs/operations.md has a table headed ${heading}`);
  const rows: string[][] = [];
  for (const line of lines.slice(start + 2)) {
    if (!line.startsWith('|')) break;
    rows.push(line.split(/(?<!\\)\|/).slice(1, -1).map((c) => c.trim()));
  }
  return rows;
}

/** The row whose first cell names the command (`voice-hub token admin`, `serve` (or none)). */
function rowOf(rows: string[][], spec: CommandSpec): string[] {
  const named = rows.find(([first]) => new RegExp(`\`(voice-hub )?${spec.name}\\b`).test(first!));
  assert.ok(named, `a row for ${spec.name}`);
  return named;
}

describe('docs/operations.md states the command line as --help does', () => {
  const flagRows = table('| command | does | flags besides `--help` |');
  const exitRows = table('| command | exit codes besides 64');

  for (const spec of COMMANDS) {
    it(`${spec.name}: every flag it takes is in its row`, () => {
      const flags = rowOf(flagRows, spec)[2]!;
      for (const name of Object.keys(spec.options)) assert.ok(flags.includes(`\`--${name}\``), `--${name} in: ${flags}`);
      if (spec.config === undefined) return;
      if (spec.config.short.length === ALL_SHORT_FLAGS.length) {
        assert.match(flags, /every configuration flag|the same as `serve`/, flags);
        return;
      }
      assert.ok(flags.includes('`--config`') && flags.includes('keys in dot form'), flags);
      for (const name of spec.config.short) assert.ok(flags.includes(`\`--${name}\``), `--${name} in: ${flags}`);
    });

    it(`${spec.name}: its exit codes are those --help lists`, () => {
      const cell = rowOf(exitRows, spec)[1]!;
      const stated = new Set([...cell.matchAll(/(?:^|[,;] )(\d+) /g)].map((m) => Number(m[1])));
      assert.deepEqual([...stated].sort((a, b) => a - b), spec.exits.map(([code]) => code).sort((a, b) => a - b), cell);
    });
  }
});
