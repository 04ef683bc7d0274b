// A write of the database that fails after its rename, at the fsync of the data directory (EIO from a
// failing SD card, injected here with strace into the built bundle's system calls): the change is
// refused (503) and reverted in memory, but the file at the name already held it. A power cut (SIGKILL,
// the file as it was) before the next write then brought back a registration answered 503: its id
// taken (409 to the device that retried), its token never given to anyone. The file is written again,
// without the refused change, before the refusal is answered.
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { call } from '../support/http.js';
import { answered, assertProblem } from '../support/problem.js';
import { runBundle, spawnService, type SpawnedService } from '../support/service.js';
import { tmpDir } from '../support/tmp.js';
import { waitUntil, withTimeout } from '../support/wait.js';

const register = (url: string, deviceId: string) =>
  call(url, 'POST', '/api/device/register', { body: { deviceId, deviceName: deviceId, deviceType: 'speaker' } });

describe('a write of the database whose directory fsync fails', { timeout: 90_000 }, () => {
  const running: SpawnedService[] = [];
  after(async () => {
    for (const svc of running) if (svc.proc.exitCode === null && svc.proc.signalCode === null) svc.proc.kill('SIGKILL');
  });

  it('answers 503, and leaves the file without the refused registration, also for a power cut right after', async () => {
    // make test installs strace (TEST_DEBS): a missing one fails here rather than passing unchecked.
    execFileSync('strace', ['-V'], { stdio: 'ignore' });
    const dataDir = tmpDir();
    const first = await spawnService(['--data-dir', dataDir, '--Mqtt.BrokerAddress', '']);
    running.push(first);
    assert.equal((await register(first.url, 'kept')).status, 200);

    // From now on the first fsync of the data directory itself (-P: not of the files in it) fails.
    const log = path.join(tmpDir(), 'strace.log');
    const strace = spawn('strace', ['-f', '-p', String(first.proc.pid), '-P', dataDir, '-e', 'trace=fsync', '-e', 'inject=fsync:error=EIO:when=1', '-o', log], { stdio: ['ignore', 'ignore', 'pipe'] });
    let straceSaid = '';
    strace.stderr.on('data', (d: Buffer) => (straceSaid += d.toString()));
    await waitUntil(() => /attached/.test(straceSaid), 'strace to attach');

    const refused = await register(first.url, 'refused');
    assertProblem(answered(refused), 503, { detail: 'storage is not writable: EIO: i/o error, fsync' });
    strace.kill('SIGTERM');
    await withTimeout(new Promise((resolve) => strace.once('exit', resolve)), 10_000, 'strace to detach');
    assert.match(readFileSync(log, 'utf8'), /fsync\(\d+\)\s+= -1 EIO \(Input\/output error\) \(INJECTED\)/);
    assert.match(first.output(), /fail: Storage: writing \S+voice-hub\.db failed; 1 unsaved change\(s\) reverted: storage is not writable: EIO: i\/o error, fsync/);
    // The power cut: nothing written after the answer.
    first.proc.kill('SIGKILL');
    await first.exited;

    const second = await spawnService(['--data-dir', dataDir, '--Mqtt.BrokerAddress', '']);
    running.push(second);
    const admin = (await runBundle(['token', 'admin', '--data-dir', dataDir])).stdout.trim();
    const list = await call(second.url, 'GET', '/api/device/list', { token: admin });
    assert.deepEqual(list.json.devices.map((d: { id: string }) => d.id), ['kept']);
    // The device that was refused registers as a new one.
    assert.equal((await register(second.url, 'refused')).status, 200);
    second.proc.kill('SIGTERM');
    assert.equal(await second.exited, 0);
  });
});
