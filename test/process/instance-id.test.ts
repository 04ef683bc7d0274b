// The hub instance id: generated once, kept in the data dir, never silently replaced. A damaged file
// and a data dir it cannot be written to stop start-up with a message that says so.
import assert from 'node:assert/strict';
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { INSTANCE_ID_FILE, loadInstanceId } from '../../src/process/instance-id.js';
import { createApp } from '../../src/app.js';
import { createLogger } from '../../src/log/logger.js';
import { runBundle, startService, testConfig } from '../support/service.js';
import { tmpDir } from '../support/tmp.js';

const damaged = (file: string): string =>
  `the hub instance id file ${file} is damaged (it must hold 12 hex digits); restore it from a backup, ` +
  'or remove it to generate a new id (Home Assistant then sees a new hub with new entities)';

describe('hub instance id', () => {
  it('is generated on first start, written whole, and read back unchanged after that', async () => {
    const dir = path.join(tmpDir(), 'data'); // not there yet: created like the store creates it
    const first = await loadInstanceId(dir);
    const file = path.join(dir, INSTANCE_ID_FILE);
    assert.deepEqual(first, { id: first.id, created: true, file, removed: [] });
    assert.match(first.id, /^[0-9a-f]{12}$/);
    assert.equal(readFileSync(file, 'utf8'), `${first.id}\n`);
    assert.equal(statSync(file).mode & 0o022, 0, 'writable by its owner only');
    for (let i = 0; i < 3; i++) assert.deepEqual(await loadInstanceId(dir), { id: first.id, created: false, file, removed: [] });
    // Another data dir, another hub.
    assert.notEqual((await loadInstanceId(tmpDir())).id, first.id);
  });

  it('accepts the file with or without its newline and surrounding blanks (edited by hand)', async () => {
    for (const text of ['0123456789ab', '0123456789ab\n', '  0123456789ab \r\n']) {
      const dir = tmpDir();
      writeFileSync(path.join(dir, INSTANCE_ID_FILE), text);
      assert.equal((await loadInstanceId(dir)).id, '0123456789ab', JSON.stringify(text));
    }
  });

  it('a damaged file is an error naming it, and is left as it is', async () => {
    for (const text of ['', '\n', '0123456789AB', '0123456789a', '0123456789abc', 'voice-hub', '0123456789ab\n0123456789ab\n', '\u0000'.repeat(12)]) {
      const dir = tmpDir();
      const file = path.join(dir, INSTANCE_ID_FILE);
      writeFileSync(file, text);
      await assert.rejects(loadInstanceId(dir), { message: damaged(file) }, JSON.stringify(text));
      assert.equal(readFileSync(file, 'utf8'), text);
    }
  });

  it('a data dir it cannot write to is an error naming the file and the reason', async () => {
    // Root writes through chmod, so the obstacles are ones root cannot pass: a folder squatting on the
    // temp file's name (EISDIR), the data dir's parent being a file (ENOTDIR, like a vanished mount).
    const dir = tmpDir();
    const file = path.join(dir, INSTANCE_ID_FILE);
    mkdirSync(`${file}.tmp-${process.pid}`);
    await assert.rejects(loadInstanceId(dir), { message: `cannot create the hub instance id file ${file}: EISDIR` });
    assert.equal(existsSync(file), false, 'nothing half written');

    const parent = path.join(tmpDir(), 'a-file');
    writeFileSync(parent, 'x');
    const gone = path.join(parent, 'data', INSTANCE_ID_FILE);
    // The system's own error, which names the file and its cause (src/cli/fatal.ts words it).
    await assert.rejects(loadInstanceId(path.dirname(gone)), { code: 'ENOTDIR', syscall: 'open', path: gone });

    // An id file that is a folder is refused as any file that is not a regular one, left as it is.
    const other = tmpDir();
    const folder = path.join(other, INSTANCE_ID_FILE);
    mkdirSync(folder);
    await assert.rejects(loadInstanceId(other), {
      message: `the hub instance id file ${folder} is not a regular file: refused, it was left untouched; remove it to generate a new id (Home Assistant then sees a new hub with new entities)`,
    });
    assert.ok(statSync(folder).isDirectory());
  });

  it('a read-only data dir that already holds the id is fine', { skip: process.getuid?.() === 0 && 'root writes through chmod' }, async () => {
    const dir = tmpDir();
    const { id } = await loadInstanceId(dir);
    chmodSync(dir, 0o555);
    try {
      assert.deepEqual(await loadInstanceId(dir), { id, created: false, file: path.join(dir, INSTANCE_ID_FILE), removed: [] });
      const empty = tmpDir();
      chmodSync(empty, 0o555);
      await assert.rejects(loadInstanceId(empty), { message: `cannot create the hub instance id file ${path.join(empty, INSTANCE_ID_FILE)}: EACCES` });
    } finally {
      chmodSync(dir, 0o755);
    }
  });

  it('temporary files of a write a crash interrupted are removed at start, and only those', async () => {
    const dir = tmpDir();
    const left = [`${INSTANCE_ID_FILE}.tmp-${process.pid + 1}`, `${INSTANCE_ID_FILE}.tmp-1`];
    const kept = [`${INSTANCE_ID_FILE}.tmp-x`, `${INSTANCE_ID_FILE}.tmp`, `other.tmp-2`, `${INSTANCE_ID_FILE}x.tmp-3`];
    for (const name of [...left, ...kept]) writeFileSync(path.join(dir, name), '0123');
    const svc = await startService({ dataDir: dir });
    const id = readFileSync(path.join(dir, INSTANCE_ID_FILE), 'utf8');
    assert.match(id, /^[0-9a-f]{12}\n$/);
    assert.deepEqual(readdirSync(dir).filter((name) => name.includes('.tmp')).sort(), [...kept].sort());
    for (const name of left) assert.ok(svc.logs.some((l) => l.endsWith(`info: App: removed ${name} left by an interrupted write`)), `${name}:\n${svc.logs.join('\n')}`);
    // With the id already there too.
    writeFileSync(path.join(dir, left[0]!), '');
    assert.deepEqual(await loadInstanceId(dir), { id: id.trim(), created: false, file: path.join(dir, INSTANCE_ID_FILE), removed: [left[0]] });
  });

  it('a start that fails after opening the store closes it and logs no stop of a service that never started', async () => {
    const { loaded, dataDir } = testConfig();
    const file = path.join(dataDir, INSTANCE_ID_FILE);
    mkdirSync(`${file}.tmp-${process.pid}`);
    const logs: string[] = [];
    const app = createApp(loaded, { logger: createLogger({ levels: { Default: 'Debug' }, write: (l) => logs.push(l), journald: false }) });
    await assert.rejects(app.start(), { message: `cannot create the hub instance id file ${file}: EISDIR` });
    assert.ok(logs.some((l) => l.includes('Storage: opened')), `the store was opened:\n${logs.join('\n')}`);
    assert.deepEqual(logs.filter((l) => /stopped/.test(l)), []);
  });

  it('the service does not start on a damaged file, and keeps it', async () => {
    const dir = tmpDir();
    const file = path.join(dir, INSTANCE_ID_FILE);
    writeFileSync(file, 'not an id\n');
    await assert.rejects(startService({ dataDir: dir }), { message: damaged(file) });
    assert.equal(readFileSync(file, 'utf8'), 'not an id\n');
  });

  it('a damaged file stops the bundle with exit code 65, which the unit does not retry: a restart meets the same file', async () => {
    const dir = tmpDir();
    const file = path.join(dir, INSTANCE_ID_FILE);
    writeFileSync(file, 'x'.repeat(5000));
    const res = await runBundle(['--port', '0', '--host', '127.0.0.1', '--data-dir', dir, '--Mqtt.BrokerAddress', '']);
    assert.equal(res.code, 65, res.stderr);
    assert.equal(res.stderr.trim().split('\n').at(-1), `start-up failed: ${damaged(file)}`);
  });
});
