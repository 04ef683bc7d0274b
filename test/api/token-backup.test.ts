// A database restored from a backup: the tokens valid when the backup was made are valid again (the
// backup holds those devices), and no token issued after it ever is, whatever registrations follow. A
// generation counter kept in the file went back with it and handed the same generations out again.
import assert from 'node:assert/strict';
import { copyFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { DATABASE_FILE_NAME } from '../../src/store/index.js';
import { call } from '../support/http.js';
import { startService, type TestService } from '../support/service.js';
import { tmpDir } from '../support/tmp.js';
import { adminToken, registerDevice } from '../support/tokens.js';

test('restoring a backup: tokens issued after it stay refused when their ids are registered again', async () => {
  const dataDir = tmpDir();
  const db = path.join(dataDir, DATABASE_FILE_NAME);
  const status = async (svc: TestService, id: string, token: string): Promise<number> =>
    (await call(svc.url, 'PUT', `/api/device/${id}/status`, { token, body: { status: 'online' } })).status;
  const reRegister = async (svc: TestService, id: string): Promise<string> => {
    assert.equal((await call(svc.url, 'DELETE', `/api/device/${id}`, { token: await adminToken(svc) })).status, 200);
    return (await registerDevice(svc, { deviceId: id })).token;
  };

  let svc = await startService({ dataDir });
  const before = await registerDevice(svc, { deviceId: 'kitchen' });
  await svc.stop();
  copyFileSync(db, `${db}.backup`);

  // After the backup: the device is registered again twice, each time revoking the token before.
  svc = await startService({ dataDir });
  const discarded = [await reRegister(svc, 'kitchen'), await reRegister(svc, 'kitchen')];
  await svc.stop();

  copyFileSync(`${db}.backup`, db);
  svc = await startService({ dataDir });
  try {
    assert.equal(await status(svc, 'kitchen', before.token), 200, 'the backup holds the device as it was then');
    for (const token of discarded) assert.equal(await status(svc, 'kitchen', token), 401);
    const again = [await reRegister(svc, 'kitchen'), await reRegister(svc, 'kitchen')];
    for (const token of discarded) assert.equal(await status(svc, 'kitchen', token), 401, 'a token from after the backup');
    assert.equal(await status(svc, 'kitchen', before.token), 401);
    assert.equal(await status(svc, 'kitchen', again[0]!), 401);
    assert.equal(await status(svc, 'kitchen', again[1]!), 200);
  } finally {
    await svc.stop();
  }
});
