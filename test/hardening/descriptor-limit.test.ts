// A LAN host opening connections until the service has no file descriptor left: uWS then retried the
// refused accept at once, turn after turn (the event loop spinning at a full core, the connections
// queueing unanswered, the database's next write failing). Now the service stops accepting near the
// limit, so a new connection is refused at once, and accepts again once enough are let go. The built
// bundle under a limit of 256 descriptors (prlimit), as a user's ulimit or the unit's LimitNOFILE sets it.
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { describe, it } from 'node:test';
import { call } from '../support/http.js';
import { spawnService } from '../support/service.js';
import { tmpDir } from '../support/tmp.js';
import { waitUntil } from '../support/wait.js';

const LIMIT = 256;

/** Opens a TCP connection; resolves with the socket, or with the error's code. */
function open(port: number): Promise<Socket | string> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => resolve(socket));
    socket.once('error', (e: NodeJS.ErrnoException) => resolve(e.code ?? e.message));
  });
}

describe('the file-descriptor limit', () => {
  it('near it new connections are refused at once; once connections close, they are accepted again', async () => {
    const svc = await spawnService(['--data-dir', tmpDir(), '--Mqtt.BrokerAddress', ''], {}, 15_000, ['prlimit', `--nofile=${LIMIT}:${LIMIT}`, '--']);
    const held: Socket[] = [];
    try {
      // More than the limit: the service takes them until its guard stops accepting.
      for (let i = 0; i < LIMIT + 40; i++) {
        const s = await open(svc.port);
        if (typeof s !== 'string') held.push(s);
      }
      await waitUntil(() => /of 256 file descriptors open: not accepting new connections until no more than 192 are/.test(svc.output()), 'the warning (the first check comes within 10 s of the start)', 20_000);
      assert.equal(await open(svc.port), 'ECONNREFUSED', 'refused by the kernel, not queued');

      for (const s of held) s.destroy();
      await waitUntil(() => /of 256 file descriptors open: accepting new connections again/.test(svc.output()), 'accepting again', 10_000);
      const health = await call(svc.url, 'GET', '/health');
      assert.ok([200, 503].includes(health.status), `an answer: ${health.status}`);
      assert.equal(svc.output().match(/not accepting new connections/g)?.length, 1, svc.output());
      assert.doesNotMatch(svc.output(), /error:/);
    } finally {
      for (const s of held) s.destroy();
      svc.proc.kill('SIGTERM');
      assert.equal(await svc.exited, 0, svc.output());
    }
  });
});
