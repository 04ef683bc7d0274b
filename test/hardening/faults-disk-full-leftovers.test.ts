// Every file the service creates to write something into is gone again when the write fails. On a full
// disk creating a file still works and only its write fails (ENOSPC), so a temp file whose name was
// known only after its write succeeded stayed behind: one `.voice-hub-check-*` per GET /health, one
// `voice-hub.lock.new-*` per failed start, an empty signing.key that then stopped every start as
// "damaged". The disk is a real full tmpfs (mounting needs root, as the rest of test/hardening assumes;
// elsewhere the suite is skipped and says why).
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, readdirSync } from 'node:fs';
import { statfs, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { loadSigningKey } from '../../src/auth/signing-key.js';
import { acquireDataDirLock } from '../../src/process/data-dir-lock.js';
import { loadInstanceId } from '../../src/process/instance-id.js';
import { writePrivateFile } from '../../src/runtime/private-dir.js';
import { writeFileDurably } from '../../src/store/durable-file.js';
import { call } from '../support/http.js';
import { runBundle, startService, type TestService } from '../support/service.js';
import { mountTmpfs, tmpDir } from '../support/tmp.js';


const mounted = mountTmpfs(1024 * 1024);
const mountDir = 'dir' in mounted ? mounted.dir : '';
/** A folder of the full file system, made while there was room. */
const folder = (name: string): string => path.join(mountDir, name);
const ENOSPC = { code: 'ENOSPC', message: 'ENOSPC: no space left on device, write' };

let service: TestService | undefined;

describe('a full disk leaves no file behind', { skip: 'skip' in mounted ? mounted.skip : false }, () => {
  before(async () => {
    for (const name of ['service', 'lock', 'key', 'id', 'durable', 'bundle']) mkdirSync(folder(name), { mode: 0o700 });
    service = await startService({ dataDir: folder('service'), flags: { 'Mqtt.BrokerAddress': '' } });
    const free = await statfs(mountDir);
    await writeFile(folder('filler'), Buffer.alloc(free.bavail * free.bsize, 1));
    assert.equal((await statfs(mountDir)).bavail, 0, 'the file system is not full');
  });

  after(async () => {
    await service?.stop();
    execFileSync('umount', [mountDir]);
  });

  it('GET /health: Unhealthy, and no probe file per request', async () => {
    const before = readdirSync(folder('service')).sort();
    for (let i = 0; i < 3; i++) {
      const res = await call(service!.url, 'GET', '/health');
      assert.equal(res.json.entries.database.status, 'Unhealthy', res.text);
    }
    assert.deepEqual(readdirSync(folder('service')).sort(), before);
  });

  it('taking the data-directory lock', () => {
    assert.throws(() => acquireDataDirLock(folder('lock')), ENOSPC);
    assert.deepEqual(readdirSync(folder('lock')), []);
  });

  it('generating the signing key: no empty key file that would stop the next start', () => {
    assert.throws(() => loadSigningKey('', folder('key')), ENOSPC);
    assert.deepEqual(readdirSync(folder('key')), []);
  });

  it('the durable writes: the database file, the hub instance id, the unpacked addon and code cache', async () => {
    await assert.rejects(writeFileDurably(path.join(folder('durable'), 'voice-hub.db'), new Uint8Array(64 * 1024)), ENOSPC);
    await assert.rejects(loadInstanceId(folder('id')), { message: `cannot create the hub instance id file ${folder('id')}/instance-id: ENOSPC` });
    assert.throws(() => writePrivateFile(folder('durable'), 'addon.node', Buffer.alloc(64 * 1024), 0o500, () => false), ENOSPC);
    assert.deepEqual(readdirSync(folder('durable')), []);
    assert.deepEqual(readdirSync(folder('id')), []);
  });

  it('a start of the bundle: exit 1 with the cause, the data directory left empty', async () => {
    const dataDir = folder('bundle');
    const res = await runBundle(['--host', '127.0.0.1', '--port', '0', '--data-dir', dataDir, '--Mqtt.BrokerAddress', '']);
    assert.equal(res.code, 1, res.stderr);
    assert.equal(res.stderr.trim().split('\n').at(-1), `start-up failed: cannot take the data directory ${dataDir}: cannot write ${dataDir}/voice-hub.lock: no space left on device (ENOSPC); free some space on that file system`);
    assert.deepEqual(readdirSync(dataDir), []);
  });
});
