// A process killed while it creates a file of its data directory (strace sends SIGKILL at the system call
// that writes the file's bytes or gives it its name, whichever the program makes first) leaves nothing
// that the next start refuses or keeps: the signing key used to be created under its name and then
// written, and a kill in between left an empty signing.key, so every later start stopped with exit 65
// ("damaged (too short)"), which the unit does not retry; a kill while the lock was taken left its
// temporary file, one more with every such kill. The next start, of the service or of `token admin`,
// makes the key and removes the temporary files the kill left.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { call } from '../support/http.js';
import { runBundle, spawnService } from '../support/service.js';
import { tmpDir } from '../support/tmp.js';

/** strace, killing the program at the first write, link or rename that touches `file`. */
const killAtCreationOf = (file: string): string[] => [
  'strace', '-f', '-qq', '-o', '/dev/null', '-P', file,
  '-e', 'trace=write,link,linkat,rename,renameat,renameat2', '-e', 'inject=write,link,linkat,rename,renameat,renameat2:signal=SIGKILL', '--',
];

const serveArgs = (dataDir: string): string[] => ['serve', '--host', '127.0.0.1', '--port', '0', '--data-dir', dataDir, '--Mqtt.BrokerAddress', ''];

/** Starts the service on `dataDir`, runs `check` on it, and stops it cleanly (exit 0) whatever `check` did. */
async function withService(dataDir: string, check: (svc: Awaited<ReturnType<typeof spawnService>>) => Promise<void>): Promise<void> {
  const svc = await spawnService(['--data-dir', dataDir, '--Mqtt.BrokerAddress', '']);
  try {
    await check(svc);
  } finally {
    svc.proc.kill('SIGTERM');
    assert.equal(await svc.exited, 0, svc.output());
  }
}

describe('a kill while a file of the data directory is created', { timeout: 60_000 }, () => {
  it('the next start of the service makes the key and removes what the kill left', async () => {
    execFileSync('strace', ['-V'], { stdio: 'ignore' });
    const dataDir = tmpDir();
    const key = path.join(dataDir, 'signing.key');
    const killed = await runBundle(serveArgs(dataDir), {}, 30_000, killAtCreationOf(key));
    assert.notEqual(killed.code, 0, `the first start was not killed:\n${killed.stdout}${killed.stderr}`);
    assert.doesNotMatch(killed.stderr, /listening on/, 'killed before it listened');

    await withService(dataDir, async (svc) => {
      assert.match(readFileSync(key, 'utf8'), /^[\w-]{43}\n$/);
      const leftovers = readdirSync(dataDir).filter((n) => n.startsWith('signing.key.tmp-'));
      assert.deepEqual(leftovers, []);
      assert.match(svc.output(), /info: .*removed signing\.key\.tmp-\d+ left by an interrupted write\n/);
      const res = await call(svc.url, 'POST', '/api/device/register', { body: { deviceId: 'dev-1', deviceName: 'dev-1', deviceType: 'speaker' } });
      assert.equal(res.status, 200, res.text);
    });
  });

  it('the next start removes the temporary file of a start killed while it took the lock', async () => {
    const dataDir = tmpDir();
    const lock = path.join(dataDir, 'voice-hub.lock');
    // The holder record goes to a temporary file first: strace is told the lock's name, so kill at the link.
    const killed = await runBundle(serveArgs(dataDir), {}, 30_000, killAtCreationOf(lock));
    assert.notEqual(killed.code, 0, `the first start was not killed:\n${killed.stdout}${killed.stderr}`);
    const left = readdirSync(dataDir).filter((n) => n.startsWith('voice-hub.lock.'));
    assert.equal(left.length, 1, `the kill left no temporary lock file: ${readdirSync(dataDir).join(', ')}`);

    await withService(dataDir, async (svc) => {
      assert.deepEqual(readdirSync(dataDir).filter((n) => n.startsWith('voice-hub.lock.')), []);
      assert.match(svc.output(), new RegExp(`info: .*removed ${left[0]!.replace(/\./g, '\\.')} left by an interrupted write\n`));
    });
  });

  it('the next `token admin` makes the key and signs with it', async () => {
    const dataDir = tmpDir();
    const key = path.join(dataDir, 'signing.key');
    const args = ['token', 'admin', '--ttl', '1h', '--data-dir', dataDir];
    const killed = await runBundle(args, {}, 30_000, killAtCreationOf(key));
    assert.notEqual(killed.code, 0, `token admin was not killed:\n${killed.stdout}${killed.stderr}`);
    const again = await runBundle(args);
    assert.equal(again.code, 0, again.stderr);
    assert.match(again.stdout, /^ey[\w-]+\.[\w-]+\.[\w-]+\n$/);
    assert.deepEqual(readdirSync(dataDir).filter((n) => n.startsWith('signing.key')), ['signing.key']);
  });
});
