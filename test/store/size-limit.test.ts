// Storage.MaxDatabaseBytes: the file is read whole at every start (Node reads at most 2 GiB - 1 into one
// buffer), and every write exports it whole. With no bound, registrations that took a 2.14 GB file past
// 2 GiB were answered 503 with Node's `The value of "length" is out of range ... Received 2149657600`,
// the pages they had taken stayed in memory after the refusal, and every later write (a deletion too) and
// the clean stop failed the same way. A write that would grow the file past the bound is refused, the
// pages freed by the refusal and by deletions are given back, and the file stays loadable.
import assert from 'node:assert/strict';
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { isDomainError } from '../../src/errors.js';
import { openStore } from '../../src/store/index.js';
import { silentLogger } from '../../src/log/logger.js';
import { call } from '../support/http.js';
import { answered, assertProblem } from '../support/problem.js';
import { startService } from '../support/service.js';
import { scratchDir } from '../support/tmp.js';
import { adminToken } from '../support/tokens.js';
import { device, onDisk } from './helpers.js';

const LIMIT = 131_072;
/** The largest capabilities a registration takes: 64 items of 64 control characters, 6 bytes each in the stored JSON. */
const CAPABILITIES = Array.from({ length: 64 }, (_, i) => String.fromCharCode(1 + (i % 8)).repeat(63) + String(i % 10));
const FULL = new RegExp(`^storage is full: the database would be (\\d+) bytes, more than Storage\\.MaxDatabaseBytes \\(${LIMIT}\\); delete devices \\(or lower Storage\\.SessionHistory\\) to make room$`);

describe('Storage.MaxDatabaseBytes', () => {
  it('refuses a registration that would grow the file past it with 503, and a deletion makes room again', async () => {
    const svc = await startService({ flags: { 'Storage.MaxDatabaseBytes': LIMIT, 'DeviceManagement.MaxDevices': 100 } });
    const file = join(svc.dataDir, 'voice-hub.db');
    const register = (id: string) => call(svc.url, 'POST', '/api/device/register', { body: { deviceId: id, deviceName: 'n', deviceType: 't', capabilities: CAPABILITIES } });
    const registered: string[] = [];
    let refused: Awaited<ReturnType<typeof register>> | undefined;
    for (let i = 0; i < 20 && !refused; i++) {
      const res = await register(`big-${i}`);
      if (res.status === 200) registered.push(`big-${i}`);
      else refused = res;
    }
    assert.ok(refused, 'no registration was refused');
    assert.ok(registered.length >= 2, `only ${registered.length} registered`);
    assertProblem(answered(refused), 503, { detail: refused.json.detail });
    const size = Number(FULL.exec(refused.json.detail)?.[1]);
    assert.ok(size > LIMIT, refused.json.detail);
    assert.ok(statSync(file).size <= LIMIT, `the file is ${statSync(file).size} bytes`);

    const admin = await adminToken(svc);
    const list = await call(svc.url, 'GET', '/api/device/list', { token: admin });
    assert.deepEqual(list.json.devices.map((d: { id: string }) => d.id), registered);
    // The refused device's pages are free, not gone: were they kept, every later write would be refused too.
    assert.equal((await call(svc.url, 'DELETE', `/api/device/${registered[0]}`, { token: admin })).status, 200);
    assert.equal((await register('after-delete')).status, 200);
    assert.equal((await call(svc.url, 'GET', '/health')).json.entries.database.status, 'Healthy');
    assert.ok(statSync(file).size <= LIMIT, `the file is ${statSync(file).size} bytes`);

    await svc.stop();
    const again = await startService({ dataDir: svc.dataDir, flags: { 'Storage.MaxDatabaseBytes': LIMIT } });
    const after = await call(again.url, 'GET', '/api/device/list', { token: await adminToken(again) });
    assert.deepEqual(after.json.devices.map((d: { id: string }) => d.id), [...registered.slice(1), 'after-delete']);
  });

  it('a file already past a lowered limit is still written, only not grown', async () => {
    const dir = await scratchDir();
    try {
      const big = await openStore({ dataDir: dir.path, flushIntervalMs: 60_000, logger: silentLogger });
      for (let i = 0; i < 8; i++) await big.devices.insert(device(`dev-${i}`, { capabilities: CAPABILITIES }));
      await big.close();
      const before = statSync(join(dir.path, 'voice-hub.db')).size;
      assert.ok(before > LIMIT, `the file is ${before} bytes`);

      const store = await openStore({ dataDir: dir.path, flushIntervalMs: 60_000, logger: silentLogger, maxDatabaseBytes: LIMIT });
      try {
        await assert.rejects(store.devices.insert(device('dev-8', { capabilities: CAPABILITIES })), (e: unknown) => {
          assert.ok(isDomainError(e) && e.code === 'unavailable', String(e));
          assert.match(e.message, FULL);
          return true;
        });
        assert.equal(store.devices.get('dev-8'), undefined);
        // Telemetry and deletions do not grow it: written.
        store.devices.updateTelemetry('dev-0', { status: 'busy', lastSeen: '2024-05-02T00:00:00.000Z', batteryLevel: 5, temperature: null, memoryUsage: null, cpuUsage: null });
        await store.flush();
        assert.equal(await store.devices.delete('dev-1'), true);
        assert.ok(statSync(join(dir.path, 'voice-hub.db')).size <= before);
        await store.devices.insert(device('small'));
      } finally {
        await store.close();
      }
    } finally {
      await dir.cleanup();
    }
  });

  it('telemetry answered 200 is written even when it grows a file at the limit', async () => {
    const dir = await scratchDir();
    try {
      const first = await openStore({ dataDir: dir.path, flushIntervalMs: 60_000, logger: silentLogger });
      await Promise.all(Array.from({ length: 800 }, (_, i) => first.devices.insert(device(`dev-${i}`))));
      await first.close();
      const file = join(dir.path, 'voice-hub.db');
      const before = statSync(file).size;
      assert.ok(before > 65_536, `the file is ${before} bytes`);

      const store = await openStore({ dataDir: dir.path, flushIntervalMs: 60_000, logger: silentLogger, maxDatabaseBytes: 65_536 });
      try {
        for (let i = 0; i < 800; i++) {
          store.devices.updateTelemetry(`dev-${i}`, { status: 'x'.repeat(32), lastSeen: '2024-05-02T00:00:00.000Z', batteryLevel: 55.5, temperature: 41.25, memoryUsage: 63.5, cpuUsage: 12.75 });
        }
        await store.flush();
        assert.ok(statSync(file).size > before, `the file is ${statSync(file).size} bytes, as before`);
        // A registration, which it can refuse, still may not grow it.
        await assert.rejects(store.devices.insert(device('one-more', { capabilities: CAPABILITIES })), (e: unknown) => isDomainError(e) && /^storage is full: /.test(e.message));
      } finally {
        await store.close();
      }
      assert.equal(await onDisk(dir.path, (s) => s.devices.get('dev-799')?.status), 'x'.repeat(32));
    } finally {
      await dir.cleanup();
    }
  });

  it('a deletion written with a registration that does not fit is not refused with it', async () => {
    const dir = await scratchDir();
    try {
      const store = await openStore({ dataDir: dir.path, flushIntervalMs: 60_000, logger: silentLogger, maxDatabaseBytes: LIMIT });
      try {
        await store.devices.insert(device('small'));
        let fits = true;
        for (let i = 0; fits && i < 20; i++) fits = await store.devices.insert(device(`big-${i}`, { capabilities: CAPABILITIES })).then(() => true, () => false);
        assert.equal(fits, false);
        // A write under way: the two changes below wait for the next one, together.
        const inFlight = store.settings.put('voice', { enableVoice: true });
        const [late, deletion] = await Promise.allSettled([
          store.devices.insert(device('late', { capabilities: CAPABILITIES })),
          store.devices.delete('small'),
        ]);
        await inFlight;
        assert.equal(late.status, 'rejected');
        assert.match(String((late as PromiseRejectedResult).reason.message), FULL);
        assert.deepEqual(deletion, { status: 'fulfilled', value: true });
      } finally {
        await store.close();
      }
      assert.deepEqual(await onDisk(dir.path, (s) => [s.devices.get('small'), s.devices.get('late')]), [undefined, undefined]);
    } finally {
      await dir.cleanup();
    }
  });
});
