// The data dir made unwritable while the built bundle runs. We run as root, where chmod stops no
// write, so (as test/store/unwritable.test.ts does) the data dir is moved away and a plain file put in
// its place: every write under it fails with ENOTDIR, as with a vanished mount. Durable writes
// (registration, deletion, configuration) then answer a 503 problem that says storage is not
// writable, nothing refused is half-applied, /health reports the database Unhealthy (503), the
// process stays up; once the dir is back, writes work, /health recovers, and after a restart exactly
// the acknowledged writes are there. Telemetry is accepted meanwhile (coalesced, docs/operations.md "Storage")
// and reaches the disk after recovery.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { rename, unlink, writeFile } from 'node:fs/promises';
import { after, before, describe, it } from 'node:test';
import { silentLogger } from '../../src/log/logger.js';
import { startEchoServer, type EchoServer } from '../../src/upstream/echo-server.js';
import { call } from '../support/http.js';
import { adminTokenFor, registerDevice, startDaemon, type Daemon } from './daemon.js';
import { waitUntil } from '../support/wait.js';

let echo: EchoServer;
let daemon: Daemon;
let dataDir: string;
let admin: string;
let device: { id: string; token: string };

before(async () => {
  // An upstream, so that /health depends on the database alone.
  echo = await startEchoServer({ host: '127.0.0.1', port: 0, logger: silentLogger });
  daemon = await startDaemon({ settings: { VoiceService: { ServerUrl: `ws://127.0.0.1:${echo.port}/voice` }, Storage: { FlushInterval: '00:00:01' } } });
  dataDir = daemon.dataDir;
  admin = await adminTokenFor(dataDir);
  device = await registerDevice(daemon.url);
});

after(async () => {
  await restoreDataDir();
  await daemon?.stop();
  await echo?.close();
});

const away = (): string => `${dataDir}-away`;

async function breakDataDir(): Promise<void> {
  await rename(dataDir, away());
  await writeFile(dataDir, 'not a directory');
}

async function restoreDataDir(): Promise<void> {
  if (!existsSync(away())) return;
  await unlink(dataDir).catch(() => {});
  await rename(away(), dataDir);
}

/** Errors other than the storage layer's own reports (a failed write is worth an error line). */
const unexpectedFailures = (d: Daemon): string[] => d.failures().filter((l) => !/ fail: Storage: /.test(l));

const listIds = async (d: Daemon): Promise<string[]> =>
  ((await call(d.url, 'GET', '/api/device/list', { token: admin })).json.devices as { id: string }[]).map((x) => x.id).sort();

describe('data dir unwritable at run time', () => {
  it('writes are refused with a 503 problem, nothing is half-applied, /health says the database is Unhealthy', async () => {
    await breakDataDir();

    const register = await call(daemon.url, 'POST', '/api/device/register', { body: { deviceId: 'refused-1', deviceName: 'x', deviceType: 'speaker' } });
    assert.equal(register.status, 503, register.text);
    assert.equal(register.headers.get('content-type'), 'application/problem+json');
    assert.equal(register.json.title, 'Service Unavailable');
    assert.match(register.json.detail, /^storage is not writable: .*ENOTDIR/);

    const remove = await call(daemon.url, 'DELETE', `/api/device/${device.id}`, { token: admin });
    assert.equal(remove.status, 503, remove.text);
    const config = await call(daemon.url, 'PUT', '/api/config/voice', { token: admin, body: { wakeWords: ['refused'] } });
    assert.equal(config.status, 503, config.text);

    assert.deepEqual(await listIds(daemon), [device.id], 'the refused registration and deletion left no trace');
    const voice = await call(daemon.url, 'GET', '/api/config/voice', { token: admin });
    assert.deepEqual(voice.json.wakeWords, []);

    // Telemetry is coalesced in memory: accepted now, written when the disk is back.
    const status = await call(daemon.url, 'PUT', `/api/device/${device.id}/status`, { token: device.token, body: { status: 'busy', batteryLevel: 42 } });
    assert.equal(status.status, 200, status.text);

    const health = await call(daemon.url, 'GET', '/health');
    assert.equal(health.status, 503);
    assert.equal(health.json.status, 'Unhealthy');
    assert.equal(health.json.entries.database.status, 'Unhealthy');
    assert.match(health.json.entries.database.description, /is not writable: ENOTDIR/);
    assert.equal(health.json.entries['voice-service'].status, 'Healthy');

    assert.ok(daemon.alive(), daemon.death());
    assert.deepEqual(unexpectedFailures(daemon), []);
  });

  it('writable again: writes work, /health is Healthy, and a restart finds exactly the acknowledged writes', async () => {
    await restoreDataDir();
    await waitUntil(async () => (await call(daemon.url, 'GET', '/health')).status === 200, '/health 200', 10_000, 200);
    const later = await registerDevice(daemon.url);
    const config = await call(daemon.url, 'PUT', '/api/config/voice', { token: admin, body: { wakeWords: ['computer'] } });
    assert.equal(config.status, 200, config.text);
    assert.ok(daemon.alive(), daemon.death());
    assert.deepEqual(unexpectedFailures(daemon), []);
    assert.equal(await daemon.stop(), 0);

    daemon = await startDaemon({ dataDir, settings: { VoiceService: { ServerUrl: `ws://127.0.0.1:${echo.port}/voice` } } });
    assert.deepEqual(await listIds(daemon), [device.id, later.id].sort());
    const list = (await call(daemon.url, 'GET', '/api/device/list', { token: admin })).json.devices as { id: string; status: string; metrics: { batteryLevel: number } }[];
    const first = list.find((d) => d.id === device.id)!;
    assert.equal(first.status, 'busy', 'telemetry accepted during the outage reached the disk');
    assert.equal(first.metrics.batteryLevel, 42);
    const voice = await call(daemon.url, 'GET', '/api/config/voice', { token: admin });
    assert.deepEqual(voice.json.wakeWords, ['computer']);
  });
});
