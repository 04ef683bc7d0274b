// `config check` exits 78 (or 65, or 1) for what `serve` would refuse, with the same line: each case runs
// both with the same arguments and expects one answer from them, and the refused serve to leave nothing.
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { describe, it } from 'node:test';
import { BUNDLE, ROOT, runBundle, runProcess, spawnService } from '../support/service.js';
import { tmpDir } from '../support/tmp.js';

/** An empty configuration file: the checkout's own config/appsettings.json is not read. */
function emptyConfig(): string {
  const file = path.join(tmpDir(), 'empty.json');
  writeFileSync(file, '{}');
  return file;
}

/** `config check` and `serve` with the same arguments (serve with MQTT off). */
async function checkAndServe(args: string[], host = ['--Server.Host', '127.0.0.1', '--Server.Port', '0']): Promise<{ check: Awaited<ReturnType<typeof runBundle>>; serve: Awaited<ReturnType<typeof runBundle>> }> {
  const check = await runBundle(['config', 'check', ...args]);
  const serve = await runBundle(['serve', ...host, ...args, '--Mqtt.BrokerAddress', '']);
  return { check, serve };
}

describe('config check refuses the listen address serve refuses', () => {
  const unresolvable = (host: string): string =>
    `invalid configuration:\n  Server.Host: "${host}" does not resolve to an address (ENOTFOUND): set an address of this machine, or a name it resolves\n`;
  const notOurs = (port: number): string =>
    `voice-hub: cannot listen 10.254.254.1:${port}: address not available (EADDRNOTAVAIL); that address is not one of this machine's: choose another (--host)\n`;
  // Only an address met at the listen itself (port 0: no early port check, whose bind would load Node's
  // cluster module into every idle service) comes after the data directory was opened.
  const cases: Array<[host: string, port: number, code: number, stderr: string, early: boolean]> = [
    ['nonexistent.invalid', 18090, 78, unresolvable('nonexistent.invalid'), true],
    ['nonexistent.invalid', 0, 78, unresolvable('nonexistent.invalid'), true],
    ['999.1.1.1', 18090, 78, unresolvable('999.1.1.1'), true],
    ['999.1.1.1', 0, 78, unresolvable('999.1.1.1'), true],
    ['10.254.254.1', 18090, 1, notOurs(18090), true],
    ['10.254.254.1', 0, 1, notOurs(0), false],
  ];
  for (const [host, port, code, stderr, early] of cases) {
    it(`--Server.Host ${host} --Server.Port ${port}: exit ${code} from both, naming the cause${early ? '; serve creates nothing' : ''}`, async () => {
      const dataDir = path.join(tmpDir(), 'x', 'x');
      const { check, serve } = await checkAndServe(['--config', emptyConfig(), '--data-dir', dataDir, '--Server.Host', host, '--Server.Port', String(port)], []);
      assert.equal(check.code, code, check.stderr);
      assert.equal(check.stderr, stderr);
      assert.match(check.stdout, /^# configuration file: /, 'the configuration is printed before the refusal');
      assert.equal(serve.code, code, serve.stderr);
      assert.equal(serve.stderr.split('\n').filter((l) => !/^\S+ (info|dbug): /.test(l)).join('\n'), stderr);
      if (early) assert.equal(existsSync(path.dirname(dataDir)), false, 'the refused start made no data directory');
      else assert.doesNotMatch(serve.stderr, /stopped/, 'nothing had started');
    });
  }

  it('passes beside a service already listening on the configured port (it only checks the address)', async () => {
    const server = net.createServer();
    await new Promise<void>((resolve) => server.listen({ host: '127.0.0.1', port: 0 }, resolve));
    try {
      const port = (server.address() as net.AddressInfo).port;
      const res = await runBundle(['config', 'check', '--config', emptyConfig(), '--data-dir', tmpDir(), '--Server.Host', '127.0.0.1', '--Server.Port', String(port)]);
      assert.equal(res.code, 0, res.stderr);
      assert.equal(res.stderr, '');
    } finally {
      server.close();
    }
  });
});

describe('config check refuses the data files serve refuses (65), and serve refuses them before making any', () => {
  const key = (dir: string): string => path.join(dir, 'signing.key');
  const id = (dir: string): string => path.join(dir, 'instance-id');
  const cases: Array<[what: string, plant: (dir: string) => void, message: (dir: string) => string]> = [
    ['an empty signing.key', (dir) => writeFileSync(key(dir), ''),
      (dir) => `signing key file ${key(dir)} is damaged (too short); remove it to generate a new one (all issued tokens become invalid)`],
    ['a directory at signing.key', (dir) => mkdirSync(key(dir)), (dir) => `signing key file ${key(dir)} is not a regular file: refused`],
    ['an instance-id holding zz', (dir) => writeFileSync(id(dir), 'zz\n'),
      (dir) => `the hub instance id file ${id(dir)} is damaged (it must hold 12 hex digits); restore it from a backup, or remove it to generate a new id (Home Assistant then sees a new hub with new entities)`],
    ['a directory at instance-id', (dir) => mkdirSync(id(dir)),
      (dir) => `the hub instance id file ${id(dir)} is not a regular file: refused, it was left untouched; remove it to generate a new id (Home Assistant then sees a new hub with new entities)`],
  ];
  for (const [what, plant, message] of cases) {
    it(`${what}: exit 65 from both with its line; serve creates nothing and logs no stop`, async () => {
      const dir = tmpDir();
      plant(dir);
      const planted = readdirSync(dir);
      const { check, serve } = await checkAndServe(['--config', emptyConfig(), '--data-dir', dir]);
      assert.equal(check.code, 65, check.stderr);
      assert.equal(check.stderr, `voice-hub: ${message(dir)}\n`);
      assert.equal(serve.code, 65, serve.stderr);
      assert.equal(serve.stderr.trimEnd().split('\n').at(-1), `start-up failed: ${message(dir)}`);
      assert.doesNotMatch(serve.stderr, /stopped/, 'nothing had started');
      assert.deepEqual(readdirSync(dir), planted, 'no database, key, id or lock left beside it');
    });
  }
});

describe('a data directory behind a loop of symbolic links: both name the folder that loops (exit 1)', () => {
  for (const below of ['', 'sub']) {
    it(`--data-dir ${below ? 'a folder below the loop' : 'the loop itself'}`, async () => {
      const root = tmpDir();
      const loop = path.join(root, 'loop1');
      symlinkSync('loop2', loop);
      symlinkSync('loop1', path.join(root, 'loop2'));
      const dataDir = path.join(loop, below);
      const cause = `${loop} is a symbolic link that leads round in a loop (too many symbolic links, ELOOP); choose another folder (--data-dir, Storage.DataDir)`;
      const { check, serve } = await checkAndServe(['--config', emptyConfig(), '--data-dir', dataDir]);
      assert.equal(check.code, 1, check.stderr);
      assert.equal(check.stderr, `voice-hub config: cannot read the data directory ${dataDir}: ${cause}\n`);
      assert.equal(serve.code, 1, serve.stderr);
      assert.equal(serve.stderr.trimEnd().split('\n').at(-1), `start-up failed: cannot take the data directory ${dataDir}: ${cause}`);
    });
  }
});

describe('the default configuration file: a broken one is reported, not passed over for the defaults', () => {
  /** Runs the bundle without --config in a folder of its own, with `config/appsettings.json` made by `plant`. */
  async function inFolder(plant: (file: string) => void, args: string[]) {
    const cwd = tmpDir();
    mkdirSync(path.join(cwd, 'config'));
    const file = path.join(cwd, 'config', 'appsettings.json');
    plant(file);
    const run = (command: string[]) => runProcess(process.execPath, [BUNDLE, ...command, '--data-dir', path.join(cwd, 'data'), ...args], { cwd, env: { PATH: process.env.PATH ?? '', HOME: '/tmp' } });
    return { file, check: await run(['config', 'check']), serve: await run(['serve', '--Server.Host', '127.0.0.1', '--Server.Port', '0', '--Mqtt.BrokerAddress', '']) };
  }
  const cases: Array<[what: string, plant: (file: string) => void, code: number, line: (file: string) => string]> = [
    ['a dangling link', (file) => symlinkSync('/nonexistent', file), 78,
      (file) => `invalid configuration:\n  ${file}: cannot read the configuration file: it is a symbolic link to /nonexistent, which does not exist\n`],
    ['a link to itself', (file) => symlinkSync('appsettings.json', file), 1,
      (file) => `voice-hub: cannot open ${file}: too many symbolic links encountered (ELOOP); a symbolic link on that path leads back to itself or through too many others: fix the link, or give the path it should lead to\n`],
  ];
  for (const [what, plant, code, line] of cases) {
    it(`${what}: exit ${code} from config check and serve, naming it; nothing is started`, async () => {
      const { file, check, serve } = await inFolder(plant, []);
      assert.equal(check.code, code, check.stdout + check.stderr);
      assert.equal(check.stderr, line(file));
      assert.equal(check.stdout, '');
      assert.equal(serve.code, code, serve.stderr);
      assert.equal(serve.stderr, line(file));
    });
  }

  it('serve names the configuration file it read in its start-up log', async () => {
    const svc = await spawnService(['--data-dir', tmpDir(), '--Mqtt.BrokerAddress', '']);
    assert.match(svc.output(), new RegExp(`^\\S+ info: App: configuration file: ${path.join(ROOT, 'config', 'appsettings.json').replace(/[.]/g, '\\.')}$`, 'm'));
    svc.proc.kill('SIGTERM');
    assert.equal(await svc.exited, 0);
    const config = emptyConfig();
    const other = await spawnService(['--config', config, '--data-dir', tmpDir(), '--Mqtt.BrokerAddress', '']);
    assert.ok(other.output().includes(` info: App: configuration file: ${config}\n`), other.output());
    other.proc.kill('SIGTERM');
    assert.equal(await other.exited, 0);
  });
});
