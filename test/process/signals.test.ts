// The signals a service meets besides SIGTERM. SIGUSR1 opened Node's debugger on 127.0.0.1:9229 to every
// local user (who could read the signing key out of the process through it); SIGUSR2 ended the service
// at once, losing acknowledged telemetry and leaving the lock; a second Ctrl-C exited without writing
// what was acknowledged. The built bundle, as the unit runs it, with real signals.
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { describe, it } from 'node:test';
import { call } from '../support/http.js';
import { runBundle, spawnService } from '../support/service.js';
import { tmpDir } from '../support/tmp.js';
import { sleep, waitUntil } from '../support/wait.js';

/** Telemetry is written only at shutdown (or a flush) here, so losing it shows. */
const ARGS = ['--Mqtt.BrokerAddress', '', '--Storage.FlushInterval', '00:10:00'];

async function registerAndReport(url: string): Promise<string> {
  const reg = await call(url, 'POST', '/api/device/register', { body: { deviceId: 'kitchen', deviceName: 'Kitchen', deviceType: 'speaker' } });
  assert.equal(reg.status, 200, reg.text);
  const put = await call(url, 'PUT', '/api/device/kitchen/status', { token: reg.json.deviceToken, body: { status: 'busy', batteryLevel: 42 } });
  assert.equal(put.status, 200, put.text);
  return reg.json.deviceToken as string;
}

async function storedStatus(dataDir: string): Promise<unknown> {
  const again = await spawnService(['--data-dir', dataDir, ...ARGS]);
  try {
    const token = (await runBundle(['token', 'admin', '--data-dir', dataDir])).stdout.trim();
    const list = await call(again.url, 'GET', '/api/device/list', { token });
    const [device] = list.json.devices as Array<{ status: string; metrics: { batteryLevel: number | null } }>;
    return { status: device?.status, batteryLevel: device?.metrics.batteryLevel };
  } finally {
    again.proc.kill('SIGTERM');
    await again.exited;
  }
}

describe('signals', () => {
  it('SIGUSR1, SIGUSR2 and SIGALRM are logged and ignored: no debugger opens, the service answers on, SIGTERM then writes the telemetry', async () => {
    const dataDir = tmpDir();
    const svc = await spawnService(['--data-dir', dataDir, ...ARGS]);
    const token = await registerAndReport(svc.url);
    for (const signal of ['SIGUSR1', 'SIGUSR2', 'SIGALRM'] as const) {
      svc.proc.kill(signal);
      await waitUntil(() => svc.output().includes(`${signal} received`), `the ${signal} line`);
    }
    await sleep(200);
    const put = await call(svc.url, 'PUT', '/api/device/kitchen/status', { token, body: { status: 'busy', batteryLevel: 42 } });
    assert.equal(put.status, 200, svc.output());
    const lines = svc.output().split('\n');
    for (const signal of ['SIGUSR1', 'SIGUSR2', 'SIGALRM']) {
      assert.equal(lines.filter((l) => l.endsWith(`warn: App: ${signal} received: ignored (SIGTERM stops the service)`)).length, 1, svc.output());
    }
    assert.ok(!/Debugger listening/.test(svc.output()), svc.output());
    svc.proc.kill('SIGTERM');
    assert.equal(await svc.exited, 0, svc.output());
    assert.deepEqual(await storedStatus(dataDir), { status: 'busy', batteryLevel: 42 });
  });

  it('a second SIGINT while a request holds the drain: acknowledged telemetry is written, then exit 1; the lock is gone', async () => {
    const dataDir = tmpDir();
    const svc = await spawnService(['--data-dir', dataDir, ...ARGS]);
    await registerAndReport(svc.url);
    // A request whose body never finishes: the drain waits for it (up to 3 s).
    const slow = connect(svc.port, '127.0.0.1');
    slow.on('error', () => {});
    slow.write('POST /api/device/register HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"deviceId"');
    await sleep(100);
    svc.proc.kill('SIGINT');
    await waitUntil(() => svc.output().includes('SIGINT received: draining'), 'the drain');
    svc.proc.kill('SIGINT');
    assert.equal(await svc.exited, 1, svc.output());
    slow.destroy();
    assert.match(svc.output(), /warn: App: SIGINT again: not waiting for requests and sessions; writing the database, then exiting\n/);
    assert.deepEqual(await storedStatus(dataDir), { status: 'busy', batteryLevel: 42 }, 'the status answered 200 before the signals');
  });
});
