// The built bundle as a process: start-up, configuration precedence and errors, CLI commands,
// signals and durability across kill -9.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFileSync, lstatSync, mkdirSync, readFileSync, renameSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { call } from '../support/http.js';
import { BUNDLE, copyBundle, runBundle, spawnService } from '../support/service.js';
import { tmpDir } from '../support/tmp.js';
import { waitUntil } from '../support/wait.js';
import { loadSqlEngine, openDatabaseFile } from '../../src/store/database.js';
import { MIGRATIONS } from '../../src/store/migrations.js';

const register = (url: string, id: string) =>
  call(url, 'POST', '/api/device/register', { body: { deviceId: id, deviceName: id, deviceType: 'speaker' } });

async function adminTokenFor(dataDir: string): Promise<string> {
  const res = await runBundle(['token', 'admin', '--ttl', '1h', '--data-dir', dataDir]);
  assert.equal(res.code, 0, res.stderr);
  return res.stdout.trim();
}

describe('start-up', () => {
  it('logs its address and that the native uWS addon loaded', async () => {
    const svc = await spawnService(['--data-dir', tmpDir()]);
    assert.match(svc.output(), /uWebSockets\.js native addon loaded from .*uws_linux_x64_115\.node/);
    assert.match(svc.output(), /listening on http:\/\/127\.0\.0\.1:\d+/);
    svc.proc.kill('SIGTERM');
    assert.equal(await svc.exited, 0);
  });

  it('loads the addon it ships, whatever the environment names (VOICE_HUB_UWS_ADDON was an undocumented override)', async () => {
    const svc = await spawnService(['--data-dir', tmpDir()], { VOICE_HUB_UWS_ADDON: '/nonexistent/uws.node' });
    assert.match(svc.output(), /uWebSockets\.js native addon loaded from .*\/dist\/native\/uws_linux_x64_\d+\.node/);
    svc.proc.kill('SIGTERM');
    assert.equal(await svc.exited, 0);
  });

  it('warns about an environment variable of its sections that names no key (a typo in a drop-in), and starts', async () => {
    const svc = await spawnService(['--data-dir', tmpDir()], { Server__Prot: '80' });
    assert.match(svc.output(), /warn: App: environment variable Server__Prot names no configuration key and is ignored \(did you mean Server__Port\?\)/);
    svc.proc.kill('SIGTERM');
    assert.equal(await svc.exited, 0);
  });

  it('refuses to start when the native addon cannot load (no silent JS fallback)', async () => {
    const dir = tmpDir();
    const copy = copyBundle(dir);
    const { spawnSync } = await import('node:child_process');
    const res = spawnSync(process.execPath, [copy, '--port', '0', '--data-dir', path.join(dir, 'data')], { cwd: dir, encoding: 'utf8', timeout: 15_000, env: { PATH: process.env.PATH } });
    assert.equal(res.status, 1);
    assert.match(res.stderr, /native uWebSockets\.js addon \(uws_linux_x64_115\.node\) did not load; refusing to fall back/);
  });

  it('applies precedence file < env < flag, checked through a real request', async () => {
    const dir = tmpDir();
    const file = path.join(dir, 'appsettings.json');
    writeFileSync(file, JSON.stringify({ DeviceManagement: { MaxDevices: 1 } }));
    const count = async (args: string[], env: Record<string, string>): Promise<number> => {
      const svc = await spawnService(['--config', file, '--data-dir', tmpDir(), ...args], env);
      let n = 0;
      while (n < 10 && (await register(svc.url, `d${n}`)).status === 200) n++;
      svc.proc.kill('SIGTERM');
      await svc.exited;
      return n;
    };
    assert.equal(await count([], {}), 1, 'file');
    assert.equal(await count([], { DEVICEMANAGEMENT__MAXDEVICES: '2' }), 2, 'env beats file (case-insensitive)');
    assert.equal(await count(['--DeviceManagement.MaxDevices', '3'], { DeviceManagement__MaxDevices: '2' }), 3, 'flag beats env');
  });

  it('exits 78 with one line per bad value naming key and source', async () => {
    const res = await runBundle(['--data-dir', tmpDir(), '--port', '70000'], { VoiceService__EnableVoice: 'maybe' });
    assert.equal(res.code, 78);
    assert.match(res.stderr, /Server\.Port.*flag.*65535/);
    assert.match(res.stderr, /VoiceService\.EnableVoice: "maybe" from env VoiceService__EnableVoice is invalid: must be true or false/);
  });

  it('config check prints effective values with sources and never a secret', async () => {
    const res = await runBundle(['config', 'check', '--data-dir', tmpDir(), '--Mqtt.Password', 'hunter2-mqtt'], {
      VoiceService__ApiKey: 'upstream-secret-9',
      ApiKeys__0: 'device-key-7',
      Auth__SigningKey: 'a-signing-key-that-is-long-enough-123',
    });
    assert.equal(res.code, 0, res.stderr);
    for (const secret of ['hunter2-mqtt', 'upstream-secret-9', 'device-key-7', 'a-signing-key-that-is-long-enough-123']) {
      assert.ok(!res.stdout.includes(secret) && !res.stderr.includes(secret), `${secret} leaked`);
    }
    assert.match(res.stdout, /Mqtt\.Password = "\*\*\*"  \(flag\)/);
    assert.match(res.stdout, /VoiceService\.ApiKey = "\*\*\*"  \(env\)/);
    assert.match(res.stdout, /Server\.Port = 5000  \(file\)/);
    // Not a number and a number out of range are both the configuration's verdict (78), as from the file.
    const mistyped = await runBundle(['config', 'check', '--Server.Port', 'x']);
    assert.equal(mistyped.code, 78);
    assert.match(mistyped.stderr, /^ {2}Server\.Port: "x" from flag --Server\.Port is invalid: must be an integer from 0 to 65535$/m);
    const bad = await runBundle(['config', 'check', '--Server.Port', '70000']);
    assert.equal(bad.code, 78);
  });

  it('prints a helpful --help and --version', async () => {
    const help = await runBundle(['--help']);
    assert.equal(help.code, 0);
    for (const word of ['--config', '--port', '--data-dir', '--voice-server-url', 'token', 'config']) assert.ok(help.stdout.includes(word), word);
    const version = await runBundle(['--version']);
    assert.equal(version.code, 0);
    assert.match(version.stdout, /voice-hub \d+\.\d+\.\d+\nnode v20\.\d+\.\d+\nplatform linux-x64\nuWebSockets\.js native/);
  });

  it('each command\'s --help lists only the options that command reads', async () => {
    const echo = await runBundle(['echo-server', '--help']);
    assert.equal(echo.code, 0);
    assert.equal(echo.stdout.match(/--port/g)?.length, 1, echo.stdout);
    assert.match(echo.stdout, /--port +port \(0 = any free port\) +\[number\] \[default: 5050\]/);
    const simulate = await runBundle(['simulate', '--help']);
    assert.equal(simulate.code, 0);
    for (const word of ['--url', '--devices', '--seconds', '--protocol']) assert.ok(simulate.stdout.includes(word), word);
    for (const word of ['--data-dir', '--cert', '--config']) assert.ok(!simulate.stdout.includes(word), `simulate --help lists ${word}`);
    const token = await runBundle(['token', 'admin', '--help']);
    for (const word of ['--data-dir', '--config', '--ttl']) assert.ok(token.stdout.includes(word), word);
  });
});

describe('tokens from the command line', () => {
  it('token admin signs with the key generated in the data dir (mode 0600)', async () => {
    const dataDir = tmpDir();
    const svc = await spawnService(['--data-dir', dataDir]);
    assert.equal(statSync(path.join(dataDir, 'signing.key')).mode & 0o777, 0o600);
    const token = await adminTokenFor(dataDir);
    assert.equal((await call(svc.url, 'GET', '/api/device/list', { token })).status, 200);
    const foreign = await adminTokenFor(tmpDir());
    assert.equal((await call(svc.url, 'GET', '/api/device/list', { token: foreign })).status, 401);
    svc.proc.kill('SIGTERM');
    await svc.exited;
  });
});

describe('durability', () => {
  // A partial restore or a copied data directory without signing.key: every device's token fails from
  // then on, and the log said nothing of why.
  it('a signing key generated where devices are registered: a warning that says their tokens are refused', async () => {
    const dataDir = tmpDir();
    const first = await spawnService(['--data-dir', dataDir]);
    assert.match(first.output(), new RegExp(`info: .*generated a new signing key in ${path.join(dataDir, 'signing.key')}\n`));
    assert.equal((await register(first.url, 'kept')).status, 200);
    first.proc.kill('SIGTERM');
    assert.equal(await first.exited, 0);
    rmSync(path.join(dataDir, 'signing.key'));
    const again = await spawnService(['--data-dir', dataDir]);
    assert.match(again.output(), new RegExp(`warn: .*generated a new signing key in ${path.join(dataDir, 'signing.key')}, none was there: the tokens of the 1 registered device\\(s\\) were signed with another key and are refused until each registers again or gets a new token\n`));
    again.proc.kill('SIGTERM');
    assert.equal(await again.exited, 0);
    const third = await spawnService(['--data-dir', dataDir]);
    assert.doesNotMatch(third.output(), /signing key/, 'the key of the last start is used');
    third.proc.kill('SIGTERM');
    assert.equal(await third.exited, 0);
  });

  it('keeps an acknowledged registration after kill -9', async () => {
    const dataDir = tmpDir();
    const svc = await spawnService(['--data-dir', dataDir]);
    const res = await register(svc.url, 'survivor');
    assert.equal(res.status, 200);
    svc.proc.kill('SIGKILL');
    await svc.exited;
    const again = await spawnService(['--data-dir', dataDir]);
    const list = await call(again.url, 'GET', '/api/device/list', { token: await adminTokenFor(dataDir) });
    assert.deepEqual(list.json.devices.map((d: { id: string }) => d.id), ['survivor']);
    again.proc.kill('SIGTERM');
    assert.equal(await again.exited, 0);
  });

  it('flushes telemetry on SIGTERM and exits 0', async () => {
    const dataDir = tmpDir();
    const svc = await spawnService(['--data-dir', dataDir, '--Storage.FlushInterval', '01:00:00']);
    const reg = await register(svc.url, 'telemetry');
    const put = await call(svc.url, 'PUT', '/api/device/telemetry/status', { token: reg.json.deviceToken, body: { status: 'busy', batteryLevel: 42 } });
    assert.equal(put.status, 200);
    svc.proc.kill('SIGTERM');
    assert.equal(await svc.exited, 0);
    const again = await spawnService(['--data-dir', dataDir]);
    const list = await call(again.url, 'GET', '/api/device/list', { token: await adminTokenFor(dataDir) });
    assert.equal(list.json.devices[0].status, 'busy');
    assert.equal(list.json.devices[0].metrics.batteryLevel, 42);
    assert.equal(list.json.devices[0].lastSeen, put.json.lastSeen);
    again.proc.kill('SIGINT');
    assert.equal(await again.exited, 0);
  });

  // A foreground run gets SIGHUP when its SSH session drops: it used to die at once (exit 129), losing
  // the status updates answered within the last Storage.FlushInterval.
  it('takes SIGHUP like SIGTERM: drains, flushes the telemetry it acknowledged, exits 0', async () => {
    const dataDir = tmpDir();
    const svc = await spawnService(['--data-dir', dataDir, '--Storage.FlushInterval', '01:00:00']);
    const reg = await register(svc.url, 'hangup');
    const put = await call(svc.url, 'PUT', '/api/device/hangup/status', { token: reg.json.deviceToken, body: { status: 'busy', batteryLevel: 17 } });
    assert.equal(put.status, 200);
    svc.proc.kill('SIGHUP');
    assert.equal(await svc.exited, 0, svc.output());
    assert.match(svc.output(), /^\S+ info: App: SIGHUP received: draining and flushing$/m);
    const again = await spawnService(['--data-dir', dataDir]);
    const list = await call(again.url, 'GET', '/api/device/list', { token: await adminTokenFor(dataDir) });
    assert.equal(list.json.devices[0].status, 'busy');
    assert.equal(list.json.devices[0].metrics.batteryLevel, 17);
    assert.equal(list.json.devices[0].lastSeen, put.json.lastSeen);
    again.proc.kill('SIGTERM');
    assert.equal(await again.exited, 0);
  });

  it('on an IPv6 address the log names it as a URL does, in brackets, and it answers there', async () => {
    const proc = spawn(process.execPath, [BUNDLE, '--host', '::1', '--port', '0', '--data-dir', tmpDir(), '--Mqtt.BrokerAddress', ''], { stdio: ['ignore', 'ignore', 'pipe'] });
    let out = '';
    proc.stderr.on('data', (d) => (out += d));
    try {
      await waitUntil(() => /listening on http/.test(out), 'the listening line');
      const m = /info: App: listening on http:\/\/\[::1\]:(\d+)\n/.exec(out);
      assert.ok(m, out);
      assert.equal((await call(`http://[::1]:${m[1]}`, 'GET', '/api/device/list')).status, 401);
    } finally {
      proc.kill('SIGTERM');
      await new Promise((resolve) => proc.on('exit', resolve));
    }
  });

  // It exited 1, which the unit retries up to its start limit, where a restart meets the same file.
  it('a damaged signing key: one line naming it, exit 65 (not retried), from serve and token admin', async () => {
    const dataDir = tmpDir();
    mkdirSync(dataDir, { recursive: true });
    const key = path.join(dataDir, 'signing.key');
    writeFileSync(key, 'short\n');
    const damaged = `signing key file ${key} is damaged (too short); remove it to generate a new one (all issued tokens become invalid)`;
    const served = await runBundle(['--port', '0', '--data-dir', dataDir, '--Mqtt.BrokerAddress', '']);
    assert.equal(served.code, 65, served.stderr);
    assert.ok(served.stderr.includes(`start-up failed: ${damaged}`), served.stderr);
    const minted = await runBundle(['token', 'admin', '--data-dir', dataDir]);
    assert.deepEqual([minted.code, minted.stderr], [65, `voice-hub: ${damaged}\n`]);
  });

  it('a database from a newer voice-hub: one line naming the backup to go back to, exit 65 (not retried), file untouched', async () => {
    const dataDir = tmpDir();
    const svc = await spawnService(['--data-dir', dataDir, '--Mqtt.BrokerAddress', '']);
    svc.proc.kill('SIGTERM');
    assert.equal(await svc.exited, 0);
    const db = path.join(dataDir, 'voice-hub.db');
    copyFileSync(db, `${db}.v${MIGRATIONS.length}.bak`);
    const { db: sql } = await openDatabaseFile(await loadSqlEngine(), db);
    sql.exec(`PRAGMA user_version = ${MIGRATIONS.length + 1}`);
    writeFileSync(db, sql.export());
    sql.close();
    const hash = createHash('sha256').update(readFileSync(db)).digest('hex');
    const res = await runBundle(['--port', '0', '--data-dir', dataDir, '--Mqtt.BrokerAddress', '']);
    assert.equal(res.code, 65, res.stderr);
    assert.equal(res.stderr.split('\n').filter((l) => l.includes('start-up failed')).map((l) => l.replace(/^.*?start-up failed/, 'start-up failed')).join('\n'),
      `start-up failed: database file ${db} has schema version ${MIGRATIONS.length + 1}, but this voice-hub knows versions up to ${MIGRATIONS.length}; ` +
      `it was left untouched. Run the newer voice-hub that wrote it, or restore a backup made by this version (${db}.v${MIGRATIONS.length}.bak is the file ` +
      `as this version left it before the upgrade: copy it over ${db}; what changed since is lost).`);
    assert.equal(createHash('sha256').update(readFileSync(db)).digest('hex'), hash);
  });

  // A link was read through, then the first write renamed a file of its own over it: the target kept
  // the old data and the service went on in a fork. A directory failed with EISDIR and exit 1 (retried).
  it('a database path that is a symbolic link or a directory: one line naming it, exit 65 (not retried), left as found', async () => {
    const linked = tmpDir();
    const db = path.join(linked, 'voice-hub.db');
    const svc = await spawnService(['--data-dir', linked, '--Mqtt.BrokerAddress', '']);
    svc.proc.kill('SIGTERM');
    assert.equal(await svc.exited, 0);
    renameSync(db, path.join(linked, 'real.db'));
    symlinkSync('real.db', db);
    const hash = createHash('sha256').update(readFileSync(db)).digest('hex');
    const refused = (res: { stderr: string }): string[] => res.stderr.split('\n').filter((l) => l.includes('start-up failed')).map((l) => l.replace(/^.*?start-up failed/, 'start-up failed'));
    const link = await runBundle(['--port', '0', '--data-dir', linked, '--Mqtt.BrokerAddress', '']);
    assert.equal(link.code, 65, link.stderr);
    assert.deepEqual(refused(link), [
      `start-up failed: database file ${db} is a symbolic link: refused, it was left untouched. ` +
        'Put the database file itself there (move the file it points to in its place), or point Storage.DataDir at the folder that holds it.',
    ]);
    assert.ok(lstatSync(db).isSymbolicLink());
    assert.equal(createHash('sha256').update(readFileSync(db)).digest('hex'), hash);

    const dirDb = path.join(tmpDir(), 'voice-hub.db');
    mkdirSync(dirDb, { recursive: true });
    const dir = await runBundle(['--port', '0', '--data-dir', path.dirname(dirDb), '--Mqtt.BrokerAddress', '']);
    assert.equal(dir.code, 65, dir.stderr);
    assert.deepEqual(refused(dir), [`start-up failed: database file ${dirDb} is a directory: refused, it was left untouched. Move it away to start with an empty database.`]);
  });

  it('refuses a truncated database with a clear message and leaves it untouched', async () => {
    const dataDir = tmpDir();
    const svc = await spawnService(['--data-dir', dataDir]);
    for (let i = 0; i < 5; i++) assert.equal((await register(svc.url, `t${i}`)).status, 200);
    svc.proc.kill('SIGTERM');
    await svc.exited;
    const db = path.join(dataDir, 'voice-hub.db');
    const bytes = readFileSync(db);
    writeFileSync(db, bytes.subarray(0, Math.floor(bytes.length / 2) + 7));
    const hash = createHash('sha256').update(readFileSync(db)).digest('hex');
    const res = await runBundle(['--port', '0', '--data-dir', dataDir]);
    assert.equal(res.code, 65, 'EX_DATAERR: the unit does not restart it (RestartPreventExitStatus)');
    assert.match(res.stderr, /voice-hub\.db/);
    assert.match(res.stderr, /damaged|corrupt|malformed/i);
    assert.equal(createHash('sha256').update(readFileSync(db)).digest('hex'), hash);
    mkdirSync(path.join(dataDir, 'x'), { recursive: true });
  });
});
