// A FIFO (or any file that is not a regular one) at the name of a file the service opens in its data
// directory: opening it for reading or writing blocked until a peer came, so the start hung for good,
// SIGTERM included. Each is refused at once, left as found, with one line naming it and exit code 65
// (a file the service will not use: the unit does not retry it).
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { lstatSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { writeFileDurably } from '../../src/store/durable-file.js';
import { runBundle } from '../support/service.js';
import { tmpDir } from '../support/tmp.js';

const mkfifo = (file: string): void => void execFileSync('mkfifo', [file]);

describe('a FIFO among the data directory\'s files', { timeout: 20_000 }, () => {
  const cases: [string, (file: string) => string][] = [
    ['voice-hub.lock', (file) => `start-up failed: lock file ${file} is not a regular file: refused, it was left untouched; remove it if no voice-hub uses this directory`],
    ['voice-hub.db', (file) => `start-up failed: database file ${file} is not a regular file: refused, it was left untouched. Move it away to start with an empty database.`],
    ['signing.key', (file) => `start-up failed: signing key file ${file} is not a regular file: refused`],
    ['instance-id', (file) => `start-up failed: the hub instance id file ${file} is not a regular file: refused, it was left untouched; remove it to generate a new id (Home Assistant then sees a new hub with new entities)`],
  ];
  for (const [name, line] of cases) {
    it(`${name}: refused at once with exit code 65, and left as found`, async () => {
      const dataDir = tmpDir();
      const file = path.join(dataDir, name);
      mkfifo(file);
      const res = await runBundle(['--port', '0', '--host', '127.0.0.1', '--data-dir', dataDir, '--Mqtt.BrokerAddress', ''], {}, 10_000);
      assert.equal(res.code, 65, res.stderr);
      assert.equal(res.stderr.trim().split('\n').at(-1), line(file));
      assert.ok(lstatSync(file).isFIFO());
    });
  }

  it('a FIFO at a durable write\'s temporary name fails that write at once, the file untouched', async () => {
    const dir = tmpDir();
    const file = path.join(dir, 'data');
    writeFileSync(file, 'old');
    mkfifo(`${file}.tmp-${process.pid}`);
    await assert.rejects(writeFileDurably(file, new TextEncoder().encode('new')), { code: 'ENXIO' });
    assert.equal(lstatSync(file).size, 3);
  });
});
