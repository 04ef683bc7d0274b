// The manual page the package installs (`man voice-hub`) states the exit statuses and the signals that
// stop the service cleanly; they are taken here from the code that decides them, so a new exit code or
// stop signal fails this test until the page says it. It once left out 65 (a database the service will
// not open, which the unit does not retry) and SIGHUP.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { CONFIG } from '../../src/cli/commands.js';
import { EXIT_CONFIG, EXIT_DATA, EXIT_IN_USE, EXIT_IO_ERROR, EXIT_SOFTWARE, EXIT_USAGE } from '../../src/cli/load.js';
import { SHUTDOWN_SIGNALS } from '../../src/process/signals.js';
import { REPO_ROOT } from '../support/docs.js';

/** The text of one section of the roff page, roff escapes of '-' undone, lines joined. */
function section(name: string): string {
  const page = readFileSync(path.join(REPO_ROOT, 'packaging/deb/voice-hub.1'), 'utf8');
  const start = page.indexOf(`.SH ${name}\n`);
  assert.ok(start >= 0, `the page has a ${name} section`);
  const end = page.indexOf('\n.SH ', start + 1);
  return page.slice(start, end < 0 ? undefined : end).replace(/\\-/g, '-').replace(/\n/g, ' ');
}

describe('the manual page', () => {
  it('EXIT STATUS names every exit code of the service and every signal that stops it cleanly', () => {
    const text = section('EXIT STATUS');
    for (const code of [0, 1, EXIT_USAGE, EXIT_DATA, EXIT_SOFTWARE, EXIT_IO_ERROR, EXIT_IN_USE, EXIT_CONFIG]) {
      assert.match(text, new RegExp(`(^|[^0-9])${code}([^0-9]|$)`), `exit status ${code}`);
    }
    for (const signal of SHUTDOWN_SIGNALS) assert.ok(text.includes(signal), `${signal} in: ${text}`);
  });

  it('EXIT STATUS names every data file 65 is for, as `config check --help` does', () => {
    // The help: "a database, signing key or instance id file serve would not use". The page once named
    // only the first two, though a damaged instance-id stops the service with 65 as well.
    const meaning = CONFIG.exits.find(([code]) => code === EXIT_DATA)![1];
    const files = /^a (.+) file serve would not use$/.exec(meaning);
    assert.ok(files, meaning);
    const text = section('EXIT STATUS');
    for (const file of files[1]!.split(/, | or /)) assert.ok(text.includes(file), `${file} in: ${text}`);
    assert.ok(section('FILES').includes('instance-id'), 'FILES names the instance id file');
  });
});
