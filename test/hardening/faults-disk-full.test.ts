// A data dir on a small file system that fills up: /health must tell the truth before and while writes
// fail. The data dir is a real 1 MiB tmpfs (mounting needs root, as the rest of test/hardening assumes;
// elsewhere the suite is skipped and says why). Four states, each with the exact database entry and HTTP
// status: healthy; low space (Degraded while writes still work); full for the database file but not for a
// small probe file (Unhealthy with ENOSPC, where a probe alone said Healthy); recovered once space is back.
// A session stopped while the disk is full is over all the same: the stop says its record is not on disk
// (503), the session answers as stopped, and its final record reaches the disk once space is back.
// A deletion refused while the disk is full leaves the device as it was, its status update answered
// 200 before it included, and that update reaches the disk once space is back.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, statSync } from 'node:fs';
import { rm, statfs, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { silentLogger } from '../../src/log/logger.js';
import { startEchoServer, type EchoServer } from '../../src/upstream/echo-server.js';
import { call, type HttpResult } from '../support/http.js';
import { answered, assertProblem } from '../support/problem.js';
import { startService, type TestService } from '../support/service.js';
import { mountTmpfs, tmpDir } from '../support/tmp.js';
import { adminToken } from '../support/tokens.js';

const KIB = 1024;
const FS_SIZE = 1024 * KIB;
const MIN_FREE = 512 * KIB;


const mounted = mountTmpfs(FS_SIZE);
const mountDir = 'dir' in mounted ? mounted.dir : '';

let echo: EchoServer;
let service: TestService;
let dataDir: string;
let session: { id: string; token: string };
const filler = (): string => path.join(mountDir, 'filler');

const freeBytes = async (): Promise<number> => {
  const fs = await statfs(dataDir);
  return fs.bavail * fs.bsize;
};

/** Writes real pages (a sparse file would take none) until exactly `target` bytes are left free. */
async function fillUntilFree(target: number): Promise<void> {
  let size = 0;
  try {
    size = statSync(filler()).size;
  } catch {
    /* no filler yet */
  }
  const more = (await freeBytes()) - target;
  assert.ok(more >= 0 && more % 4096 === 0, `free space ${await freeBytes()} cannot be brought to ${target}`);
  await writeFile(filler(), Buffer.alloc(size + more, 1));
  assert.equal(await freeBytes(), target);
}

const flags = () => ({
  // An upstream that answers and no broker configured: /health then depends on the database alone.
  'VoiceService.ServerUrl': `ws://127.0.0.1:${echo.port}/voice`,
  'Mqtt.BrokerAddress': '',
  'Storage.MinFreeBytes': MIN_FREE,
});

const register = (id: string): Promise<HttpResult> =>
  call(service.url, 'POST', '/api/device/register', { body: { deviceId: id, deviceName: 'Kitchen', deviceType: 'speaker' } });

/** The database entry without its duration (timing), and the report's HTTP status. */
async function databaseEntry(): Promise<{ http: number; overall: string; entry: Record<string, unknown> }> {
  const res = await call(service.url, 'GET', '/health');
  const { duration, ...entry } = res.json.entries.database as Record<string, unknown>;
  assert.match(String(duration), /^\d\d:\d\d:\d\d\.\d{7}$/);
  return { http: res.status, overall: res.json.status, entry };
}

describe('data dir on a file system that fills up', { skip: 'skip' in mounted ? mounted.skip : false }, () => {
  before(async () => {
    echo = await startEchoServer({ host: '127.0.0.1', port: 0, logger: silentLogger });
    dataDir = path.join(mountDir, 'data');
    mkdirSync(dataDir);
    service = await startService({ dataDir, flags: flags() });
  });

  after(async () => {
    await service?.stop();
    await echo?.close();
    execFileSync('umount', [mountDir]);
  });

  it('healthy: 200, database Healthy with the free space', async () => {
    const registered = await register('before-1');
    assert.equal(registered.status, 200);
    const token = registered.json.deviceToken as string;
    const started = await call(service.url, 'POST', '/api/voice/start', { token, body: { deviceId: 'before-1' } });
    assert.equal(started.status, 200, started.text);
    session = { id: started.json.sessionId, token };
    assert.deepEqual(await databaseEntry(), {
      http: 200,
      overall: 'Healthy',
      entry: {
        status: 'Healthy',
        description: 'database readable, data directory writable',
        data: { freeBytes: await freeBytes(), minFreeBytes: MIN_FREE },
        tags: ['database'],
      },
    });
  });

  it('low space: 200, database Degraded, while writes still work', async () => {
    await fillUntilFree(256 * KIB);
    assert.deepEqual(await databaseEntry(), {
      http: 200,
      overall: 'Degraded',
      entry: {
        status: 'Degraded',
        description: `low disk space: 256 KiB free in data dir ${dataDir}, below Storage.MinFreeBytes (512 KiB)`,
        data: { freeBytes: 256 * KIB, minFreeBytes: MIN_FREE },
        tags: ['database'],
      },
    });
    assert.equal((await register('while-low-1')).status, 200, 'Degraded comes before writes fail');
  });

  it('full for the database file, not for a small probe: the write is refused and /health says Unhealthy with ENOSPC', async () => {
    // Two pages free: a probe file fits, a copy of the database file (written whole before the rename) does not.
    await fillUntilFree(8 * KIB);
    assert.ok(statSync(path.join(dataDir, 'voice-hub.db')).size > 8 * KIB, 'the database file is larger than the free space');

    const refused = await register('refused-1');
    assert.equal(refused.status, 503, refused.text);
    assert.equal(refused.json.detail, 'storage is not writable: ENOSPC: no space left on device, write');

    for (let i = 0; i < 2; i++) {
      const { http, overall, entry } = await databaseEntry();
      assert.deepEqual({ http, overall }, { http: 503, overall: 'Unhealthy' });
      const at = (entry.data as { lastWriteAt: string }).lastWriteAt;
      assert.ok(Math.abs(Date.parse(at) - Date.now()) < 10_000, `lastWriteAt ${at} is now`);
      assert.deepEqual(entry, {
        status: 'Unhealthy',
        description: 'the last write of the database failed: ENOSPC: no space left on device, write',
        exception: 'the last write of the database failed: ENOSPC: no space left on device, write',
        data: { lastWriteAt: at },
        tags: ['database'],
      });
    }
  });

  it('full: a stop ends the session and says its final record is not on disk; the session answers as stopped', async () => {
    const stopped = await call(service.url, 'POST', '/api/voice/stop', { token: session.token, body: { sessionId: session.id } });
    assertProblem(answered(stopped), 503, {
      detail: `session '${session.id}' is stopped, but its final record could not be written (storage is not writable: ENOSPC: no space left on device, write); it is written when storage recovers`,
    });
    const message = await call(service.url, 'POST', '/api/voice/message', { token: session.token, body: { sessionId: session.id, text: 'hello' } });
    assertProblem(answered(message), 409, { detail: `session '${session.id}' is not active (Stopped)` });
  });

  it('full: a deletion refused with 503 keeps the status update answered 200 before it', async () => {
    const status = await call(service.url, 'PUT', '/api/device/before-1/status', { token: session.token, body: { status: 'acked', batteryLevel: 55 } });
    assert.equal(status.status, 200, status.text);
    const admin = await adminToken(service);
    const removed = await call(service.url, 'DELETE', '/api/device/before-1', { token: admin });
    assertProblem(answered(removed), 503, { detail: 'storage is not writable: ENOSPC: no space left on device, write' });
    const listed = await call(service.url, 'GET', '/api/device/list', { token: admin });
    const kept = (listed.json.devices as { id: string; status: string; metrics: { batteryLevel: number } }[]).find((d) => d.id === 'before-1');
    assert.deepEqual([kept?.status, kept?.metrics.batteryLevel], ['acked', 55]);
  });

  it('recovered: once space is back, the write /health retries succeeds, then writes work and it stays Healthy', async () => {
    await rm(filler());
    const { http, entry } = await databaseEntry();
    assert.equal(http, 200);
    assert.deepEqual(entry, {
      status: 'Healthy',
      description: 'database readable, data directory writable',
      data: { freeBytes: await freeBytes(), minFreeBytes: MIN_FREE },
      tags: ['database'],
    });
    assert.equal((await register('after-1')).status, 200);
    assert.equal((await databaseEntry()).entry.status, 'Healthy');
    const admin = await call(service.url, 'GET', '/api/device/list', { token: await adminToken(service) });
    assert.deepEqual(
      (admin.json.devices as { id: string }[]).map((d) => d.id).sort(),
      ['after-1', 'before-1', 'while-low-1'],
      'the refused registration left no trace',
    );
  });

  it('recovered: the stopped session\'s final record is on disk, and stays after a restart', async () => {
    const final = async () => {
      const res = await call(service.url, 'POST', '/api/voice/stop', { token: session.token, body: { sessionId: session.id } });
      assert.equal(res.status, 200, res.text);
      return res.json;
    };
    const before = await final();
    assert.deepEqual([before.state, before.endReason], ['Stopped', 'stopped by request']);
    await service.stop();
    service = await startService({ dataDir, flags: flags() });
    assert.deepEqual(await final(), before, 'the same record, not one the restart wrote');
    const listed = await call(service.url, 'GET', '/api/device/list', { token: await adminToken(service) });
    const kept = (listed.json.devices as { id: string; status: string; metrics: { batteryLevel: number } }[]).find((d) => d.id === 'before-1');
    assert.deepEqual([kept?.status, kept?.metrics.batteryLevel], ['acked', 55], 'the status update reached the disk');
  });
});
