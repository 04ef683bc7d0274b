// The readiness protocol under a stop as systemd does it: SIGTERM to every process of the unit's control
// group, the service and its perl sender alike. The sender used to die of it, so each stop wrote an Error
// line to the journal ("sender exited (SIGTERM)", or "lost its input (write EPIPE)") and STOPPING=1 never
// went out. A Unix datagram socket stands in for systemd's (Node has none; python3 binds one).
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { spawnService } from '../support/service.js';
import { tmpDir } from '../support/tmp.js';
import { waitUntil, withTimeout } from '../support/wait.js';

const RECEIVER = `
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
print("bound", flush=True)
while True:
    print(s.recv(4096).decode(), flush=True)
`;

describe('systemd notifications', () => {
  it('READY=1 at start; a SIGTERM to the whole control group: STOPPING=1, exit 0, no error line', async (t) => {
    const socket = path.join(tmpDir(), 'notify.sock');
    const receiver = spawn('python3', ['-c', RECEIVER, socket], { stdio: ['ignore', 'pipe', 'inherit'] });
    t.after(() => receiver.kill('SIGKILL'));
    let received = '';
    receiver.stdout.on('data', (d: Buffer) => (received += d.toString()));
    await waitUntil(() => received.includes('bound'), 'the socket to be bound');

    const svc = await spawnService(['--data-dir', tmpDir(), '--Mqtt.BrokerAddress', ''], { NOTIFY_SOCKET: socket });
    await waitUntil(() => received.includes('READY=1'), 'READY=1');
    const pid = svc.proc.pid!;
    const children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
    assert.ok(children.length >= 1, 'the sender runs beside the service');
    for (const p of [pid, ...children]) process.kill(p, 'SIGTERM');
    assert.equal(await withTimeout(svc.exited, 15_000, 'exit after SIGTERM'), 0);
    await waitUntil(() => received.includes('STOPPING=1'), 'STOPPING=1');
    assert.deepEqual(svc.output().split('\n').filter((l) => /\b(fail|crit): /.test(l)), []);
  });
});
