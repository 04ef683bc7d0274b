// An amd64 .deb the way users get it: installed with dpkg into a fresh root of the Debian release it is
// for (debootstrap, cached in .cache/debian-root/) in which systemd runs as PID 1, with the unit exactly
// as shipped. The steps run in order and print what they saw, so the log shows unit state, /health, restart counts,
// stop status and the upgrade. The root has its own network namespace: port 5000 is its own, and the
// echo voice server (a copy of the executable outside the package) answers the health check's upstream.
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it, type TestContext } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { port80Commands, readmeInstallCommands } from '../support/docs.js';
import { ROOT } from '../support/service.js';
import { tmpDir } from '../support/tmp.js';
import { waitUntil } from '../support/wait.js';
import { BootedRoot, type Result } from './booted-root.js';
import { freshDebianRoot } from './debian-root.js';
import { TARGETS } from '../../scripts/sea-runtime.mjs';
import { isCodeCacheFile } from '../../src/runtime/code-cache.js';
import { NODE_OPTIONS_TEXT } from '../../src/runtime/node-options.mjs';

const RELEASE = (JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;
const UNIT = 'voice-hub.service';
const PROPS = ['ActiveState', 'SubState', 'MainPID', 'NRestarts', 'Result', 'ExecMainStatus'];
/** The unit's own TimeoutStopSec: `systemctl stop` must be done well within it. */
const STOP_TIMEOUT_S = 20;
const ECHO_UNIT = `[Unit]
Description=echo voice server for the test (the configuration's VoiceService.ServerUrl)
[Service]
ExecStart=/opt/echo/voice-hub echo-server --port 5050
Environment=CACHE_DIRECTORY=/var/cache/voice-echo
[Install]
WantedBy=multi-user.target
`;
/** Test-only: a short watchdog so that the hung-loop check takes seconds, and no core of the abort. */
const WATCHDOG_DROP_IN = '[Service]\nWatchdogSec=3s\nLimitCORE=0\n';

/**
 * The package of build `key` (scripts/sea-runtime.mjs), installed in a Debian `suite` root; with
 * `fromLegacy`, last of all installed over that legacy build's package, as a user moving to it does.
 */
export function bootedRootSuite(suite: string, key: string, fromLegacy?: string): void {
  const target = TARGETS[key];
  assert.ok(target && target.debArch === 'amd64', `${key}: an amd64 build`);
  // The package's own version: the legacy builds carry build-deb.mjs' `~legacy`.
  const suffix = target.legacy ? '~legacy' : '';
  const VERSION = `${RELEASE}${suffix}`;
  const UPGRADE = `${RELEASE}+1${suffix}`;
  /** An earlier version of the package whose conffile was the whole configuration (made in before()). */
  const CONFFILE_ERA = `${RELEASE}~full${suffix}`;
  // Bounded for a first run on a fresh machine under a parallel suite: debootstrap, three packages, the steps.
  describe(`the .deb of voice-hub-linux-${key} installed and booted under systemd in Debian ${suite}`, { timeout: 600_000 }, () => {
    let booted: BootedRoot;
    /** The root's folder, removed once systemd in it has ended: with its packages it holds about 800 MB. */
    let rootDir: string | undefined;
    /** What the set-up saw, printed by the first test (a suite hook has no diagnostics). */
    const setup: string[] = [];
    const debs = tmpDir();
    const deb = (version: string): string => `voice-hub_${version}_amd64.deb`;

    const health = (port = 5000): { line: string; status: number; body: { status?: string; entries?: Record<string, { status: string }> } } => {
      const res = booted.run(['curl', '-sS', '-i', '--max-time', '15', `http://localhost:${port}/health`], { timeoutMs: 20_000 });
      assert.equal(res.status, 0, `curl /health: exit ${res.status} ${res.stderr}`);
      const [head = '', body = ''] = res.stdout.split(/\r\n\r\n/);
      const line = head.split('\r\n')[0] ?? '';
      return { line, status: Number(line.split(' ')[1]), body: JSON.parse(body) };
    };
    const summary = (h: ReturnType<typeof health>): string =>
      `${h.line}; ${h.body.status} (${Object.entries(h.body.entries ?? {}).map(([k, v]) => `${k} ${v.status}`).join(', ')})`;
    const journal = (): string => booted.run(['journalctl', '-b', '-u', UNIT, '--no-pager', '-o', 'short-monotonic']).stdout;

    before(async () => {
      assert.equal(process.getuid?.(), 0, 'needs root: debootstrap, namespaces, mounts');
      const exe = path.join(ROOT, `dist/voice-hub-linux-${key}`);
      // The upgrade as a later release: one whose defaults changed (as nearly every release adds or
      // changes a key in config/appsettings.json), which dpkg must not turn into a conffile question.
      const defaults = JSON.parse(readFileSync(path.join(ROOT, 'config/appsettings.json'), 'utf8')) as { DeviceManagement: { MaxDevices: number } };
      defaults.DeviceManagement.MaxDevices += 1;
      writeFileSync(path.join(debs, 'later-defaults.json'), JSON.stringify(defaults, null, 2));
      for (const version of [RELEASE, `${RELEASE}+1`]) {
        const later = ['--version', version, '--defaults', path.join(debs, 'later-defaults.json')];
        const args = [path.join(ROOT, 'packaging/build-deb.mjs'), '--no-lintian', '--compression', 'none', '--out', debs, ...(version === RELEASE ? [] : later), key];
        execFileSync(process.execPath, args, { stdio: ['ignore', 'ignore', 'inherit'], timeout: 240_000 });
      }
      if (fromLegacy) {
        const args = [path.join(ROOT, 'packaging/build-deb.mjs'), '--no-lintian', '--compression', 'none', '--out', debs, fromLegacy];
        execFileSync(process.execPath, args, { stdio: ['ignore', 'ignore', 'inherit'], timeout: 240_000 });
      }
      // A package as released up to 0.2.0: the conffile was the whole configuration (every key), no preinst.
      const unpacked = path.join(debs, 'conffile-era');
      execFileSync('dpkg-deb', ['-R', path.join(debs, deb(VERSION)), unpacked]);
      copyFileSync(path.join(unpacked, 'usr/share/voice-hub/appsettings.json'), path.join(unpacked, 'etc/voice-hub/appsettings.json'));
      rmSync(path.join(unpacked, 'DEBIAN/preinst'));
      const control = path.join(unpacked, 'DEBIAN/control');
      writeFileSync(control, readFileSync(control, 'utf8').replace(/^Version: .*$/m, `Version: ${CONFFILE_ERA}`));
      execFileSync('dpkg-deb', ['--root-owner-group', '-Znone', '--build', unpacked, path.join(debs, deb(CONFFILE_ERA))], { stdio: 'ignore' });
      rmSync(unpacked, { recursive: true, force: true });
      const fresh = freshDebianRoot(suite);
      rootDir = fresh.root;
      setup.push(`root: ${fresh.how}`);
      // Moved, not copied: each uncompressed package is about 100 MB.
      for (const version of [VERSION, UPGRADE, CONFFILE_ERA, ...(fromLegacy ? [`${RELEASE}~legacy`] : [])]) renameSync(path.join(debs, deb(version)), path.join(fresh.root, 'root', deb(version)));
      mkdirSync(path.join(fresh.root, 'opt/echo'));
      copyFileSync(exe, path.join(fresh.root, 'opt/echo/voice-hub'));
      writeFileSync(path.join(fresh.root, 'etc/systemd/system/voice-echo.service'), ECHO_UNIT);
      execFileSync('ln', ['-s', '/etc/systemd/system/voice-echo.service', path.join(fresh.root, 'etc/systemd/system/multi-user.target.wants/voice-echo.service')]);
      const boot = await BootedRoot.boot(fresh.root);
      booted = boot.booted;
      setup.push(`boot: systemd ${booted.sh('systemctl --version').split('\n')[0]?.split(' ')[1]} as PID 1: ${boot.state}`);
      assert.equal(boot.state, 'running', booted.run(['systemctl', '--failed', '--no-pager']).stdout);
    });

    after(async () => {
      await booted?.stop();
      if (rootDir) rmSync(rootDir, { recursive: true, force: true });
    });

    it('dpkg -i installs, enables and starts it; the start returns once it answers /health', (t: TestContext) => {
      for (const line of setup) t.diagnostic(line);
      const install = booted.run(['dpkg', '-i', `/root/${deb(VERSION)}`], { timeoutMs: 120_000 });
      assert.equal(install.status, 0, install.stdout + install.stderr);
      // A start that succeeds says nothing (the message of a failed one: a later step).
      assert.doesNotMatch(install.stdout + install.stderr, /did not start/);
      // No waiting here: with Type=notify the postinst's start returns when the service listens.
      const h = health();
      t.diagnostic(`dpkg -i ${deb(VERSION)}: exit 0 in ${install.ms} ms; /health right after: ${summary(h)}`);
      assert.equal(h.status, 200);
      assert.equal(h.body.entries?.database?.status, 'Healthy');
      assert.equal(h.body.entries?.['voice-service']?.status, 'Healthy');
      const p = booted.show(UNIT, [...PROPS, 'UnitFileState', 'Type', 'WatchdogUSec']);
      t.diagnostic(`unit: ${p.ActiveState} (${p.SubState}), ${p.UnitFileState}, Type=${p.Type}, WatchdogUSec=${p.WatchdogUSec}, MainPID ${p.MainPID}`);
      assert.deepEqual([p.ActiveState, p.SubState, p.UnitFileState, p.Type, p.WatchdogUSec], ['active', 'running', 'enabled', 'notify', '30s']);
      // The hardened unit lets it open the system libopus (the package recommends libopus0; this root has it).
      assert.match(journal(), /Opus decoding: libopus 1\.[\d.]+ \(system library, (inline on the event loop|on up to \d+ decoder threads?)\)/);
      assert.doesNotMatch(journal(), /Opus: .* cannot be used/);
    });

    it('runs with the hardening as shipped: no drop-in, and PrivateUsers= really in force', (t: TestContext) => {
      const p = booted.show(UNIT, ['DropInPaths', 'PrivateUsers', 'User', 'MainPID']);
      assert.equal(p.DropInPaths, '');
      assert.deepEqual([p.PrivateUsers, p.User], ['yes', 'voice-hub']);
      // A private user namespace maps only root and the service user, not the whole uid range.
      const map = booted.sh(`cat /proc/${p.MainPID}/uid_map`).trim().split('\n').map((l) => l.trim().split(/\s+/).join(' '));
      t.diagnostic(`hardening: no directive relaxed; uid_map of the service: ${map.join(' | ')}`);
      assert.notDeepEqual(map, ['0 0 4294967295']);
      const uid = booted.sh('id -u voice-hub').trim();
      assert.ok(map.includes(`${uid} ${uid} 1`), map.join('\n'));
      // The unit's environment reached it: Node's options (V8's helper threads by the core count).
      const environ = booted.sh(`tr '\\0' '\\n' < /proc/${p.MainPID}/environ`).split('\n');
      assert.ok(environ.includes(`NODE_OPTIONS=${NODE_OPTIONS_TEXT}`), environ.join('\n'));
    });

    it("writes the program's code cache into its CacheDirectory, as the service user, without a word in the journal", async (t: TestContext) => {
      const dir = path.join(booted.root, 'var/cache/voice-hub');
      const cacheFile = (): string | undefined => (existsSync(dir) ? readdirSync(dir).find(isCodeCacheFile) : undefined);
      await waitUntil(() => cacheFile() !== undefined, `a code cache in ${dir}`, 30_000, 200);
      const st = statSync(path.join(dir, cacheFile()!));
      t.diagnostic(`code cache: /var/cache/voice-hub/${cacheFile()}, ${st.size} bytes`);
      assert.deepEqual([st.uid, st.mode & 0o777], [Number(booted.sh('id -u voice-hub').trim()), 0o600]);
      assert.doesNotMatch(journal(), /code cache/);
    });

    it('PrivateUsers= needs a real root, not a chroot: why the harness uses pivot_root', (t: TestContext) => {
      // The same root entered with chroot: the kernel refuses the new user namespace PrivateUsers= makes.
      const chrooted = spawnSync('unshare', ['--mount', '--propagation', 'private', 'chroot', booted.root, 'unshare', '--user', 'true'], { encoding: 'utf8', timeout: 30_000 });
      const pivoted = booted.run(['unshare', '--user', 'true']);
      t.diagnostic(`new user namespace under chroot: exit ${chrooted.status} (${chrooted.stderr.trim()}); in the pivot_root-ed root: exit ${pivoted.status}`);
      assert.equal(chrooted.status, 1);
      assert.match(chrooted.stderr, /Operation not permitted/);
      assert.equal(pivoted.status, 0, pivoted.stderr);
    });

    it('kill -9 of the main process is followed by a restart', async (t: TestContext) => {
      const before = booted.show(UNIT, PROPS);
      booted.signal(before.MainPID ?? '', 'KILL');
      const p = await booted.waitFor(UNIT, PROPS, (q) => q.NRestarts === '1' && q.ActiveState === 'active' && q.SubState === 'running', 30_000);
      const h = health();
      t.diagnostic(`kill -9 ${before.MainPID}: NRestarts=${p.NRestarts}, ${p.ActiveState} (${p.SubState}), new MainPID ${p.MainPID}; /health: ${h.line}`);
      assert.deepEqual([p.NRestarts, p.ActiveState, p.SubState], ['1', 'active', 'running'], journal());
      assert.notEqual(p.MainPID, before.MainPID);
      assert.equal(h.status, 200);
    });

    it('a hung event loop stops the watchdog pings: systemd aborts and restarts it', async (t: TestContext) => {
      const dropIns = path.join(booted.root, `etc/systemd/system/${UNIT}.d`);
      mkdirSync(dropIns);
      writeFileSync(path.join(dropIns, 'test-watchdog.conf'), WATCHDOG_DROP_IN);
      booted.sh(`systemctl daemon-reload && systemctl restart ${UNIT}`);
      const before = booted.show(UNIT, PROPS);
      // Long enough for several pings of a live loop: the watchdog must not fire while the loop runs.
      await sleep(5_000);
      assert.equal(booted.show(UNIT, PROPS).MainPID, before.MainPID, journal());
      // SIGSTOP: the process is there, its loop runs no more.
      booted.signal(before.MainPID ?? '', 'STOP');
      const p = await booted.waitFor(UNIT, PROPS, (q) => Number(q.NRestarts) === Number(before.NRestarts) + 1 && q.SubState === 'running', 30_000);
      const timeout = journal().split('\n').filter((l) => /watchdog timeout/i.test(l));
      t.diagnostic(`SIGSTOP ${before.MainPID} with WatchdogSec=3s (test drop-in): "${timeout.at(-1)?.replace(/^\S+\s+\S+\s+/, '')}", NRestarts=${p.NRestarts}, new MainPID ${p.MainPID}`);
      assert.equal(Number(p.NRestarts), Number(before.NRestarts) + 1, journal());
      assert.notEqual(p.MainPID, before.MainPID);
      assert.ok(timeout.length > 0, journal());
      booted.sh(`rm -r /etc/systemd/system/${UNIT}.d && systemctl daemon-reload`);
    });

    it('systemctl stop returns 0 within the timeout, the service exiting 0 by itself', (t: TestContext) => {
      const logged = journal().length;
      const stop = booted.run(['systemctl', 'stop', UNIT], { timeoutMs: (STOP_TIMEOUT_S + 10) * 1000 });
      const p = booted.show(UNIT, [...PROPS, 'ExecMainCode']);
      t.diagnostic(`systemctl stop: exit ${stop.status} in ${stop.ms} ms; ${p.ActiveState}, Result=${p.Result}, ExecMainStatus=${p.ExecMainStatus}`);
      assert.equal(stop.status, 0, stop.stderr);
      assert.ok(stop.ms < STOP_TIMEOUT_S * 1000, `${stop.ms} ms`);
      // ExecMainCode 1 is CLD_EXITED: it exited, it was not killed.
      assert.deepEqual([p.ActiveState, p.Result, p.ExecMainCode, p.ExecMainStatus], ['inactive', 'success', '1', '0'], journal());
      assert.match(journal().slice(logged), /SIGTERM received: draining and flushing/);
    });

    it('systemctl start returns once it answers', (t: TestContext) => {
      const start = booted.run(['systemctl', 'start', UNIT], { timeoutMs: 120_000 });
      assert.equal(start.status, 0, start.stderr);
      const h = health();
      t.diagnostic(`systemctl start: exit 0 in ${start.ms} ms; /health right after: ${h.line}`);
      assert.equal(h.status, 200);
    });

    it("docs/operations.md's port-80 commands work as written: the drop-in the package ships serves port 80", (t: TestContext) => {
      const commands = port80Commands();
      assert.ok(commands.some((c) => c.includes('/usr/share/voice-hub/port-80.conf')), commands.join('\n'));
      for (const command of commands) {
        const res = booted.run(['sh', '-c', command.replace(/(^|&& )sudo /g, '$1')], { timeoutMs: 120_000 });
        t.diagnostic(`$ ${command}: exit ${res.status}`);
        assert.equal(res.status, 0, res.stdout + res.stderr);
      }
      const h = health(80);
      const capabilities = booted.show(UNIT, ['AmbientCapabilities']).AmbientCapabilities;
      t.diagnostic(`/health on port 80: ${h.line}; AmbientCapabilities=${capabilities}`);
      assert.equal(h.status, 200);
      assert.equal(capabilities, 'cap_net_bind_service');
      // Back to the unit as shipped, for the steps after this one.
      const undo = booted.run(['sh', '-c', `rm /etc/systemd/system/${UNIT}.d/port-80.conf && systemctl daemon-reload && systemctl restart ${UNIT}`], { timeoutMs: 120_000 });
      assert.equal(undo.status, 0, undo.stdout + undo.stderr);
      assert.equal(health().status, 200);
    });

    it('dpkg -i of a newer version keeps the database, the signing key and an edited configuration', (t: TestContext) => {
      const register = JSON.parse(
        booted.sh(`curl -sS --fail-with-body --max-time 15 -H 'Content-Type: application/json' -d '{"deviceId":"pi-kitchen","deviceName":"Kitchen","deviceType":"speaker"}' http://localhost:5000/api/device/register`),
      ) as { deviceToken: string };
      const key = (): string => booted.sh('sha256sum /var/lib/voice-hub/signing.key').split(' ')[0] ?? '';
      const keyBefore = key();
      // The admin's edit: another port. dpkg must keep it (a conffile) and the service must use it.
      booted.sh(`sed -E -i 's/"Port": 5000(,?)$/"Port": 5080\\1/' /etc/voice-hub/appsettings.json`);
      const edited = booted.sh('cat /etc/voice-hub/appsettings.json');
      assert.match(edited, /"Port": 5080,?$/m);

      const reference = (): string => booted.sh('grep -o \'"MaxDevices": [0-9]*\' /usr/share/voice-hub/appsettings.json').trim();
      const referenceBefore = reference();

      // With DEBIAN_FRONTEND=noninteractive and nothing on stdin, as unattended upgrades run it: a
      // conffile question would fail it ("end of file on stdin at conffile prompt").
      const upgrade = booted.run(['dpkg', '-i', `/root/${deb(UPGRADE)}`], { timeoutMs: 120_000 });
      assert.equal(upgrade.status, 0, upgrade.stdout + upgrade.stderr);
      assert.doesNotMatch(upgrade.stdout + upgrade.stderr, /did not start|conffile|Configuration file/);
      // The new defaults arrived in the reference; the conffile is the admin's, and no .dpkg-new beside it.
      t.diagnostic(`reference /usr/share/voice-hub/appsettings.json: ${referenceBefore} -> ${reference()}`);
      assert.notEqual(reference(), referenceBefore);
      assert.equal(booted.sh('ls -A /etc/voice-hub').trim(), 'appsettings.json');
      const installed = booted.sh("dpkg-query -W -f '${Version}' voice-hub");
      const h = health(5080);
      const status = booted.run(['curl', '-sS', '-o', '/dev/null', '-w', '%{http_code}', '--max-time', '15', '-X', 'PUT', '-H', 'Content-Type: application/json',
        '-H', `Authorization: Bearer ${register.deviceToken}`, '-d', '{"status":"online","batteryLevel":80}', 'http://localhost:5080/api/device/pi-kitchen/status']).stdout;
      const config = booted.sh('stat -c "%a %U:%G" /etc/voice-hub/appsettings.json').trim();
      t.diagnostic(`upgrade ${VERSION} -> ${installed}: dpkg exit 0 in ${upgrade.ms} ms; configuration kept (port 5080, ${config}); /health on 5080 right after: ${h.line}; signing key ${key() === keyBefore ? 'kept' : 'CHANGED'}; device token from before: PUT status ${status}`);
      assert.equal(installed, UPGRADE);
      assert.equal(booted.sh('cat /etc/voice-hub/appsettings.json'), edited);
      assert.equal(config, '640 root:voice-hub');
      assert.equal(h.status, 200);
      assert.equal(key(), keyBefore);
      // 200: the token still verifies (same key) and the device is still in the database.
      assert.equal(status, '200');
      assert.equal(booted.show(UNIT, ['ActiveState']).ActiveState, 'active');
    });

    it('dpkg -i with a configuration the service refuses: exit 0, the package installed, and it says the service did not start and why', (t: TestContext) => {
      const file = '/etc/voice-hub/appsettings.json';
      const good = booted.sh(`cat ${file}`);
      // Out of range: the service exits 78 (invalid configuration), which the unit does not retry.
      booted.sh(`sed -E -i 's/"Port": 5080(,?)$/"Port": 99999\\1/' ${file}`);
      assert.match(booted.sh(`cat ${file}`), /"Port": 99999,?$/m);
      // The configuration restored and the service started whatever the checks found: the later steps need it.
      let start: Result;
      try {
        // The installed version again: postinst configure with a version, so a restart.
        const reinstall = booted.run(['dpkg', '-i', `/root/${deb(UPGRADE)}`], { timeoutMs: 120_000 });
        const status = booted.sh("dpkg-query -W -f '${db:Status-Abbrev}${Version}' voice-hub");
        const p = booted.show(UNIT, PROPS);
        t.diagnostic(`dpkg -i ${deb(UPGRADE)} again with Server.Port 99999: exit ${reinstall.status} in ${reinstall.ms} ms; dpkg-query: ${status}; unit: ${p.ActiveState}, Result=${p.Result}, ExecMainStatus=${p.ExecMainStatus}, NRestarts=${p.NRestarts}; its stderr:`);
        for (const line of reinstall.stderr.trimEnd().split('\n')) t.diagnostic(`  | ${line}`);
        assert.equal(reinstall.status, 0, reinstall.stdout + reinstall.stderr);
        // Configured, not half-configured: apt is not blocked.
        assert.equal(status, `ii ${UPGRADE}`);
        // Failed for good, not restarting: 78 is not retried.
        assert.deepEqual([p.ActiveState, p.SubState, p.Result, p.ExecMainStatus], ['failed', 'failed', 'exit-code', '78'], journal());
        // Before the message only deb-systemd-invoke's own line, whose line number varies with its version.
        const at = reinstall.stderr.indexOf('voice-hub.service did not start');
        assert.ok(at >= 0, `no word of the failed start in dpkg's stderr: ${JSON.stringify(reinstall.stderr)}`);
        assert.match(reinstall.stderr.slice(0, at), /^(Could not execute systemctl:.* at \/usr\/bin\/deb-systemd-invoke line \d+\.\n)?$/);
        assert.equal(
          reinstall.stderr.slice(at),
          [
            'voice-hub.service did not start (exit status 78): the package is installed, the service is not running.',
            'Its last lines in the journal:',
            '  invalid configuration:',
            `    Server.Port: 99999 from file ${file} is invalid: must be an integer from 0 to 65535`,
            'To look further: systemctl status voice-hub; journalctl -u voice-hub',
            'Once fixed: systemctl restart voice-hub',
            '',
          ].join('\n'),
        );
        assert.doesNotMatch(reinstall.stdout, /did not start/);
      } finally {
        booted.sh(`sed -E -i 's/"Port": 99999(,?)$/"Port": 5080\\1/' ${file}`);
        start = booted.run(['systemctl', 'start', UNIT], { timeoutMs: 120_000 });
      }
      assert.equal(booted.sh(`cat ${file}`), good);
      assert.equal(start.status, 0, start.stderr);
      const h = health(5080);
      t.diagnostic(`configuration restored (port 5080): systemctl start exit 0 in ${start.ms} ms; /health right after: ${h.line}`);
      assert.equal(h.status, 200);
    });

    it('apt remove keeps configuration and data; apt purge removes them, the unit and its state, and keeps the user', (t: TestContext) => {
      const remove = booted.run(['apt-get', 'remove', '-y', 'voice-hub'], { timeoutMs: 120_000 });
      assert.equal(remove.status, 0, remove.stdout + remove.stderr);
      const exists = (p: string): boolean => booted.run(['test', '-e', p]).status === 0;
      assert.equal(exists('/usr/bin/voice-hub'), false);
      assert.equal(booted.show(UNIT, ['ActiveState']).ActiveState, 'inactive');
      for (const kept of ['/etc/voice-hub/appsettings.json', '/var/lib/voice-hub/voice-hub.db', '/var/lib/voice-hub/signing.key']) assert.ok(exists(kept), kept);

      const purge = booted.run(['apt-get', 'purge', '-y', 'voice-hub'], { timeoutMs: 120_000 });
      assert.equal(purge.status, 0, purge.stdout + purge.stderr);
      const gone = ['/etc/voice-hub', '/var/lib/voice-hub', '/var/cache/voice-hub', '/lib/systemd/system/voice-hub.service', '/etc/systemd/system/multi-user.target.wants/voice-hub.service'];
      const left = gone.filter(exists);
      const user = booted.run(['getent', 'passwd', 'voice-hub']).stdout.trim();
      const state = booted.run(['dpkg-query', '-W', '-f', '${db:Status-Status}', 'voice-hub']);
      const statoverride = booted.run(['dpkg-statoverride', '--list', '/etc/voice-hub/appsettings.json']);
      t.diagnostic(`apt remove: exit 0, configuration and data kept; apt purge: exit 0, left of ${gone.length} paths: ${left.length ? left.join(', ') : 'none'}; user kept: ${user}`);
      assert.deepEqual(left, []);
      assert.match(user, /^voice-hub:x:\d+:\d+::\/var\/lib\/voice-hub:\/usr\/sbin\/nologin$/);
      assert.notEqual(state.stdout, 'installed');
      assert.equal(statoverride.status, 1, statoverride.stdout);
      assert.equal(booted.show(UNIT, ['LoadState']).LoadState, 'not-found');
    });

    it("the README's three install commands work as written (with this machine's architecture)", (t: TestContext) => {
      const commands = readmeInstallCommands();
      assert.deepEqual(commands.map((c) => c.split(' ').slice(0, 2).join(' ')), ['sudo apt', 'systemctl status', 'curl http://localhost:5000/health']);
      for (const command of commands) {
        // As root there is no sudo; this machine is amd64, the README's example a 64-bit Pi.
        const local = command.replace(/^sudo /, '').replace(/voice-hub_[^ ]*_arm64\.deb/, deb(VERSION));
        const res = booted.run(['sh', '-c', `cd /root && ${local}`], { timeoutMs: 120_000 });
        t.diagnostic(`$ ${local}: exit ${res.status}${command.startsWith('curl') ? `: ${res.stdout.slice(0, 60)}...` : ''}`);
        assert.equal(res.status, 0, res.stdout + res.stderr);
        if (command.startsWith('systemctl')) assert.match(res.stdout, /Active: active \(running\)/);
        if (command.startsWith('curl')) assert.match(JSON.parse(res.stdout).status, /^(Healthy|Degraded)$/);
      }
    });
    // Two set-ups an admin may have made before installing: the user made by hand with `adduser --system`
    // (in nogroup, no voice-hub group: the postinst's statoverride failed, the package stayed
    // half-configured), and the data directory a mount point (a USB disk sparing the SD card: the purge's
    // rm -rf failed on it, and so did every purge after).
    it('installs over a user made beforehand without its group, and purges a data directory that is a mount point', (t: TestContext) => {
      const ok = (command: string): string => {
        const res = booted.run(['sh', '-c', command], { timeoutMs: 120_000 });
        assert.equal(res.status, 0, `${command}:\n${res.stdout}${res.stderr}`);
        return res.stdout.trim();
      };
      ok('apt-get purge -y voice-hub && userdel voice-hub && (groupdel voice-hub || true)');
      ok('adduser --quiet --system --home /var/lib/voice-hub --no-create-home voice-hub');
      assert.equal(ok('id -gn voice-hub'), 'nogroup');
      ok('mkdir -p /var/lib/voice-hub && mount -t tmpfs -o size=16m tmpfs /var/lib/voice-hub');
      try {
        const install = booted.run(['dpkg', '-i', `/root/${deb(VERSION)}`], { timeoutMs: 120_000 });
        assert.equal(install.status, 0, install.stdout + install.stderr);
        const h = health();
        const groups = ok('id -Gn voice-hub').split(' ');
        const config = ok('stat -c %U:%G:%a /etc/voice-hub/appsettings.json');
        t.diagnostic(`user made beforehand (nogroup): dpkg -i exit 0; /health ${h.line}; groups ${groups.join(',')}; configuration ${config}`);
        assert.equal(h.status, 200);
        assert.deepEqual(groups, ['nogroup', 'voice-hub']);
        assert.equal(config, 'root:voice-hub:640');
        assert.ok(ok('ls /var/lib/voice-hub').split('\n').includes('voice-hub.db'));

        const purge = booted.run(['apt-get', 'purge', '-y', 'voice-hub'], { timeoutMs: 120_000 });
        assert.equal(purge.status, 0, purge.stdout + purge.stderr);
        const left = ok('ls -A /var/lib/voice-hub');
        t.diagnostic(`apt purge with /var/lib/voice-hub a mount point: exit 0; left in it: ${left === '' ? 'nothing' : left}`);
        assert.equal(left, '');
        assert.equal(booted.run(['mountpoint', '-q', '/var/lib/voice-hub']).status, 0, 'the mount point itself stays');
      } finally {
        booted.run(['umount', '/var/lib/voice-hub']);
      }
      // Installed again, as the README's commands left it: the next step starts with a purge.
      const again = booted.run(['dpkg', '-i', `/root/${deb(VERSION)}`], { timeoutMs: 120_000 });
      assert.equal(again.status, 0, again.stdout + again.stderr);
    });

    it('upgrading from a package whose conffile was the whole configuration keeps the edited file, without a dpkg question', (t: TestContext) => {
      const file = '/etc/voice-hub/appsettings.json';
      const purge = booted.run(['apt-get', 'purge', '-y', 'voice-hub'], { timeoutMs: 120_000 });
      assert.equal(purge.status, 0, purge.stdout + purge.stderr);
      const first = booted.run(['dpkg', '-i', `/root/${deb(CONFFILE_ERA)}`], { timeoutMs: 120_000 });
      assert.equal(first.status, 0, first.stdout + first.stderr);
      booted.sh(`sed -E -i 's/"Port": 5000,$/"Port": 5080,/' ${file}`);
      const edited = booted.sh(`cat ${file}`);
      assert.match(edited, /"Port": 5080,$/m);
      // Nothing on stdin, as an unattended upgrade: a question would fail it.
      const upgrade = booted.run(['dpkg', '-i', `/root/${deb(VERSION)}`], { timeoutMs: 120_000 });
      assert.equal(upgrade.status, 0, upgrade.stdout + upgrade.stderr);
      const status = booted.sh("dpkg-query -W -f '${db:Status-Abbrev}${Version}' voice-hub");
      // On 5080: restarted by the postinst, with the admin's configuration.
      const h = health(5080);
      t.diagnostic(`dpkg -i ${deb(VERSION)} over ${CONFFILE_ERA} with its whole-configuration conffile edited: exit ${upgrade.status}; ${status}; configuration ${booted.sh(`cat ${file}`) === edited ? 'kept' : 'CHANGED'}; /health on 5080: ${h.line}`);
      assert.doesNotMatch(upgrade.stdout + upgrade.stderr, /conffile prompt|Configuration file/);
      assert.equal(status, `ii ${VERSION}`);
      assert.equal(booted.sh(`cat ${file}`), edited);
      assert.equal(booted.sh(`stat -c '%a %U:%G' ${file}`).trim(), '640 root:voice-hub');
      assert.equal(booted.sh('ls -A /etc/voice-hub').trim(), 'appsettings.json');
      assert.equal(h.status, 200);
      // Back to the shipped configuration for the steps after this one.
      const again = booted.run(['sh', '-c', 'apt-get purge -y voice-hub && dpkg -i /root/' + deb(VERSION)], { timeoutMs: 120_000 });
      assert.equal(again.status, 0, again.stdout + again.stderr);
    });

    // Data and cache folders already there, owned by nobody:nogroup (one with a file of nobody's in it):
    // systemd 257 (Debian 13) mounts such a folder idmapped into the service instead of changing its
    // owner, and the signing key, database and native addons were written owned by nobody on disk.
    it('installs over data and cache folders owned by nobody: they become the service user\'s on disk, not idmapped', (t: TestContext) => {
      // dpkg, not apt: run on its own (--test-name-pattern) this step finds the package not installed.
      const purge = booted.run(['dpkg', '--purge', 'voice-hub'], { timeoutMs: 120_000 });
      assert.equal(purge.status, 0, purge.stdout + purge.stderr);
      booted.sh('for d in /var/lib/voice-hub /var/cache/voice-hub; do mkdir -m 0755 $d && touch $d/left-behind && chown -R nobody:nogroup $d; done');
      const install = booted.run(['dpkg', '-i', `/root/${deb(VERSION)}`], { timeoutMs: 120_000 });
      assert.equal(install.status, 0, install.stdout + install.stderr);
      const h = health();
      const pid = booted.show(UNIT, ['MainPID']).MainPID;
      const mounts = booted.sh(`grep -E ' /var/(lib|cache)/voice-hub ' /proc/${pid}/mountinfo`).trim().split('\n');
      const foreign = booted.sh("find /var/lib/voice-hub /var/cache/voice-hub \\( ! -user voice-hub -o ! -group voice-hub \\) -printf '%p %u:%g\\n'").trim();
      const owners = booted.sh('stat -c "%n %U:%G %a" /var/lib/voice-hub/signing.key /var/cache/voice-hub/left-behind').trim().split('\n');
      t.diagnostic(`folders owned by nobody:nogroup beforehand: dpkg -i exit 0; /health ${h.line}; on disk: ${owners.join(', ')}; not voice-hub's: ${foreign || 'none'}`);
      assert.deepEqual(
        install.stderr.split('\n').filter((l) => l.startsWith('voice-hub: /var/')),
        ['voice-hub: /var/lib/voice-hub held files of another owner: now owned by voice-hub:voice-hub', 'voice-hub: /var/cache/voice-hub held files of another owner: now owned by voice-hub:voice-hub'],
      );
      assert.equal(h.status, 200);
      assert.equal(foreign, '');
      assert.deepEqual(owners, ['/var/lib/voice-hub/signing.key voice-hub:voice-hub 600', '/var/cache/voice-hub/left-behind voice-hub:voice-hub 644']);
      assert.equal(mounts.length, 2, mounts.join('\n'));
      for (const line of mounts) assert.doesNotMatch(line, /idmapped/);
      // Installed again from nothing, for the steps after this one.
      const again = booted.run(['sh', '-c', 'apt-get purge -y voice-hub && dpkg -i /root/' + deb(VERSION)], { timeoutMs: 120_000 });
      assert.equal(again.status, 0, again.stdout + again.stderr);
    });

    if (fromLegacy) {
      it(`installed over the legacy package (${fromLegacy}) it is an upgrade: one package, data and signing key kept`, (t: TestContext) => {
        const legacy = `${RELEASE}~legacy`;
        const purge = booted.run(['apt-get', 'purge', '-y', 'voice-hub'], { timeoutMs: 120_000 });
        assert.equal(purge.status, 0, purge.stdout + purge.stderr);
        const before = journal().length;
        const first = booted.run(['dpkg', '-i', `/root/${deb(legacy)}`], { timeoutMs: 120_000 });
        assert.equal(first.status, 0, first.stdout + first.stderr);
        const register = JSON.parse(
          booted.sh(`curl -sS --fail-with-body --max-time 15 -H 'Content-Type: application/json' -d '{"deviceId":"pi-hall","deviceName":"Hall","deviceType":"speaker"}' http://localhost:5000/api/device/register`),
        ) as { deviceToken: string };
        const key = (): string => booted.sh('sha256sum /var/lib/voice-hub/signing.key').split(' ')[0] ?? '';
        const keyBefore = key();
        const legacyLog = journal().slice(before);
        assert.match(legacyLog, /native addon loaded from \S+uws_linux_x64_115-[0-9a-f]{16}\.node \(Node v20\./);
        const upgrade = booted.run(['dpkg', '-i', `/root/${deb(VERSION)}`], { timeoutMs: 120_000 });
        assert.equal(upgrade.status, 0, upgrade.stdout + upgrade.stderr);
        const installed = booted.run(['dpkg-query', '-W', '-f', '${Package} ${Version}\n', 'voice-hub*']).stdout.trim();
        const h = health();
        const status = booted.run(['curl', '-sS', '-o', '/dev/null', '-w', '%{http_code}', '--max-time', '15', '-X', 'PUT', '-H', 'Content-Type: application/json',
          '-H', `Authorization: Bearer ${register.deviceToken}`, '-d', '{"status":"online","batteryLevel":80}', 'http://localhost:5000/api/device/pi-hall/status']).stdout;
        const unpacked = /^Preparing to unpack .*\n.*$/m.exec(upgrade.stdout)?.[0].replace(/\n/g, '; ') ?? '';
        t.diagnostic(`dpkg -i ${deb(VERSION)} over ${legacy}: exit 0 (${unpacked}); installed: ${installed}; /health: ${h.line}; signing key ${key() === keyBefore ? 'kept' : 'CHANGED'}; device token from before: PUT status ${status}`);
        assert.equal(installed, `voice-hub ${VERSION}`);
        assert.equal(h.status, 200);
        assert.equal(key(), keyBefore);
        assert.equal(status, '200');
        assert.match(journal().slice(before + legacyLog.length), /native addon loaded from \S+uws_linux_x64_137-[0-9a-f]{16}\.node \(Node v24\./);
      });
    }
  });
}
