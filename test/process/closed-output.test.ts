// The service's log goes to stderr; whoever reads it may go away while the service runs: `voice-hub
// 2>&1 | head`, a pager quit, a terminal or SSH session gone (writes then fail with EIO), journald's
// stream closed. The write error used to surface as an uncaught exception, whose own log line failed
// again, and so on without end: the service stopped answering, spun at a full core and grew by
// gigabytes. .NET's console drops what it cannot write on a broken pipe and goes on; so does voice-hub.
// The built bundle, as the unit runs it.
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { call } from '../support/http.js';
import { spawnService } from '../support/service.js';
import { tmpDir } from '../support/tmp.js';
import { sleep } from '../support/wait.js';

describe('closed output', () => {
  it('a service whose stderr and stdout readers are gone answers on, logging into the void, and stops cleanly on SIGTERM', async () => {
    const dataDir = tmpDir();
    // The access log makes a line of every request, so each one meets the closed pipe.
    const svc = await spawnService(['--data-dir', dataDir, '--Mqtt.BrokerAddress', '', '--VoiceService.EnableVoice', 'false',
      '--Logging.LogLevel.Microsoft.AspNetCore', 'Information']);
    svc.proc.stderr!.destroy();
    svc.proc.stdout!.destroy();
    for (let i = 0; i < 20; i++) {
      const res = await call(svc.url, 'GET', '/health', { headers: { accept: 'text/plain' }, timeoutMs: 5000 });
      assert.equal(res.status, 200);
      assert.equal(res.text, 'Healthy');
    }
    const reg = await call(svc.url, 'POST', '/api/device/register', { body: { deviceId: 'kitchen', deviceName: 'Kitchen', deviceType: 'speaker' }, timeoutMs: 5000 });
    assert.equal(reg.status, 200, reg.text);
    // Idle, it does nothing: no loop of failing writes (CPU time over a second of wall time).
    const cpuBefore = cpuSeconds(svc.proc.pid!);
    await sleep(1000);
    const used = cpuSeconds(svc.proc.pid!) - cpuBefore;
    assert.ok(used < 0.3, `the idle service used ${used} s of CPU in 1 s`);
    svc.proc.kill('SIGTERM');
    assert.equal(await svc.exited, 0);
    assert.equal(existsSync(path.join(dataDir, 'voice-hub.lock')), false, 'the lock is released');
  });
});

/** User and system CPU time of a process so far, in seconds (Linux /proc). */
function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}
