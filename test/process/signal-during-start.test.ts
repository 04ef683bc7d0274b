// A shutdown signal while the service starts (after it took the data directory, while it writes the
// database, the signing key and the instance id) waits for the start to end, then stops it as usual.
// The stop used to run alongside the start's own writes: the process exited 0, logging `stopped`, in the
// middle of them, leaving `voice-hub.db.tmp-<pid>` and no database behind. A preload sends the signal at
// the moment the database's temporary file is opened, so the test does not depend on timing.
// A third signal meanwhile still exits at once.
import assert from 'node:assert/strict';
import { readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { runBundle } from '../support/service.js';
import { tmpDir } from '../support/tmp.js';

/** NODE_OPTIONS that send `signal` to the process itself when it first opens the database's temporary file. */
function signalAtDatabaseWrite(signal: string, times = 1): Record<string, string> {
  const file = path.join(tmpDir(), 'signal-at-write.cjs');
  writeFileSync(file, `const fs = require('node:fs');
const open = fs.open;
let sent = false;
fs.open = function (file, ...rest) {
  if (!sent && /voice-hub\\.db\\.tmp-\\d+$/.test(String(file))) {
    sent = true;
    for (let i = 0; i < ${times}; i++) process.kill(process.pid, ${JSON.stringify(signal)});
  }
  return open.call(this, file, ...rest);
};
`);
  return { NODE_OPTIONS: `--require ${file}` };
}

describe('a shutdown signal during start-up', () => {
  for (const signal of ['SIGTERM', 'SIGINT']) {
    it(`${signal} while the database is first written: the start completes, then it stops, exit 0, every file whole and no temporary one`, async () => {
      const dataDir = tmpDir();
      const res = await runBundle(['serve', '--host', '127.0.0.1', '--port', '0', '--data-dir', dataDir, '--Mqtt.BrokerAddress', ''], signalAtDatabaseWrite(signal), 30_000);
      assert.equal(res.code, 0, res.stdout + res.stderr);
      assert.deepEqual(readdirSync(dataDir).sort(), ['instance-id', 'signing.key', 'voice-hub.db']);
      const lines = res.stderr.split('\n').map((l) => l.replace(/^\S+ /, ''));
      const at = (text: string): number => lines.findIndex((l) => l.startsWith(text));
      assert.ok(at(`info: App: ${signal} received while starting: stopping once the start has ended`) >= 0, res.stderr);
      assert.ok(at('info: App: listening on http://127.0.0.1:') >= 0, res.stderr);
      assert.ok(at(`info: App: ${signal} received: draining and flushing`) > at('info: App: listening on http://127.0.0.1:'), res.stderr);
      assert.deepEqual(lines.filter((l) => l.includes('stopped')), ['info: App: stopped']);
      assert.doesNotMatch(res.stderr, /warn|error|crit/);
    });
  }

  it('a third signal while it starts exits at once (1), the way out of a start that hangs', async () => {
    const dataDir = tmpDir();
    const res = await runBundle(['serve', '--host', '127.0.0.1', '--port', '0', '--data-dir', dataDir, '--Mqtt.BrokerAddress', ''], signalAtDatabaseWrite('SIGINT', 3), 30_000);
    assert.equal(res.code, 1, res.stdout + res.stderr);
    const lines = res.stderr.split('\n').map((l) => l.replace(/^\S+ /, '')).filter(Boolean);
    assert.deepEqual(lines.slice(-2), ['info: App: SIGINT received while starting: stopping once the start has ended', 'warn: App: SIGINT a third time: exiting at once']);
    assert.ok(!lines.some((l) => l.startsWith('info: App: listening')), res.stderr);
  });
});
