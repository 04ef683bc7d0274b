// The facts README.md and docs/protocol.md state about the status metrics, derived here from the request
// schema the service validates with: a range changed in the schema fails this test until the docs say it.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { exitsText, SIMULATE } from '../../src/cli/commands.js';
import { MAX_SIMULATED_DEVICES, MAX_SIMULATED_SECONDS } from '../../src/cli/sim-defaults.js';
import { EXIT_CODES } from '../../src/cli/sim-interrupt.js';
import { REQUEST_SCHEMAS } from '../../src/http/schemas.js';
import { REPO_ROOT } from '../support/docs.js';

type Node = { minimum?: number; maximum?: number; pattern?: string; type?: unknown };

/** The sentence both documents use, built from DeviceStatusRequest. */
function statusSentence(): string {
  const props = (REQUEST_SCHEMAS.DeviceStatusRequest as { properties: Record<string, Node> }).properties;
  const length = /\{(\d+),(\d+)\}\$$/.exec(props.status!.pattern ?? '');
  assert.ok(length, 'status has a length-bounded pattern');
  assert.equal(props.status!.pattern, `^[A-Za-z0-9_.-]{${length[1]},${length[2]}}$`, 'the characters the sentence names');
  const range = (name: string): string => `${props[name]!.minimum} to ${props[name]!.maximum}`;
  for (const name of ['batteryLevel', 'memoryUsage', 'cpuUsage', 'temperature']) {
    assert.deepEqual(props[name]!.type, ['number', 'null'], `${name} may be null`);
  }
  assert.equal(range('memoryUsage'), range('batteryLevel'));
  assert.equal(range('cpuUsage'), range('batteryLevel'));
  return (
    `\`status\` is ${length[1]} to ${length[2]} letters, digits, \`_\`, \`.\` or \`-\`; \`batteryLevel\`, ` +
    `\`memoryUsage\` and \`cpuUsage\` ${range('batteryLevel')} (percent), \`temperature\` ${range('temperature')} (°C); ` +
    'a metric may be `null`, and one the PUT does not name becomes `null` (it is not kept).'
  );
}

/** The text with line breaks as spaces, as a reader sees a paragraph. */
const prose = (file: string): string => readFileSync(path.join(REPO_ROOT, file), 'utf8').replace(/\s*\n\s*/g, ' ');

describe('documented facts match the code', () => {
  for (const file of ['README.md', 'docs/protocol.md']) {
    it(`${file} states the status metrics' ranges from the schema`, () => {
      assert.ok(prose(file).includes(statusSentence()), `${file} lacks: ${statusSentence()}`);
    });
  }

  it("`simulate --help` and docs/operations.md state the exit codes of an interrupted run", () => {
    const help = exitsText(SIMULATE);
    assert.match(help, /^Exit codes: 0 nothing was lost or duplicated, no device failed and, with --admin-token, every device was deleted; 1 else \(the report says what was left registered and why\);/);
    const row = prose('docs/operations.md').split('| `voice-hub simulate` |')[1] ?? '';
    for (const [signal, code] of Object.entries(EXIT_CODES)) {
      assert.ok(help.includes(`${code} ${signal === 'SIGINT' ? 'Ctrl-C (SIGINT)' : 'SIGTERM'} ended the run early`), `--help: ${code} for ${signal}`);
      assert.match(row, new RegExp(`exits [^|]*\\b${code}\\b`), `operations.md: ${code} for ${signal}`);
    }
  });

  it("docs/operations.md and `simulate --help` give --devices and --seconds the ranges simulate takes", () => {
    const row = prose('docs/operations.md').split('| `voice-hub simulate` |')[1] ?? '';
    assert.ok(row.includes(`\`--devices\` (1 to ${MAX_SIMULATED_DEVICES})`), row);
    assert.ok(row.includes(`\`--seconds\` (at most ${MAX_SIMULATED_SECONDS})`), row);
    const options = SIMULATE.options as Record<string, { describe?: string }>;
    assert.match(options.devices!.describe!, new RegExp(`\\b1 to ${MAX_SIMULATED_DEVICES}\\b`));
    assert.match(options.seconds!.describe!, new RegExp(`at most ${MAX_SIMULATED_SECONDS}\\b`));
  });
});
