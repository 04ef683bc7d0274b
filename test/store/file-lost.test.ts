// The database file removed, emptied or replaced by another program while the service runs. Memory
// holds every acknowledged change; the file no longer does. "Nothing changed since the last write" was
// decided from memory alone, so /health said Healthy and a clean stop wrote nothing: the next start
// found no database (every device and token gone) or an empty file (refused as damaged, exit 65).
// Now the check and every persist that would write nothing first look at the file, and write it again.
import assert from 'node:assert/strict';
import { readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import type { OpenedStore } from '../../src/store/index.js';
import { device, onDisk, openLogged } from './helpers.js';
import { call } from '../support/http.js';
import { spawnService } from '../support/service.js';
import { scratchDir } from '../support/tmp.js';

async function opened(t: { after(fn: () => unknown): void }): Promise<{ store: OpenedStore; file: string; dir: string; lines: string[] }> {
  const { store, dir, lines } = await openLogged(t);
  await store.devices.insert(device('kitchen-1'));
  return { store, file: path.join(dir, 'voice-hub.db'), dir, lines };
}

const critical = (lines: string[]): string[] => lines.filter((l) => l.includes('crit:')).map((l) => l.replace(/^.*?crit: \w+: /, ''));
const said = (file: string, change: string): string =>
  `${file} was ${change} by another program while the service ran; writing what the service holds to it again (stop the service before restoring or editing the database)`;

test('removed: the health check writes it again, says so once, and passes', async (t) => {
  const { store, file, dir, lines } = await opened(t);
  rmSync(file);
  await store.check();
  assert.deepEqual(await onDisk(dir, (s) => s.devices.get('kitchen-1')?.id), 'kitchen-1');
  await store.check();
  assert.deepEqual(critical(lines), [said(file, 'removed')]);
});

test('emptied in place: a clean stop that has nothing new writes it all the same', async (t) => {
  const { store, file, dir } = await opened(t);
  writeFileSync(file, '');
  await store.close();
  assert.ok(statSync(file).size > 0);
  assert.deepEqual(await onDisk(dir, (s) => s.devices.list().map((d) => d.id)), ['kitchen-1']);
});

test('replaced by another file: the timed flush writes what the service holds over it', async (t) => {
  const { store, file, dir, lines } = await opened(t);
  const other = `${file}.other`;
  writeFileSync(other, 'not ours');
  rmSync(file);
  // A rename over the name, as a restore by `cp` to a temporary name and `mv` does: a new inode.
  writeFileSync(file, readFileSync(other));
  await store.flush();
  assert.deepEqual(await onDisk(dir, (s) => s.devices.list().map((d) => d.id)), ['kitchen-1']);
  assert.equal(critical(lines).length, 1);
  assert.match(critical(lines)[0]!, / was (replaced|changed) by another program/);
});

test('removed with a change waiting: the change\'s own write says what happened, and holds both', async (t) => {
  const { store, file, dir, lines } = await opened(t);
  rmSync(file);
  await store.devices.insert(device('kitchen-2'));
  assert.deepEqual(critical(lines), [said(file, 'removed')]);
  assert.deepEqual(await onDisk(dir, (s) => s.devices.list().map((d) => d.id).sort()), ['kitchen-1', 'kitchen-2']);
});

// The rename puts the new file at the name before the directory's fsync; a /health check in between took
// the service's own write for another program's, said so as Critical and wrote the file once more.
test('checks while writes are under way never take the service\'s own writes for another program\'s', async (t) => {
  const { store, lines } = await opened(t);
  for (let n = 0; n < 40; n++) {
    const checks = Array.from({ length: 5 }, (_, i) => new Promise((resolve) => setTimeout(resolve, i)).then(() => store.check()));
    await Promise.all([store.devices.insert(device(`d-${n}`)), ...checks]);
  }
  assert.deepEqual(critical(lines), []);
});

test('untouched: nothing is written, and a change made since is written as usual', async (t) => {
  const { store, file, lines } = await opened(t);
  const writes = store.persistCount;
  await store.check();
  await store.flush();
  assert.equal(store.persistCount, writes, 'no write for a file that is as it was written');
  await store.devices.insert(device('kitchen-2'));
  assert.equal(store.persistCount, writes + 1);
  await store.check();
  assert.equal(store.persistCount, writes + 1);
  assert.deepEqual(critical(lines), []);
  assert.ok(statSync(file).size > 0);
});

test('the service: the file removed while it runs is back after a stop, with every device', async (t) => {
  const dir = await scratchDir();
  t.after(() => dir.cleanup());
  const args = ['--data-dir', dir.path, '--Mqtt.BrokerAddress', ''];
  const first = await spawnService(args);
  const registered = await call(first.url, 'POST', '/api/device/register', { body: { deviceId: 'kitchen-1', deviceName: 'Kitchen', deviceType: 'speaker' } });
  assert.equal(registered.status, 200, registered.text);
  rmSync(path.join(dir.path, 'voice-hub.db'));
  first.proc.kill('SIGTERM');
  assert.equal(await first.exited, 0, first.output());
  assert.match(first.output(), /crit: Storage: .*voice-hub\.db was removed by another program while the service ran/);
  const second = await spawnService(args);
  t.after(() => second.proc.kill('SIGKILL'));
  const status = await call(second.url, 'PUT', '/api/device/kitchen-1/status', { token: registered.json.deviceToken as string, body: { status: 'online' } });
  assert.equal(status.status, 200, status.text);
});
