// Shared by the configuration tests: configuration files in a temporary folder, and loading that
// returns the problem lines instead of throwing.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { ConfigError, loadConfig, type LoadOptions } from '../../src/config/load.js';
import { tmpDir } from '../support/tmp.js';

let counter = 0;

/** Writes a configuration file (an object as JSON, text as UTF-8, bytes as they are); returns its path. */
export function configFile(content: unknown, dir = tmpDir('voice-hub-config-')): string {
  const file = path.join(dir, `appsettings-${++counter}.json`);
  writeFileSync(file, typeof content === 'string' || Buffer.isBuffer(content) ? content : JSON.stringify(content, null, 2));
  return file;
}

/** The problem lines of a load that must fail. */
export function problemsOf(opts: LoadOptions): readonly string[] {
  try {
    loadConfig(opts);
  } catch (e) {
    assert.ok(e instanceof ConfigError, `expected a ConfigError, got ${String(e)}`);
    assert.ok(e.problems.length > 0);
    return e.problems;
  }
  assert.fail('expected the configuration to be refused');
}
