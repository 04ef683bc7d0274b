// The Debian packages of `make deb` (packaging/build-deb.mjs), built here from the executables of
// `make binaries`: amd64 on Node 24, amd64 legacy on Node 20 and armhf legacy (the one with the appended
// assets and libatomic), then read back with dpkg-deb and judged by lintian; and `make install`'s script
// staged into a folder.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { before, describe, it } from 'node:test';
import { ROOT } from '../support/service.js';
import { tmpDir } from '../support/tmp.js';

/** The conffile of every release: only what the package sets (packaging/build-deb.mjs says why). */
const CONFFILE = '{\n  "Server": {\n    "Port": 5000\n  },\n  "Storage": {\n    "DataDir": "/var/lib/voice-hub"\n  }\n}\n';
const VERSION = (JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;

function sh(cmd: string, args: string[], opts: { env?: NodeJS.ProcessEnv; cwd?: string } = {}): string {
  return execFileSync(cmd, args, { encoding: 'utf8', timeout: 240_000, maxBuffer: 64 * 1024 * 1024, ...opts });
}

describe('Debian packages', () => {
  const out = tmpDir();
  const deb = (arch: string): string => path.join(out, `voice-hub_${VERSION}_${arch}.deb`);
  const legacy = (arch: string): string => path.join(out, `voice-hub_${VERSION}~legacy_${arch}.deb`);
  const v = VERSION.replace(/\./g, '\\.');

  before(() => {
    sh(process.execPath, [path.join(ROOT, 'packaging/build-deb.mjs'), '--no-lintian', '--compression', 'gzip', '--out', out, 'x64', 'x64-legacy', 'armv7-legacy']);
  });

  it('names package, version, architecture and the libraries the runtime and its addons need', () => {
    const fields = (file: string) => sh('dpkg-deb', ['--field', file, 'Package', 'Version', 'Architecture', 'Depends']);
    // The system libopus decodes faster than the bundled wasm one; the service runs without it.
    for (const file of [deb('amd64'), legacy('amd64'), legacy('armhf')]) assert.equal(sh('dpkg-deb', ['--field', file, 'Recommends']), 'libopus0\n');
    // Node 24: its uWS addon needs glibc 2.38, so dpkg keeps it off Debian 12 (2.36).
    assert.match(fields(deb('amd64')), new RegExp(`^Package: voice-hub\nVersion: ${v}\nArchitecture: amd64\nDepends: adduser, libc6 \\(>= 2\\.38\\), libgcc-s1, libstdc\\+\\+6 \\(>= \\d+\\)\n$`));
    // The legacy builds: the same package, a version that sorts before the Node 24 one, Debian 12's glibc.
    assert.match(fields(legacy('amd64')), new RegExp(`^Package: voice-hub\nVersion: ${v}~legacy\nArchitecture: amd64\nDepends: adduser, libc6 \\(>= 2\\.28\\), libgcc-s1, libstdc\\+\\+6 \\(>= \\d+\\)\n$`));
    assert.equal(spawnSync('dpkg', ['--compare-versions', `${VERSION}~legacy`, 'lt', VERSION]).status, 0);
    assert.match(fields(legacy('armhf')), /^Architecture: armhf$/m);
    assert.match(fields(legacy('armhf')), /^Depends: .*libatomic1/m);
    assert.match(sh('dpkg-deb', ['--field', legacy('amd64'), 'Description']), /legacy build: Node\.js 20, for Debian 12 and 32-bit ARM/);
    assert.match(sh('dpkg-deb', ['--field', deb('amd64'), 'Description']), /Node\.js 24\.\d+\.\d+ included/);
  });

  it('installs the executable, the unit, the configuration as a conffile, docs and maintainer scripts', () => {
    const contents = sh('dpkg-deb', ['--contents', deb('amd64')]);
    for (const [mode, file] of [
      ['-rwxr-xr-x root/root', './usr/bin/voice-hub'],
      ['-rw-r--r-- root/root', './lib/systemd/system/voice-hub.service'],
      ['-rw-r--r-- root/root', './etc/voice-hub/appsettings.json'],
      ['-rw-r--r-- root/root', './usr/share/doc/voice-hub/copyright'],
      ['-rw-r--r-- root/root', './usr/share/doc/voice-hub/changelog.gz'],
      ['-rw-r--r-- root/root', './usr/share/voice-hub/port-80.conf'],
      ['-rw-r--r-- root/root', './usr/share/voice-hub/appsettings.json'],
      ['-rw-r--r-- root/root', './usr/share/man/man1/voice-hub.1.gz'],
    ] as const) {
      assert.match(contents, new RegExp(`^${mode.replace(/[/]/g, '\\/')}\\s+\\d+ \\S+ \\S+ ${file.replace(/\./g, '\\.')}$`, 'm'), file);
    }
    assert.equal(sh('dpkg-deb', ['--info', deb('amd64'), 'conffiles']), '/etc/voice-hub/appsettings.json\n');
    const postinst = sh('dpkg-deb', ['--info', deb('amd64'), 'postinst']);
    assert.match(postinst, /addgroup --quiet --system voice-hub\n(.*\n)*.*adduser --quiet --system --ingroup voice-hub .* voice-hub/);
    assert.match(postinst, /deb-systemd-helper enable 'voice-hub\.service'/);
    assert.match(postinst, /deb-systemd-invoke \$_action 'voice-hub\.service'/);
    assert.match(sh('dpkg-deb', ['--info', deb('amd64'), 'postrm']), /"purge".*\n(.*\n)*\s+for dir in \/var\/lib\/voice-hub \/var\/cache\/voice-hub; do\n(.*\n)*\s+rm -rf "\$dir"/);
    // The preinst carries the conffile as built, and its checksum, with no placeholder left.
    const preinst = sh('dpkg-deb', ['--info', deb('amd64'), 'preinst']);
    assert.doesNotMatch(preinst, /@CONFFILE/);
    assert.ok(preinst.includes(`<<'CONFFILE'\n${CONFFILE}CONFFILE\n`), preinst);
    assert.ok(preinst.includes(`"$shipped" != "${createHash('md5').update(CONFFILE).digest('hex')}"`), preinst);
    for (const script of ['preinst', 'postinst', 'prerm', 'postrm']) {
      const res = spawnSync('sh', ['-n'], { input: sh('dpkg-deb', ['--info', deb('amd64'), script]), encoding: 'utf8' });
      assert.equal(res.status, 0, `${script}: ${res.stderr}`);
    }
  });

  it('carries the very executable of make binaries, which runs from the unpacked package', () => {
    const root = tmpDir();
    sh('dpkg-deb', ['--extract', deb('amd64'), root]);
    sh('dpkg-deb', ['--extract', legacy('amd64'), path.join(root, 'legacy')]);
    assert.ok(readFileSync(path.join(root, 'usr/bin/voice-hub')).equals(readFileSync(path.join(ROOT, 'dist/voice-hub-linux-x64'))));
    assert.ok(readFileSync(path.join(root, 'legacy/usr/bin/voice-hub')).equals(readFileSync(path.join(ROOT, 'dist/voice-hub-linux-x64-legacy'))));
    // The legacy one runs here, on Debian 12 (the Node 24 one on Debian 13's libraries: executable-x64.test.ts).
    const version = sh(path.join(root, 'legacy/usr/bin/voice-hub'), ['--version'], { env: { PATH: '/usr/bin:/bin', CACHE_DIRECTORY: path.join(root, 'cache') } });
    assert.match(version, new RegExp(`^voice-hub ${VERSION.replace(/\./g, '\\.')}$`, 'm'));
    assert.match(version, /^uWebSockets\.js native \(/m);
    // The conffile holds only what the package sets, nothing of config/appsettings.json, which changes in
    // nearly every release: dpkg then never asks an admin who edited it (build-deb.mjs says why).
    assert.equal(readFileSync(path.join(root, 'etc/voice-hub/appsettings.json'), 'utf8'), CONFFILE);
    // Every key with its default, beside it as the reference to copy from.
    const shipped = JSON.parse(readFileSync(path.join(ROOT, 'config/appsettings.json'), 'utf8'));
    assert.deepEqual(JSON.parse(readFileSync(path.join(root, 'usr/share/voice-hub/appsettings.json'), 'utf8')), { ...shipped, Storage: { ...shipped.Storage, DataDir: '/var/lib/voice-hub' } });
    assert.equal(readFileSync(path.join(root, 'lib/systemd/system/voice-hub.service'), 'utf8'), readFileSync(path.join(ROOT, 'systemd/voice-hub.service'), 'utf8'));
  });

  it('is lintian clean at warning level, with the overrides it ships', () => {
    const res = spawnSync('lintian', ['--fail-on', 'error,warning', '--tag-display-limit', '0', deb('amd64'), legacy('amd64'), legacy('armhf')], { encoding: 'utf8', timeout: 240_000 });
    assert.equal(res.status, 0, res.stdout + res.stderr);
    assert.doesNotMatch(res.stdout, /^[EW]: /m);
  });
});

describe('make install (packaging/install.sh)', () => {
  it('stages executable, unit, configuration and the port-80 drop-in under DESTDIR, and keeps an existing configuration', () => {
    assert.ok(existsSync(path.join(ROOT, 'dist/voice-hub-linux-x64-legacy')), 'run make binaries first');
    const dest = tmpDir();
    const env = { PATH: process.env.PATH, DESTDIR: dest, PREFIX: '/usr/local' };
    sh(path.join(ROOT, 'packaging/install.sh'), [], { env });
    const exe = path.join(dest, 'usr/local/bin/voice-hub');
    assert.equal(statSync(exe).mode & 0o777, 0o755);
    // This Debian 12 machine (glibc 2.36) gets the Node 20 build: the Node 24 one would not start here.
    assert.ok(readFileSync(exe).equals(readFileSync(path.join(ROOT, 'dist/voice-hub-linux-x64-legacy'))), 'the legacy build');
    const unit = readFileSync(path.join(dest, 'etc/systemd/system/voice-hub.service'), 'utf8');
    assert.match(unit, /^ExecStart=\/usr\/local\/bin\/voice-hub --config \/etc\/voice-hub\/appsettings\.json /m);
    const config = path.join(dest, 'etc/voice-hub/appsettings.json');
    assert.equal(statSync(config).mode & 0o777, 0o640);
    assert.equal(JSON.parse(readFileSync(config, 'utf8')).Storage.DataDir, '/var/lib/voice-hub');
    const dropIn = path.join(dest, 'usr/local/share/voice-hub/port-80.conf');
    assert.equal(statSync(dropIn).mode & 0o777, 0o644);
    assert.equal(readFileSync(dropIn, 'utf8'), readFileSync(path.join(ROOT, 'systemd/port-80.conf'), 'utf8'));

    execFileSync('sh', ['-c', `echo '{"Server":{"Port":8080}}' > "$1"`, 'sh', config]);
    const again = sh(path.join(ROOT, 'packaging/install.sh'), [], { env });
    assert.match(again, /kept .*appsettings\.json/);
    assert.equal(JSON.parse(readFileSync(config, 'utf8')).Server.Port, 8080);
    assert.ok(existsSync(`${config}.dist`));
  });

  // `apt remove` leaves the unit masked: a link to /dev/null in /etc/systemd/system. The unit was written
  // through it and chmod 0644 followed it, so /dev/null lost its 0666 for the rest of the boot. A file of
  // the test's own stands for /dev/null here.
  it('replaces a masked unit (a link to /dev/null) with the unit, leaving what the link points to alone', () => {
    const dest = tmpDir();
    const unitDir = path.join(dest, 'etc/systemd/system');
    mkdirSync(unitDir, { recursive: true });
    const devNull = path.join(dest, 'null');
    writeFileSync(devNull, '');
    chmodSync(devNull, 0o666);
    const unitPath = path.join(unitDir, 'voice-hub.service');
    symlinkSync(devNull, unitPath);
    sh(path.join(ROOT, 'packaging/install.sh'), [], { env: { PATH: process.env.PATH, DESTDIR: dest, PREFIX: '/usr/local' } });
    assert.equal(lstatSync(unitPath).isFile(), true, 'the link itself is replaced');
    assert.equal(statSync(unitPath).mode & 0o777, 0o644);
    assert.match(readFileSync(unitPath, 'utf8'), /^ExecStart=\/usr\/local\/bin\/voice-hub /m);
    assert.deepEqual([statSync(devNull).mode & 0o777, readFileSync(devNull, 'utf8')], [0o666, '']);
    assert.deepEqual(readdirSync(unitDir), ['voice-hub.service']);
  });
});
