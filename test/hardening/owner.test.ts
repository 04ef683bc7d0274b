// One owner per port and per data directory. uWebSockets.js listens with SO_REUSEPORT unless told
// otherwise, so a second voice-hub on the same port used to start without a word and the kernel split
// connections between two processes, each with its own copy of the database. A second instance must
// now exit at once with EXIT_IN_USE, name the owner, and write nothing; a lock left by kill -9 or a
// reused PID must not keep the service down; read-only commands keep working beside the service.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { EXIT_IN_USE } from '../../src/cli/load.js';
import { LOCK_FILE_NAME } from '../../src/process/data-dir-lock.js';
import { call } from '../support/http.js';
import { answered, assertProblem } from '../support/problem.js';
import { AS_JOURNALD_UNIT, BUNDLE, runBundle, spawnService } from '../support/service.js';
import { tmpDir } from '../support/tmp.js';
import { adminTokenFor, startDaemon, type Daemon } from './daemon.js';
import { waitUntil, withTimeout } from '../support/wait.js';
import { freePort } from '../support/ports.js';

const running: Daemon[] = [];
after(async () => {
  for (const d of running) await d.stop();
});

async function daemon(options: Parameters<typeof startDaemon>[0] = {}): Promise<Daemon> {
  const d = await startDaemon(options);
  running.push(d);
  return d;
}

/** Every file under `dir` with a hash of its content and its mode: "byte-identical" means equal maps. */
function snapshot(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of readdirSync(dir, { recursive: true }) as string[]) {
    const file = path.join(dir, name);
    const st = statSync(file);
    out[name] = st.isDirectory() ? 'dir' : `${st.mode.toString(8)} ${createHash('sha256').update(readFileSync(file)).digest('hex')}`;
  }
  return out;
}

/** The PID of a process that has exited (and been reaped). */
function deadPid(): Promise<number> {
  const p = spawn('true');
  return new Promise((resolve) => p.on('exit', () => resolve(p.pid!)));
}

const QUIET = { Mqtt__BrokerAddress: '', VoiceService__ServerUrl: 'ws://127.0.0.1:9/voice', Logging__LogLevel__Default: 'Warning', Logging__LogLevel__App: 'Information' };

/** A second instance that is expected to be refused: it must exit on its own, quickly. */
const second = (args: string[]) => runBundle(['--host', '127.0.0.1', ...args], QUIET, 15_000);

describe('one owner per port and data directory', () => {
  it('a second instance on the same port (another data dir) exits 75 naming the port owner, writing nothing', async () => {
    const first = await daemon();
    const before = snapshot(first.dataDir);
    const otherDir = path.join(tmpDir('voice-hub-owner-'), 'data');
    const res = await second(['--port', String(first.port), '--data-dir', otherDir]);
    assert.equal(res.code, EXIT_IN_USE, res.stderr);
    assert.match(res.stderr, new RegExp(`port ${first.port} on 127\\.0\\.0\\.1 is already in use by PID ${first.pid} \\(.*voice-hub\\.cjs`));
    assert.equal(existsSync(otherDir), false, 'the refused instance created its data directory');
    assert.deepEqual(snapshot(first.dataDir), before);
    // The first one still serves.
    const res2 = await call(first.url, 'POST', '/api/device/register', { body: { deviceId: 'still-here', deviceName: 'x', deviceType: 'speaker' } });
    assert.equal(res2.status, 200, res2.text);
    assert.ok(first.alive(), first.death());
  });

  it('a second instance on the same data dir (another port) exits 75 naming the PID, the data dir byte-identical', async () => {
    const first = await daemon();
    const before = snapshot(first.dataDir);
    assert.ok(before[LOCK_FILE_NAME], 'the service holds no lock file');
    const res = await second(['--port', '0', '--data-dir', first.dataDir]);
    assert.equal(res.code, EXIT_IN_USE, res.stderr);
    assert.match(res.stderr, new RegExp(`data directory ${first.dataDir} is in use by another voice-hub \\(PID ${first.pid}, since `));
    assert.doesNotMatch(res.stdout + res.stderr, /listening on/);
    assert.deepEqual(snapshot(first.dataDir), before);
  });

  // The lock was looked at only at start: with it removed (by hand, or with the whole directory) a second
  // instance started on the same directory, both answered 200, and each whole-file write replaced the other's.
  it('a service whose lock file was removed writes no more (503, said once), and a second one on the directory keeps its data', async () => {
    const first = await daemon();
    const register = (d: Daemon, id: string) => call(d.url, 'POST', '/api/device/register', { body: { deviceId: id, deviceName: 'x', deviceType: 'speaker' } });
    assert.equal((await register(first, 'before')).status, 200);
    const lock = path.join(first.dataDir, LOCK_FILE_NAME);
    rmSync(lock);
    const refused = 'storage is not writable: this service no longer holds its data directory lock';
    assertProblem(answered(await register(first, 'lost-1')), 503, { detail: refused });
    assertProblem(answered(await register(first, 'lost-2')), 503, { detail: refused });
    const lines = first.svc.output().split('\n').filter((l) => l.includes(lock));
    assert.deepEqual(lines.map((l) => l.replace(/^.*?crit: /, 'crit: ')), [
      `crit: Storage: the data directory lock ${lock} is no longer this process's (removed, or made anew by another voice-hub): ` +
        `the database is not written any more, so as not to replace another's; stop every voice-hub using ${first.dataDir}, then start one`,
    ]);

    const next = await daemon({ dataDir: first.dataDir });
    assert.equal((await register(next, 'second')).status, 200);
    assertProblem(answered(await register(first, 'lost-3')), 503, { detail: refused });
    const health = await call(first.url, 'GET', '/health');
    assert.equal(health.json.entries.database.description, 'this service no longer holds its data directory lock');
    await next.stop();
    const admin = await adminTokenFor(first.dataDir);
    const restarted = await daemon({ dataDir: first.dataDir });
    const listed = await call(restarted.url, 'GET', '/api/device/list', { token: admin });
    assert.deepEqual((listed.json.devices as { id: string }[]).map((d) => d.id).sort(), ['before', 'second']);
  });

  it('a mistyped command is refused as bad usage before it touches the data directory', async () => {
    const first = await daemon();
    const before = snapshot(first.dataDir);
    // `helth` for `health`: no longer taken by the default command (serve) as a start.
    const res = await second(['helth', '--port', '0', '--data-dir', first.dataDir]);
    assert.equal(res.code, 64, res.stderr);
    assert.match(res.stderr, /^voice-hub: unknown command 'helth' \(did you mean health\?\)$/m);
    assert.deepEqual(snapshot(first.dataDir), before);
  });

  for (const shared of ['data dir', 'data dir with a stale lock', 'port'] as const) {
    it(`two starts at once on one ${shared}: exactly one serves, the other exits 75`, async () => {
      const dir = tmpDir('voice-hub-owner-race-');
      const port = shared === 'port' ? await freePort() : 0;
      if (shared === 'data dir with a stale lock') {
        // Both find a lock whose holder is gone and race to take it over.
        mkdirSync(path.join(dir, 'data'));
        writeFileSync(path.join(dir, 'data', LOCK_FILE_NAME), JSON.stringify({ pid: await deadPid(), start: '1' }));
      }
      const args = (i: number): string[] => [
        BUNDLE, '--host', '127.0.0.1', '--port', String(port),
        '--data-dir', shared !== 'port' ? path.join(dir, 'data') : path.join(dir, `data-${i}`),
      ];
      const procs = [0, 1].map((i) => spawn(process.execPath, args(i), { env: { PATH: process.env.PATH ?? '', ...QUIET }, stdio: ['ignore', 'pipe', 'pipe'] }));
      const outputs = procs.map(() => '');
      procs.forEach((p, i) => {
        p.stdout.on('data', (d: Buffer) => (outputs[i] += d.toString()));
        p.stderr.on('data', (d: Buffer) => (outputs[i] += d.toString()));
      });
      const exits = procs.map((p) => new Promise<number | null>((resolve) => p.on('exit', (code) => resolve(code))));
      try {
        // One of them exits on its own; the other keeps serving.
        const [loser, code] = await withTimeout(Promise.race(exits.map((e, i) => e.then((c) => [i, c] as const))), 20_000, 'one of the two to give up');
        const winner = 1 - loser;
        assert.equal(code, EXIT_IN_USE, outputs[loser]);
        const deadline = Date.now() + 15_000;
        while (!/listening on http:\/\/127\.0\.0\.1:(\d+)/.test(outputs[winner]!) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
        const listening = /listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(outputs[winner]!);
        assert.ok(listening, `the winner does not serve:\n${outputs[winner]}`);
        assert.equal(procs[winner]!.exitCode, null, `the winner exited:\n${outputs[winner]}`);
        assert.match(outputs[loser]!, new RegExp(`PID ${procs[winner]!.pid}`), 'the loser names the winner');
        const res = await call(`http://127.0.0.1:${listening[1]}`, 'POST', '/api/device/register', { body: { deviceId: 'race', deviceName: 'race', deviceType: 'speaker' } });
        assert.equal(res.status, 200, res.text);
      } finally {
        for (const p of procs) if (p.exitCode === null && p.signalCode === null) p.kill('SIGTERM');
        await withTimeout(Promise.all(exits), 15_000, 'both to exit');
      }
    });
  }

  it('a lock left by kill -9 does not stop the next start, which then owns the directory', async () => {
    const first = await daemon();
    const lock = path.join(first.dataDir, LOCK_FILE_NAME);
    first.svc.proc.kill('SIGKILL');
    await withTimeout(first.svc.exited, 5000, 'exit after SIGKILL');
    assert.match(readFileSync(lock, 'utf8'), new RegExp(`"pid":${first.pid}\\b`), 'kill -9 left no lock behind to test with');
    const next = await daemon({ dataDir: first.dataDir });
    assert.match(readFileSync(lock, 'utf8'), new RegExp(`"pid":${next.pid}\\b`));
    assert.equal((await second(['--port', '0', '--data-dir', first.dataDir])).code, EXIT_IN_USE, 'the new owner is not protected');
    // Stopped cleanly, it removes its lock.
    assert.equal(await next.stop(), 0);
    assert.equal(existsSync(lock), false, 'the lock outlived a clean stop');
  });

  // After kill -9 the holder stays a zombie until its parent waits for it; a restart in that window
  // (a supervisor that reaps late) was refused with 75 "in use by another voice-hub".
  it('a holder that has exited but is not reaped yet (a zombie) does not keep the directory', async () => {
    const dataDir = tmpDir('voice-hub-owner-zombie-');
    // sh starts the service in the background and becomes sleep, which never waits for it.
    const parent = spawn('sh', ['-c', '"$0" "$@" & echo $!; exec sleep 60', process.execPath, BUNDLE, '--host', '127.0.0.1', '--port', '0', '--data-dir', dataDir], {
      env: { PATH: process.env.PATH ?? '', ...QUIET },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    parent.stdout.on('data', (d: Buffer) => (out += d.toString()));
    parent.stderr.on('data', (d: Buffer) => (err += d.toString()));
    try {
      await waitUntil(() => /listening on/.test(err), 'the first service to listen', 15_000);
      const pid = Number(out.trim());
      assert.match(readFileSync(path.join(dataDir, LOCK_FILE_NAME), 'utf8'), new RegExp(`"pid":${pid}\\b`));
      process.kill(pid, 'SIGKILL');
      const state = (): string => {
        const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
        return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0]!;
      };
      await waitUntil(() => state() === 'Z', 'the killed service to be a zombie');
      const next = await daemon({ dataDir });
      assert.equal(state(), 'Z', 'reaped meanwhile: the case was not tested');
      assert.match(readFileSync(path.join(dataDir, LOCK_FILE_NAME), 'utf8'), new RegExp(`"pid":${next.pid}\\b`));
    } finally {
      parent.kill('SIGKILL');
    }
  });

  it('a port owner\'s command line is quoted with the values of its secret flags masked', async () => {
    // Started as `node`: the message cuts a command line at 120 characters, and the path of the Node 24
    // the tests run on elsewhere alone would push the flags out of it.
    const asNode = ['bash', '-c', 'exec -a node "$0" "$@"'];
    const first = await spawnService(['--Mqtt.Password', 'FLAGSECRET1', '--ApiKeys.0=-FLAGSECRET2', '--data-dir', tmpDir('voice-hub-owner-')], QUIET, undefined, asNode);
    const res = await second(['--port', String(first.port), '--data-dir', tmpDir('voice-hub-owner-')]);
    assert.equal(res.code, EXIT_IN_USE, res.stderr);
    assert.ok(!res.stderr.includes('FLAGSECRET'), res.stderr);
    assert.match(
      res.stderr,
      new RegExp(`^port ${first.port} on 127\\.0\\.0\\.1 is already in use by PID ${first.proc.pid} \\(node \\S+voice-hub\\.cjs --host 127\\.0\\.0\\.1 --port 0 --Mqtt\\.Password \\*\\*\\* --ApiKeys\\.0=\\*\\*\\* .*\\): stop it`, 'm'),
    );
    first.proc.kill('SIGTERM');
    assert.equal(await first.exited, 0);
  });

  it('a port owner\'s command line is quoted as it would be typed: an empty value or one with spaces in quotes', async () => {
    const asNode = ['bash', '-c', 'exec -a node "$0" "$@"'];
    // Short: the message cuts a command line at 120 characters.
    const first = await spawnService(['--data-dir', tmpDir('a b'), '--Mqtt.BrokerAddress', ''], QUIET, undefined, asNode);
    const res = await second(['--port', String(first.port), '--data-dir', tmpDir('voice-hub-owner-')]);
    assert.equal(res.code, EXIT_IN_USE, res.stderr);
    assert.match(
      res.stderr,
      new RegExp(`^port ${first.port} on 127\\.0\\.0\\.1 is already in use by PID ${first.proc.pid} \\(node \\S+voice-hub\\.cjs --host 127\\.0\\.0\\.1 --port 0 --data-dir '[^']+/a b[^']*' --Mqtt\\.BrokerAddress ''\\): stop it`, 'm'),
    );
    first.proc.kill('SIGTERM');
    assert.equal(await first.exited, 0);
  });

  it('a port owner\'s arguments with a newline or an escape sequence are quoted in $\'...\' form: they cannot end the journal line or colour it', async () => {
    // Any local user's process may hold the port, and its arguments are its own to choose.
    const port = await freePort();
    const script = path.join(tmpDir('voice-hub-owner-'), 'o.cjs');
    writeFileSync(script, `require('net').createServer().listen(${port}, '127.0.0.1', () => console.log('up'));`);
    const owner = spawn('node', [script, '\x1b[31mred\nfail: App: forged', 'it\'s\\ \u2028'], { stdio: ['ignore', 'pipe', 'inherit'] });
    try {
      await new Promise((resolve) => owner.stdout.once('data', resolve));
      const res = await runBundle(['--host', '127.0.0.1', '--port', String(port), '--data-dir', tmpDir('voice-hub-owner-')], QUIET, undefined, AS_JOURNALD_UNIT);
      assert.equal(res.code, EXIT_IN_USE, res.stderr);
      assert.equal(
        res.stderr,
        `<3>port ${port} on 127.0.0.1 is already in use by PID ${owner.pid} (node ${script} $'\\x1b[31mred\\nfail: App: forged' $'it\\'s\\\\ \\u2028'): ` +
          'stop it or choose another port (--port, Server.Port)\n',
      );
    } finally {
      owner.kill('SIGKILL');
    }
  });

  it('a lock naming a PID that now belongs to another process, or an earlier boot, or holding garbage, is stale', async () => {
    const dataDir = tmpDir('voice-hub-owner-stale-');
    const lock = path.join(dataDir, LOCK_FILE_NAME);
    // This test runner is alive and visible: only its start time (a reused PID) or the boot id differ.
    const self = readFileSync('/proc/self/stat', 'utf8');
    const start = self.slice(self.lastIndexOf(')') + 2).split(' ')[19]!;
    const stale = [
      // A process that got the PID 10 s later (a start within 2 ticks counts as the same: qemu-user's slip).
      JSON.stringify({ pid: process.pid, start: String(Number(start) + 1000) }),
      JSON.stringify({ pid: process.pid, start, boot: '00000000-0000-0000-0000-000000000000' }),
      'not a lock file',
    ];
    for (const text of stale) {
      writeFileSync(lock, text);
      const d = await daemon({ dataDir });
      assert.match(readFileSync(lock, 'utf8'), new RegExp(`"pid":${d.pid}\\b`), `not taken over: ${text}`);
      assert.equal(await d.stop(), 0);
    }
    // The same runner with its true start time and boot is a live holder: refused, and named.
    const boot = readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
    writeFileSync(lock, JSON.stringify({ pid: process.pid, start, boot }));
    const before = snapshot(dataDir);
    const res = await second(['--port', '0', '--data-dir', dataDir]);
    assert.equal(res.code, EXIT_IN_USE, res.stderr);
    assert.match(res.stderr, new RegExp(`PID ${process.pid}\\b`));
    assert.deepEqual(snapshot(dataDir), before);
  });

  it('a data directory that cannot be made stops start-up with exit 1 and the cause', async () => {
    const res = await second(['--port', '0', '--data-dir', '/dev/null/data']);
    assert.equal(res.code, 1, res.stderr);
    assert.equal(res.stderr.trim().split('\n').at(-1), 'start-up failed: cannot take the data directory /dev/null/data: /dev/null is a file, not a folder; choose another folder (--data-dir, Storage.DataDir)');
  });

  it('config check, health and token admin work beside a running service and write nothing', async () => {
    const first = await daemon({ settings: { VoiceService: { EnableVoice: false } } });
    const admin = await adminTokenFor(first.dataDir);
    // token admin read the service's own key: its token is accepted.
    const put = await call(first.url, 'PUT', '/api/config/device', { token: admin, body: { maxDevices: 7 } });
    assert.equal(put.status, 200, put.text);
    const before = snapshot(first.dataDir);

    const check = await runBundle(['config', 'check', '--data-dir', first.dataDir]);
    assert.equal(check.code, 0, check.stderr);
    assert.match(check.stdout, /^device\.maxDevices = 7 {2}\(api\)$/m);

    const health = await runBundle(['health', '--url', `${first.url}/health`]);
    assert.equal(health.code, 0, health.stdout + health.stderr);
    assert.match(health.stdout, /^database\s+Healthy/m);

    const again = await runBundle(['token', 'admin', '--ttl', '1h', '--data-dir', first.dataDir]);
    assert.equal(again.code, 0, again.stderr);
    assert.equal((await call(first.url, 'GET', '/api/device/list', { token: again.stdout.trim() })).status, 200);

    assert.deepEqual(snapshot(first.dataDir), before);
    assert.ok(first.alive(), first.death());
  });

  it('token admin never creates a second signing key beside a service that signs with a configured one', async () => {
    const first = await daemon({ settings: { Auth: { SigningKey: 'k'.repeat(40) } } });
    const before = snapshot(first.dataDir);
    const res = await runBundle(['token', 'admin', '--data-dir', first.dataDir]);
    assert.equal(res.code, 1, res.stdout);
    assert.equal(
      res.stderr.trim(),
      `there is no signing key file ${path.join(first.dataDir, 'signing.key')}, although voice-hub (PID ${first.pid}) runs on ` +
        `${first.dataDir}: it signs with a configured Auth.SigningKey; give this command the same configuration`,
    );
    assert.deepEqual(snapshot(first.dataDir), before);
  });
});
