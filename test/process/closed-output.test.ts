// The service's log goes to stderr; whoever reads it may go away while the service runs: `voice-hub
// 2>&1 | head`, a pager quit, a terminal or SSH session gone (writes then fail with EIO), journald's
// stream closed. The write error used to surface as an uncaught exception, whose own log line failed
// again, and so on without end: the service stopped answering, spun at a full core and grew by
// gigabytes. .NET's console drops what it cannot write on a broken pipe and goes on; so does voice-hub.
// And in the foreground of a terminal that hangs up (an SSH session dropped), the SIGHUP drained and
// flushed, and then Node 20 aborted on the way out restoring the terminal's mode (exit status 134 and a
// core dump). The built bundle, as the unit and a shell run it; python3 gives it a terminal (Node has no pty).
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { cpuSeconds } from '../support/cpu-time.js';
import { call } from '../support/http.js';
import { BUNDLE, runProcess, spawnService } from '../support/service.js';
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
    // Idle, it does nothing: no loop of failing writes. Start-up's own work goes on for a while after it
    // listens (V8 compiling in its helper threads: up to 0.3 s of CPU in the next second on a busy
    // machine), so the service is given a few seconds to reach a quiet second; the loop never did.
    const used: number[] = [];
    for (let second = 0; second < 10 && !(used.at(-1)! < 0.1); second++) {
      const cpuBefore = cpuSeconds(svc.proc.pid!);
      await sleep(1000);
      used.push(cpuSeconds(svc.proc.pid!) - cpuBefore);
    }
    assert.ok(used.at(-1)! < 0.1, `the idle service never had a quiet second: CPU seconds per second ${used.map((u) => u.toFixed(2)).join(', ')}`);
    svc.proc.kill('SIGTERM');
    assert.equal(await svc.exited, 0);
    assert.equal(existsSync(path.join(dataDir, 'voice-hub.lock')), false, 'the lock is released');
  });

  it('in the foreground of a terminal that hangs up: SIGHUP drains and flushes, and the service exits 0', async () => {
    const dataDir = tmpDir();
    const args = [BUNDLE, '--host', '127.0.0.1', '--port', '0', '--data-dir', dataDir, '--Mqtt.BrokerAddress', '', '--VoiceService.EnableVoice', 'false'];
    const res = await runProcess('python3', ['-c', HANG_UP, process.execPath, ...args], { env: { PATH: process.env.PATH ?? '' }, timeoutMs: 30_000 });
    assert.equal(res.code, 0, res.stderr);
    const outcome = JSON.parse(res.stdout) as { listening: boolean; exit: number | null; signal: number | null };
    assert.deepEqual(outcome, { listening: true, exit: 0, signal: null }, res.stderr);
    assert.equal(existsSync(path.join(dataDir, 'voice-hub.lock')), false, 'the lock is released');
  });
});

/**
 * Runs argv[1:] on a new terminal, waits for it to listen, hangs the terminal up (closes its master side:
 * the kernel sends SIGHUP to the session), and prints how the process ended.
 */
const HANG_UP = `
import json, os, pty, sys, time
pid, fd = pty.fork()
if pid == 0:
    os.execv(sys.argv[1], sys.argv[1:])
seen, deadline = b'', time.time() + 15
while b'listening on' not in seen and time.time() < deadline:
    try:
        seen += os.read(fd, 65536)
    except OSError:
        break
os.close(fd)
status = None
while time.time() < deadline + 15:
    done, status = os.waitpid(pid, os.WNOHANG)
    if done:
        break
    status = None
    time.sleep(0.05)
if status is None:
    os.kill(pid, 9)
    os.waitpid(pid, 0)
sys.stderr.write(seen.decode(errors='replace'))
print(json.dumps({'listening': b'listening on' in seen,
                  'exit': os.WEXITSTATUS(status) if status is not None and os.WIFEXITED(status) else None,
                  'signal': os.WTERMSIG(status) if status is not None and os.WIFSIGNALED(status) else None}))
`;
