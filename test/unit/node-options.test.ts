// Node's options for the service are written once (src/runtime/node-options.mjs); each way users start it
// from a checkout takes them from there or names them exactly (the unit and the executables: test/packaging).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { NODE_FLAGS, NODE_OPTIONS_TEXT } from '../../src/runtime/node-options.mjs';

const ROOT = path.resolve(import.meta.dirname, '../..');

test('the options are the core-sized V8 helper pool, as NODE_OPTIONS would hold them', () => {
  assert.deepEqual(NODE_FLAGS, ['--v8-pool-size=0']);
  assert.equal(NODE_OPTIONS_TEXT, '--v8-pool-size=0');
});

test('make run reads them from the module and passes them to node; npm start names them', () => {
  const runLocal = readFileSync(path.join(ROOT, 'scripts/run-local.sh'), 'utf8');
  assert.match(runLocal, /import \{ NODE_OPTIONS_TEXT \} from '\.\/src\/runtime\/node-options\.mjs'/);
  assert.match(runLocal, /^node \$node_flags \S+voice-hub\.cjs --port "\$PORT"/m);
  const pkg = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
  assert.ok(pkg.scripts.start!.startsWith(`node ${NODE_OPTIONS_TEXT} `), pkg.scripts.start);
});
