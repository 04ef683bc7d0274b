// Why a command or the service stops, as the operator reads it: one line naming the file or the port and
// what to do, the exit code the unit's retry rules expect, never a stack for a failure of the machine
// (permissions, a busy port, a damaged database); and under journald every such line carries the Error
// priority, so `journalctl -p warning` shows why the service did not start.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { statfs } from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import { describe, it } from 'node:test';
import { EXIT_CONFIG, EXIT_IN_USE, EXIT_USAGE } from '../../src/cli/load.js';
import { LOCK_FILE_NAME } from '../../src/process/data-dir-lock.js';
import { AS_JOURNALD_UNIT, BUNDLE, ROOT, runBundle, runProcess, spawnService } from '../support/service.js';
import { tmpDir } from '../support/tmp.js';
import { makeSelfSigned } from '../https/helpers.js';
import { waitUntil } from '../support/wait.js';


describe('fatal messages under journald carry the Error priority on every line', () => {
  it('an invalid configuration value (exit 78)', async () => {
    const res = await runBundle(['--port', 'abc', '--data-dir', tmpDir()], {}, undefined, AS_JOURNALD_UNIT);
    assert.equal(res.code, EXIT_CONFIG);
    assert.equal(res.stderr, '<3>invalid configuration:\n<3>  Server.Port: "abc" from flag --port is invalid: must be an integer from 0 to 65535\n');
  });

  it('bad usage (exit 64)', async () => {
    const res = await runBundle(['--prot', '5001'], {}, undefined, AS_JOURNALD_UNIT);
    assert.equal(res.code, EXIT_USAGE);
    assert.equal(res.stderr, "<3>voice-hub: unknown flag --prot (did you mean --port?)\n<3>Run 'voice-hub --help' for usage.\n");
  });

  it('bad usage quoting a newline or an escape sequence that was typed: one line each, the escape visible', async () => {
    const res = await runBundle(['co\x1b[31m\nfail: App: forged', '--x\x1b[31m'], {}, undefined, AS_JOURNALD_UNIT);
    assert.equal(res.code, EXIT_USAGE);
    assert.equal(
      res.stderr,
      "<3>voice-hub: unknown flag --x\\x1b[31m\n<3>voice-hub: unknown command 'co\\x1b[31m fail: App: forged'\n<3>Run 'voice-hub --help' for usage.\n",
    );
  });

  // A path is quoted as typed, and it may hold a newline: the rest of it must not be a line (a journal
  // entry) of its own, `fail: App: forged` as if the service had written it (docs/operations.md, "Logging").
  it('a configuration file or data directory typed with a newline and an escape: still one line each', async () => {
    const file = path.join(tmpDir(), 'none\x1b[31m\nfail: App: forged');
    const config = await runBundle(['--config', file, '--data-dir', tmpDir()], {}, undefined, AS_JOURNALD_UNIT);
    assert.equal(config.code, EXIT_CONFIG);
    assert.equal(config.stderr, `<3>invalid configuration:\n<3>  ${file.replace('\x1b', '\\x1b').replace('\n', ' ')}: cannot read the configuration file: it does not exist\n`);
    const dir = `/proc/voice-hub-none\nfail: App: forged`;
    const data = await runBundle(['--port', '0', '--host', '127.0.0.1', '--data-dir', dir, '--Mqtt.BrokerAddress', ''], {}, undefined, AS_JOURNALD_UNIT);
    assert.equal(data.code, 1);
    const lines = data.stderr.split('\n').filter(Boolean);
    assert.equal(lines.length, 1, data.stderr);
    assert.match(lines[0]!, /^<3>start-up failed: cannot take the data directory \/proc\/voice-hub-none fail: App: forged: /);
  });

  it('without JOURNAL_STREAM the same lines come bare', async () => {
    const res = await runBundle(['--port', 'abc', '--data-dir', tmpDir()]);
    assert.equal(res.code, EXIT_CONFIG);
    assert.equal(res.stderr, 'invalid configuration:\n  Server.Port: "abc" from flag --port is invalid: must be an integer from 0 to 65535\n');
  });

  it('with a JOURNAL_STREAM that names another stream than stderr the lines come bare too', async () => {
    // Inherited from a unit by a command whose stderr went elsewhere: systemd.exec(5) asks for the
    // comparison, since the variable outlives the redirection.
    const res = await runBundle(['--port', 'abc', '--data-dir', tmpDir()], { JOURNAL_STREAM: '8:12345' });
    assert.equal(res.code, EXIT_CONFIG);
    assert.equal(res.stderr, 'invalid configuration:\n  Server.Port: "abc" from flag --port is invalid: must be an integer from 0 to 65535\n');
    const logged = await spawnService(['--data-dir', tmpDir(), '--Mqtt.BrokerAddress', ''], { JOURNAL_STREAM: '8:12345' });
    assert.match(logged.output(), /^\d{4}-\d\d-\d\dT[\d:.]+Z info: App: listening on http:\/\/127\.0\.0\.1:\d+$/m);
    assert.doesNotMatch(logged.output(), /^</m);
    logged.proc.kill('SIGTERM');
    assert.equal(await logged.exited, 0);
  });

  it("what the systemd notification sender says comes through the logger, with the Error priority", async () => {
    const socket = path.join(tmpDir(), 'no-such.sock');
    const svc = await spawnService(['--data-dir', tmpDir(), '--Mqtt.BrokerAddress', ''], { NOTIFY_SOCKET: socket }, undefined, AS_JOURNALD_UNIT);
    // READY=1 goes out once it listens; the send to a socket that is not there makes perl die.
    await waitUntil(() => svc.output().includes('sender exited'), 'the sender to exit');
    const lines = svc.output().split('\n').filter((l) => l.includes('systemd notification sender'));
    assert.deepEqual(lines, [
      `<3>fail: App: systemd notification sender: send to ${socket}: No such file or directory`,
      '<3>fail: App: systemd notification sender exited (2): systemd sees no readiness and no watchdog pings',
    ]);
    svc.proc.kill('SIGTERM');
    assert.equal(await svc.exited, 0);
  });
});

describe('operational failures: one line, no stack', () => {
  it('config check with a damaged database prints the configuration, then the file and what to do (exit 65)', async () => {
    const dataDir = tmpDir();
    const db = path.join(dataDir, 'voice-hub.db');
    writeFileSync(db, 'this is not a database\n');
    const res = await runBundle(['config', 'check', '--data-dir', dataDir]);
    assert.equal(res.code, 65);
    assert.equal(
      res.stderr,
      `voice-hub: database file ${db} is damaged (not an SQLite database); it was left untouched. ` +
        'Restore it from a backup, or move it away to start with an empty database.\n',
    );
    assert.match(res.stdout, /^# configuration file: /);
    assert.match(res.stdout, new RegExp(`^Storage\\.DataDir = "${dataDir}"  \\(flag\\)$`, 'm'));
  });

  const asNobody = process.getuid?.() === 0 ? false : 'needs root, to run the bundle as another user (setpriv)';
  for (const command of [['config', 'check'], ['token', 'admin']]) {
    it(`${command.join(' ')} as a user who cannot read the data dir: names the file and what to do (exit 1)`, { skip: asNobody }, async () => {
      const dataDir = path.join(tmpDir(), 'data');
      mkdirSync(dataDir, { mode: 0o700 });
      writeFileSync(path.join(dataDir, LOCK_FILE_NAME), '{}');
      writeFileSync(path.join(dataDir, 'voice-hub.db'), '');
      chmodSync(path.dirname(dataDir), 0o755);
      const res = await runProcess('setpriv', ['--reuid=65534', '--regid=65534', '--clear-groups', process.execPath, BUNDLE, ...command, '--data-dir', dataDir], {
        cwd: ROOT,
        env: { PATH: process.env.PATH ?? '', HOME: '/tmp' },
      });
      // As serve says it: the data directory first, then the file and what to do (config check reads the
      // signing key first, as serve checks it before opening the database).
      const [file, what] = command[0] === 'token' ? [LOCK_FILE_NAME, 'token: cannot take'] : ['signing.key', 'config: cannot read'];
      assert.equal(res.code, 1, res.stderr);
      assert.equal(
        res.stderr,
        `voice-hub ${what} the data directory ${dataDir}: cannot open ${path.join(dataDir, file)}: permission denied (EACCES); ` +
          'run it as the user the service runs as (sudo -u voice-hub voice-hub ...), or give this user access\n',
      );
    });
  }

  // The system's own words misled: EEXIST for a data directory that is a file, ENOENT under a read-only
  // mount, a bare ENOSPC naming no file, EACCES on the lock without what to do.
  describe('serve with a data directory it cannot make or write: the path and what to do (exit 1)', () => {
    const serve = (dataDir: string, as: string[] = []) => runProcess(as.length > 0 ? 'setpriv' : process.execPath,
      [...as, ...(as.length > 0 ? [process.execPath] : []), BUNDLE, '--host', '127.0.0.1', '--port', '0', '--data-dir', dataDir, '--Mqtt.BrokerAddress', ''],
      { cwd: ROOT, env: { PATH: process.env.PATH ?? '', HOME: '/tmp' } });
    const lastLine = (res: { stderr: string }): string => res.stderr.trim().split('\n').at(-1)!;

    it('a file where the folder should be', async () => {
      const file = path.join(tmpDir(), 'data');
      writeFileSync(file, '');
      for (const dataDir of [file, path.join(file, 'below')]) {
        const res = await serve(dataDir);
        assert.equal(res.code, 1, res.stderr);
        assert.equal(lastLine(res), `start-up failed: cannot take the data directory ${dataDir}: ${file} is a file, not a folder; choose another folder (--data-dir, Storage.DataDir)`);
      }
    });

    it('a folder where mkdir answers ENOENT though its parent exists (/proc): refused at once', async () => {
      // Node's recursive mkdir made the parent again and retried for as long as the parent answered
      // EEXIST: a core at 100 % for good, in a call no SIGTERM handler could interrupt.
      for (const [dataDir, made] of [['/proc/voice-hub-test', '/proc/voice-hub-test'], ['/proc/voice-hub-test/data', '/proc/voice-hub-test']] as const) {
        const res = await serve(dataDir);
        assert.equal(res.code, 1, res.stderr);
        assert.equal(lastLine(res), `start-up failed: cannot take the data directory ${dataDir}: cannot mkdir ${made}: no such file or directory (ENOENT), though /proc exists: it is on a file system that takes no new files (such as /proc or /sys); choose another folder (--data-dir, Storage.DataDir)`);
      }
    });

    it('a new folder under a read-only mount, and a full disk', { skip: process.getuid?.() === 0 ? false : 'needs root, to mount a tmpfs' }, async () => {
      const mount = tmpDir();
      execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=64k,ro', 'tmpfs', mount]);
      try {
        const dataDir = path.join(mount, 'new', 'data');
        const res = await serve(dataDir);
        assert.equal(res.code, 1, res.stderr);
        assert.equal(lastLine(res), `start-up failed: cannot take the data directory ${dataDir}: cannot create it in ${mount}: that file system is read-only (EROFS); ` +
          'choose another folder (--data-dir, Storage.DataDir), or mount it writable');

        // Writable, with two pages free: the lock fits, the new database does not.
        execFileSync('mount', ['-o', 'remount,rw', mount]);
        const data = path.join(mount, 'data');
        mkdirSync(data);
        writeFileSync(path.join(mount, 'filler'), Buffer.alloc((await statfs(mount)).bavail * 4096 - 8192, 1));
        const full = await serve(data);
        assert.equal(full.code, 1, full.stderr);
        assert.equal(lastLine(full), `start-up failed: cannot write ${path.join(data, 'voice-hub.db')}: no space left on device (ENOSPC); free some space on that file system`);
        assert.deepEqual(readdirSync(data), []);
      } finally {
        execFileSync('umount', [mount]);
      }
    });

    it('a lock file this user may not open', { skip: asNobody }, async () => {
      const dataDir = path.join(tmpDir(), 'data');
      mkdirSync(dataDir, { mode: 0o755 });
      writeFileSync(path.join(dataDir, LOCK_FILE_NAME), '{}', { mode: 0o600 });
      chmodSync(path.dirname(dataDir), 0o755);
      const res = await serve(dataDir, ['--reuid=65534', '--regid=65534', '--clear-groups']);
      assert.equal(res.code, 1, res.stderr);
      assert.equal(lastLine(res), `start-up failed: cannot take the data directory ${dataDir}: cannot open ${path.join(dataDir, LOCK_FILE_NAME)}: permission denied (EACCES); ` +
        'run it as the user the service runs as (sudo -u voice-hub voice-hub ...), or give this user access');
    });
  });

  // The probe's three: the host not named, and no word of what to do about a link loop or a name too long.
  it('a host name that does not resolve, a configuration file in a link loop, a data directory name too long: named, with what to do (exit 1)', async () => {
    const host = await runBundle(['echo-server', '--host', 'nonexistent.invalid', '--port', '0']);
    assert.equal(host.code, 1, host.stderr);
    assert.equal(host.stderr, "voice-hub: cannot resolve nonexistent.invalid: unknown node or service (ENOTFOUND); check the name's spelling, or give an IP address\n");
    const dir = tmpDir();
    symlinkSync(path.join(dir, 'b.json'), path.join(dir, 'a.json'));
    symlinkSync(path.join(dir, 'a.json'), path.join(dir, 'b.json'));
    const loop = await runBundle(['config', 'check', '--config', path.join(dir, 'a.json')]);
    assert.equal(loop.code, 1, loop.stderr);
    assert.equal(loop.stderr, `voice-hub: cannot open ${path.join(dir, 'a.json')}: too many symbolic links encountered (ELOOP); ` +
      'a symbolic link on that path leads back to itself or through too many others: fix the link, or give the path it should lead to\n');
    const long = path.join(dir, 'd'.repeat(300));
    const token = await runBundle(['token', 'admin', '--data-dir', long]);
    assert.equal(token.code, 1, token.stderr);
    assert.equal(token.stderr, `voice-hub token: cannot take the data directory ${long}: cannot open ${long}/voice-hub.lock: name too long (ENAMETOOLONG); ` +
      'a name on that path is longer than 255 bytes, or the whole path longer than 4095: choose a shorter path\n');
  });

  it('serve on an address not on this machine: the cause and what to do, before the data directory is made (exit 1)', async () => {
    const dataDir = path.join(tmpDir(), 'data');
    const res = await runBundle(['--host', '10.254.254.1', '--port', '5999', '--data-dir', dataDir, '--Mqtt.BrokerAddress', '']);
    assert.equal(res.code, 1, res.stderr);
    assert.equal(res.stderr, "voice-hub: cannot listen 10.254.254.1:5999: address not available (EADDRNOTAVAIL); that address is not one of this machine's: choose another (--host)\n");
    assert.equal(existsSync(dataDir), false, 'nothing written');
  });

  it('serve on port 80 as a user without the right: the cause and what to do (exit 1)', { skip: asNobody }, async () => {
    const dataDir = path.join(tmpDir(), 'data');
    chmodSync(path.dirname(dataDir), 0o777);
    const res = await runProcess('setpriv', ['--reuid=65534', '--regid=65534', '--clear-groups', process.execPath, BUNDLE, '--host', '127.0.0.1', '--port', '80', '--data-dir', dataDir, '--Mqtt.BrokerAddress', ''], {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? '', HOME: '/tmp' },
    });
    assert.equal(res.code, 1, res.stderr);
    assert.equal(res.stderr, 'voice-hub: cannot listen 127.0.0.1:80: permission denied (EACCES); ports below 1024 need root or CAP_NET_BIND_SERVICE: ' +
      'choose a port from 1024 (--port, Server.Port), or give the service that capability (the package ships a drop-in for port 80)\n');
    assert.equal(existsSync(dataDir), false, 'nothing written');
  });

  it('serve with HTTPS on port 443 as a user without the right: the advice names the HTTPS port setting (exit 1)', { skip: asNobody }, async () => {
    const dir = tmpDir();
    chmodSync(dir, 0o777);
    const cert = makeSelfSigned(dir, 'svc');
    for (const file of [cert.cert, cert.key]) chmodSync(file, 0o644);
    const dataDir = path.join(dir, 'data');
    const res = await runProcess('setpriv', ['--reuid=65534', '--regid=65534', '--clear-groups', process.execPath, BUNDLE, '--host', '127.0.0.1', '--port', '0',
      '--https-port', '443', '--cert', cert.cert, '--key', cert.key, '--data-dir', dataDir, '--Mqtt.BrokerAddress', ''], {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? '', HOME: '/tmp' },
    });
    assert.equal(res.code, 1, res.stderr);
    assert.equal(res.stderr, 'voice-hub: cannot listen 127.0.0.1:443: permission denied (EACCES); ports below 1024 need root or CAP_NET_BIND_SERVICE: ' +
      'choose a port from 1024 (--https-port, Server.HttpsPort), or give the service that capability (the package ships a drop-in for port 80)\n');
    assert.equal(existsSync(dataDir), false, 'nothing written');
  });

  it('echo-server on a busy port names the owner (exit 75)', async () => {
    const server = net.createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as net.AddressInfo).port;
    try {
      const res = await runBundle(['echo-server', '--port', String(port)]);
      assert.equal(res.code, EXIT_IN_USE, res.stderr);
      assert.match(res.stderr, new RegExp(`^voice-hub: port ${port} on 127\\.0\\.0\\.1 is already in use by PID ${process.pid} \\(.+\\): stop it or choose another port \\(--port\\)\\n$`));
    } finally {
      server.close();
    }
  });
});

describe('internal errors (bugs), in every command: exit 70 and one line; the stack at the Debug or Trace level', () => {
  /** NODE_OPTIONS that load `code` before the bundle: a bug put where the commands cannot foresee it. */
  const injecting = (code: string): Record<string, string> => {
    const file = path.join(tmpDir(), 'bug.cjs');
    writeFileSync(file, code);
    return { NODE_OPTIONS: `--require ${file}` };
  };
  const line = (what: string): string =>
    `voice-hub: internal error (a bug: please report it; Logging__LogLevel__Default=Debug in the environment prints its stack): ${what}\n`;
  // simulate's relay and the echo server listen; a TypeError there is no refusal of the machine.
  const listenBug = "require('node:net').Server.prototype.listen = function () { throw new TypeError('injected\\nbug'); };";
  const commands = [['simulate', '--url', 'http://127.0.0.1:9', '--seconds', '1', '--drop-every', '2'], ['echo-server', '--port', '0']];

  it('thrown where the command awaits: simulate exited 2, echo-server 1 with a stack; both now 70 and one line', async () => {
    for (const args of commands) {
      const res = await runBundle(args, injecting(listenBug));
      assert.equal(res.code, 70, `${args[0]}: ${res.stderr}`);
      assert.equal(res.stderr, line('TypeError: injected bug'), args[0]);
      assert.equal(res.stdout, '');
    }
  });

  // The message stays on its line, as without the stack: a newline in it is a space; the frames follow, one a line.
  it('with Logging__LogLevel__Default=Debug (any case, either spelling) or Trace the stack follows, for the bug report', async () => {
    for (const [name, level] of [['Logging__LogLevel__Default', 'Debug'], ['logging:loglevel:default', 'trace']] as const) {
      const res = await runBundle(commands[1]!, { ...injecting(listenBug), [name]: level });
      assert.equal(res.code, 70, res.stderr);
      assert.match(res.stderr, /^voice-hub: internal error \(a bug: please report it\): TypeError: injected bug\n {4}at \S+ \(\S+bug\.cjs:1:\d+\)\n/);
    }
    // Information, the default, keeps the one line.
    const res = await runBundle(commands[1]!, { ...injecting(listenBug), Logging__LogLevel__Default: 'Information' });
    assert.equal(res.stderr, line('TypeError: injected bug'));
  });

  it('a command that reads the configuration takes the level from it: a flag at Debug prints the stack too', async () => {
    const uuidBug = "require('node:crypto').randomUUID = () => { throw new TypeError('injected bug'); };";
    const args = ['token', 'admin', '--data-dir', tmpDir()];
    const plain = await runBundle(args, injecting(uuidBug));
    assert.equal(plain.code, 70, plain.stderr);
    assert.equal(plain.stderr, line('TypeError: injected bug'));
    const debug = await runBundle([...args, '--Logging.LogLevel.Default', 'Debug'], injecting(uuidBug));
    assert.equal(debug.code, 70, debug.stderr);
    assert.match(debug.stderr, /^voice-hub: internal error \(a bug: please report it\): TypeError: injected bug\n {4}at \S+ \(\S+bug\.cjs:1:\d+\)\n/);
  });

  it('thrown or rejected outside it (a timer, an event): the same line and exit, where Node printed a stack and exited 1', async () => {
    const cases = [
      ["setTimeout(() => { throw new RangeError('late bug'); }, 300);", 'RangeError: late bug'],
      ["setTimeout(() => { Promise.reject(new Error('rejected bug')); }, 300);", 'Error: rejected bug'],
    ] as const;
    for (const [code, what] of cases) {
      const res = await runBundle(['echo-server', '--port', '0'], injecting(code));
      assert.equal(res.code, 70, res.stderr);
      // After the server's own line that it listens.
      assert.match(res.stderr, /^\S+ info: EchoServer: echo voice server listening on ws:\/\/127\.0\.0\.1:\d+\/voice\n/);
      assert.equal(res.stderr.slice(res.stderr.indexOf('\n') + 1), line(what));
    }
  });

  it('in the service\'s start-up (a TypeError where it makes the signing key): exit 70 and the line, not 1 and "start-up failed"', async () => {
    const keyBug = "const c = require('node:crypto'); const bytes = c.randomBytes; c.randomBytes = (n, ...rest) => { if (n === 32) throw new TypeError('injected bug'); return bytes(n, ...rest); };";
    const res = await runBundle(['--port', '0', '--host', '127.0.0.1', '--data-dir', tmpDir(), '--Mqtt.BrokerAddress', ''], injecting(keyBug));
    assert.equal(res.code, 70, res.stderr);
    assert.equal(res.stderr.split('\n').filter(Boolean).at(-1), line('TypeError: injected bug').trimEnd());
  });

  it('in the service: logged with its stack, as its log is where a report starts, and exit 70 (was 1)', async () => {
    const res = await runBundle(['--port', '0', '--data-dir', tmpDir(), '--Mqtt.BrokerAddress', ''], injecting("setTimeout(() => { throw new RangeError('late bug'); }, 2500);"));
    assert.equal(res.code, 70, res.stderr);
    // Listening by then, as a rule; on a machine slow to start, the command's one line instead.
    assert.match(res.stderr, /crit: App: uncaught exception: RangeError: late bug\s+at |voice-hub: internal error .*: RangeError: late bug\n$/);
  });
});
