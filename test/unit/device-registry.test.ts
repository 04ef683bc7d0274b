// DeviceRegistry on its own: a real store in a temporary folder, a real token service, settings and
// clock given by the test. Registration rules, status, listing, deletion, listeners and token currency.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { TokenService } from '../../src/auth/tokens.js';
import { DeviceRegistry, type DeviceListener } from '../../src/devices/registry.js';
import { DomainError } from '../../src/errors.js';
import { silentLogger } from '../../src/log/logger.js';
import type { DeviceSettings } from '../../src/settings/categories.js';
import type { DeviceRecord, DeviceRepository } from '../../src/store/types.js';
import { openStore, type OpenedStore } from '../../src/store/index.js';
import { tmpDir } from '../support/tmp.js';

const KEY = new TextEncoder().encode('k'.repeat(32));
const NOW = new Date('2026-01-02T03:04:05.000Z');

async function rejectsWith(promise: Promise<unknown> | (() => unknown), code: string, message: string): Promise<void> {
  await assert.rejects(
    async () => (typeof promise === 'function' ? promise() : promise),
    (e: unknown) => e instanceof DomainError && e.code === code && e.message === message,
  );
}

describe('DeviceRegistry', () => {
  let store: OpenedStore;
  let settings: DeviceSettings;
  let registry: DeviceRegistry;
  const tokens = new TokenService(KEY, () => NOW.getTime());
  const changed: string[] = [];
  const deleted: string[] = [];
  const listener: DeviceListener = {
    deviceChanged: (d) => changed.push(`${d.id}:${d.status}`),
    deviceDeleted: (id) => {
      deleted.push(id);
    },
  };

  before(async () => {
    store = await openStore({ dataDir: tmpDir(), flushIntervalMs: 60_000, logger: silentLogger });
    settings = { allowDeviceRegistration: true, maxDevices: 2, tokenExpiration: 3_600_000 };
    registry = new DeviceRegistry({ repo: store.devices, tokens, settings: () => settings, listeners: [listener], now: () => NOW });
  });
  after(() => store.close());

  it('registers a device with a token for its generation and tells listeners', async () => {
    const grant = await registry.register({ deviceId: 'a', deviceName: 'A', deviceType: 'speaker', capabilities: ['audio'] });
    assert.deepEqual(grant.deviceInfo, { id: 'a', name: 'A', status: 'online', lastSeen: NOW.toISOString() });
    assert.equal(grant.expiresAt, new Date(NOW.getTime() + 3_600_000).toISOString());
    const principal = await tokens.verify(grant.deviceToken);
    assert.equal(principal.sub, 'a');
    assert.equal(principal.role, 'device');
    assert.equal(registry.isTokenCurrent(principal), true);
    assert.deepEqual(registry.get('a')?.capabilities, ['audio']);
    assert.equal(registry.get('a')?.location, '');
    assert.equal(registry.exists('a'), true);
    assert.deepEqual(changed, ['a:online']);
  });

  it('refuses a duplicate id, a registration past MaxDevices and one while registration is off', async () => {
    await rejectsWith(registry.register({ deviceId: 'a', deviceName: 'A', deviceType: 't' }), 'conflict', "device 'a' already exists");
    // Two at once for the last slot: one wins, the other is refused, never both.
    const results = await Promise.allSettled([
      registry.register({ deviceId: 'b', deviceName: 'B', deviceType: 't' }),
      registry.register({ deviceId: 'c', deviceName: 'C', deviceType: 't' }),
    ]);
    assert.deepEqual(
      results.map((r) => r.status),
      ['fulfilled', 'rejected'],
    );
    assert.equal((results[1] as PromiseRejectedResult).reason.message, 'The maximum number of devices (2) is registered.');
    settings = { ...settings, allowDeviceRegistration: false };
    await rejectsWith(registry.register({ deviceId: 'd', deviceName: 'D', deviceType: 't' }), 'forbidden', 'Device registration is disabled.');
    settings = { ...settings, allowDeviceRegistration: true };
  });

  it('updates the status and telemetry and lists devices as views', () => {
    const view = registry.updateStatus('a', { status: 'busy', batteryLevel: 50, temperature: null });
    assert.deepEqual(view, {
      id: 'a',
      name: 'A',
      type: 'speaker',
      status: 'busy',
      location: '',
      lastSeen: NOW.toISOString(),
      metrics: { batteryLevel: 50, temperature: null, memoryUsage: null, cpuUsage: null },
    });
    assert.equal(changed.at(-1), 'a:busy');
    const list = registry.list();
    assert.equal(list.totalCount, 2);
    assert.deepEqual(list.devices.map((d) => d.id).sort(), ['a', 'b']);
    assert.throws(() => registry.updateStatus('zz', { status: 'online' }), { code: 'not_found', message: "device 'zz' does not exist" });
  });

  it('deletes a device, tells listeners, and its tokens stop being current even after re-registration', async () => {
    const old = await tokens.verify((await registry.refreshToken('b')).deviceToken);
    // A listener that throws does not undo the deletion.
    registry.addListener({
      deviceDeleted: () => {
        throw new Error('listener bug');
      },
    });
    const view = await registry.delete('b');
    assert.equal(view.id, 'b');
    assert.deepEqual(deleted, ['b']);
    assert.equal(registry.exists('b'), false);
    assert.equal(registry.isTokenCurrent(old), false);
    await rejectsWith(registry.delete('b'), 'not_found', "device 'b' does not exist");
    await rejectsWith(registry.refreshToken('b'), 'not_found', "device 'b' does not exist");

    const again = await tokens.verify((await registry.register({ deviceId: 'b', deviceName: 'B2', deviceType: 't' })).deviceToken);
    assert.notEqual(again.gen, old.gen);
    for (const gen of [old.gen, again.gen]) assert.ok(Number.isSafeInteger(gen) && gen >= 1, `a generation of 53 random bits: ${gen}`);
    assert.equal(registry.isTokenCurrent(again), true);
    assert.equal(registry.isTokenCurrent(old), false);
    assert.equal(registry.isTokenCurrent({ ...old, role: 'admin', sub: 'admin' }), true);
  });
});

describe('DeviceRegistry: a token refresh that a DELETE overtakes while the token is signed', () => {
  it('is 404, as a refresh after the DELETE is, not a 200 with a token already revoked', async () => {
    const store = await openStore({ dataDir: tmpDir(), flushIntervalMs: 60_000, logger: silentLogger });
    after(() => store.close());
    const real = new TokenService(KEY, () => NOW.getTime());
    let release!: () => void;
    const signing = new Promise<void>((resolve) => (release = resolve));
    let held = false;
    // The real service, with one signing held back until the test lets it go.
    const tokens = Object.assign(Object.create(real) as TokenService, {
      issueDevice: async (id: string, generation: number, ttl: number) => {
        if (held) await signing;
        return real.issueDevice(id, generation, ttl);
      },
    });
    const settings: DeviceSettings = { allowDeviceRegistration: true, maxDevices: 5, tokenExpiration: 3_600_000 };
    const registry = new DeviceRegistry({ repo: store.devices, tokens, settings: () => settings, now: () => NOW });
    await registry.register({ deviceId: 'r', deviceName: 'R', deviceType: 't' });
    held = true;
    const refresh = registry.refreshToken('r');
    await registry.delete('r');
    held = false;
    await registry.register({ deviceId: 'r', deviceName: 'R again', deviceType: 't' });
    release();
    await rejectsWith(refresh, 'not_found', "device 'r' does not exist");
  });
});

describe('DeviceRegistry: a registration of an id whose deletion is still ending its sessions', () => {
  it('is 409 until the deletion is answered, so the deletion ends no session and clears no topic of the device registered after it', async () => {
    const store = await openStore({ dataDir: tmpDir(), flushIntervalMs: 60_000, logger: silentLogger });
    after(() => store.close());
    let release!: () => void;
    const ending = new Promise<void>((resolve) => (release = resolve));
    let listening!: () => void;
    const listenerRuns = new Promise<void>((resolve) => (listening = resolve));
    const settings: DeviceSettings = { allowDeviceRegistration: true, maxDevices: 5, tokenExpiration: 3_600_000 };
    const registry = new DeviceRegistry({
      repo: store.devices,
      tokens: new TokenService(KEY, () => NOW.getTime()),
      settings: () => settings,
      now: () => NOW,
      // As the voice sessions' listener: the device's sessions take a while to end.
      listeners: [{ deviceDeleted: async () => { listening(); await ending; } }],
    });
    const register = () => registry.register({ deviceId: 'z', deviceName: 'Z', deviceType: 't' });
    await register();
    const deletion = registry.delete('z');
    await listenerRuns;
    await rejectsWith(register, 'conflict', "device 'z' is being deleted; register it again once the deletion is answered");
    release();
    assert.equal((await deletion).id, 'z');
    assert.equal((await register()).deviceInfo.id, 'z');
  });
});

describe('DeviceRegistry: MaxDevices while a deletion is being written', () => {
  it('counts the device until the deletion is answered: one that cannot be written gives it back, and the count never passes the limit', async () => {
    const rows = new Map<string, DeviceRecord>();
    let release!: (ok: boolean) => void;
    // The store's contract: the row is gone at once, and back if the write fails.
    const repo: DeviceRepository = {
      get: (id) => rows.get(id),
      generation: (id) => rows.get(id)?.tokenGeneration,
      list: () => [...rows.values()],
      count: () => rows.size,
      insert: async (d) => void rows.set(d.id, d),
      delete: async (id) => {
        const row = rows.get(id)!;
        rows.delete(id);
        if (!(await new Promise<boolean>((resolve) => (release = resolve)))) {
          rows.set(id, row);
          throw new DomainError('unavailable', 'storage is not writable: ENOSPC: no space left on device, write');
        }
        return true;
      },
      updateTelemetry: () => {},
    };
    const settings: DeviceSettings = { allowDeviceRegistration: true, maxDevices: 1, tokenExpiration: 3_600_000 };
    const registry = new DeviceRegistry({ repo, tokens: new TokenService(KEY, () => NOW.getTime()), settings: () => settings, now: () => NOW });
    const register = (deviceId: string) => registry.register({ deviceId, deviceName: deviceId, deviceType: 't' });
    await register('a');
    const failing = registry.delete('a');
    await rejectsWith(register('b'), 'conflict', 'The maximum number of devices (1) is registered.');
    release(false);
    await rejectsWith(failing, 'unavailable', 'storage is not writable: ENOSPC: no space left on device, write');
    assert.deepEqual([...rows.keys()], ['a']);
    const answered = registry.delete('a');
    release(true);
    await answered;
    assert.equal((await register('b')).deviceInfo.id, 'b');
  });
});

describe('DeviceRegistry: lastSeen follows the clock', () => {
  it('writes each status update at the time the clock says, to the millisecond, and refuses an invalid time', async () => {
    // The text of a time is kept while the clock stays on one millisecond: a clock that moves on, by a
    // millisecond or backwards, must give its own text, and an invalid one must throw as toISOString does.
    const store = await openStore({ dataDir: tmpDir(), flushIntervalMs: 60_000, logger: silentLogger });
    after(() => store.close());
    let clock = NOW;
    const settings: DeviceSettings = { allowDeviceRegistration: true, maxDevices: 5, tokenExpiration: 3_600_000 };
    const registry = new DeviceRegistry({ repo: store.devices, tokens: new TokenService(KEY, () => NOW.getTime()), settings: () => settings, now: () => clock });
    await registry.register({ deviceId: 'c', deviceName: 'C', deviceType: 't' });
    const seen: string[] = [];
    for (const ms of [0, 0, 1, 1, 1_000, -86_400_000]) {
      clock = new Date(NOW.getTime() + ms);
      seen.push(registry.updateStatus('c', { status: 'online' }).lastSeen);
      assert.equal(registry.get('c')?.lastSeen, clock.toISOString());
    }
    assert.deepEqual(seen, [
      '2026-01-02T03:04:05.000Z', '2026-01-02T03:04:05.000Z', '2026-01-02T03:04:05.001Z', '2026-01-02T03:04:05.001Z',
      '2026-01-02T03:04:06.000Z', '2026-01-01T03:04:05.000Z',
    ]);
    clock = new Date(NaN);
    assert.throws(() => registry.updateStatus('c', { status: 'online' }), RangeError);
    assert.equal(registry.get('c')?.lastSeen, '2026-01-01T03:04:05.000Z');
  });
});
