// systemd/voice-hub.service as systemd itself judges it: `systemd-analyze verify` with no warning, and
// `systemd-analyze security` at most 2.0 ("OK"), offline, against a scratch root holding the unit where
// the .deb puts it, a stand-in executable and this machine's own system units (targets it refers to).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, cpSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it, type TestContext } from 'node:test';
import { ROOT } from '../support/service.js';
import { tmpDir } from '../support/tmp.js';
import { NODE_OPTIONS_TEXT } from '../../src/runtime/node-options.mjs';

const UNIT = readFileSync(path.join(ROOT, 'systemd/voice-hub.service'), 'utf8');
const PORT_80 = readFileSync(path.join(ROOT, 'systemd/port-80.conf'), 'utf8');

function scratchRoot(dropIn?: string): { root: string; unit: string } {
  const root = tmpDir();
  cpSync('/usr/lib/systemd/system', path.join(root, 'usr/lib/systemd/system'), { recursive: true });
  mkdirSync(path.join(root, 'usr/bin'), { recursive: true });
  writeFileSync(path.join(root, 'usr/bin/voice-hub'), '#!/bin/sh\n');
  chmodSync(path.join(root, 'usr/bin/voice-hub'), 0o755);
  const unit = path.join(root, 'usr/lib/systemd/system/voice-hub.service');
  writeFileSync(unit, UNIT);
  if (dropIn) {
    mkdirSync(path.join(root, 'etc/systemd/system/voice-hub.service.d'), { recursive: true });
    writeFileSync(path.join(root, 'etc/systemd/system/voice-hub.service.d/port-80.conf'), dropIn);
  }
  return { root, unit };
}

function analyze(args: string[]): { status: number | null; stdout: string; stderr: string } {
  const res = spawnSync('systemd-analyze', args, { encoding: 'utf8', timeout: 60_000, env: { PATH: process.env.PATH, SYSTEMD_COLORS: '0' } });
  if (res.error) throw res.error;
  return { status: res.status, stdout: res.stdout, stderr: res.stderr };
}

/** The overall exposure `systemd-analyze security` prints, 0.0 (best) to 10.0. */
function exposure(stdout: string): number {
  const m = /Overall exposure level for voice-hub\.service: (\d+\.\d)/.exec(stdout);
  assert.ok(m, stdout);
  return Number(m[1]);
}

describe('systemd unit', () => {
  it('passes systemd-analyze verify without a single warning', () => {
    const { root, unit } = scratchRoot();
    const res = analyze(['verify', `--root=${root}`, '--man=no', unit]);
    assert.equal(res.stderr, '');
    assert.equal(res.status, 0);
  });

  it('verify does catch a broken unit (so the check above means something)', () => {
    const { root, unit } = scratchRoot();
    writeFileSync(unit, UNIT.replace('Restart=always', 'Restart=always\nRestartSecs=2'));
    const res = analyze(['verify', `--root=${root}`, '--man=no', unit]);
    assert.match(res.stderr, /Unknown key 'RestartSecs'/);
  });

  it('rates at most 2.0 ("OK") in systemd-analyze security', (t: TestContext) => {
    const { root, unit } = scratchRoot();
    const res = analyze(['security', '--offline=true', '--threshold=20', `--root=${root}`, unit]);
    assert.equal(res.status, 0, res.stdout + res.stderr);
    const score = exposure(res.stdout);
    t.diagnostic(`systemd-analyze security: ${score}`);
    assert.ok(score <= 2.0, `exposure ${score}`);
    assert.match(res.stdout, /Overall exposure level for voice-hub\.service: \d\.\d OK/);
  });

  it('runs as its own user with state, cache and configuration directories and Node\'s options, restarting unless stopped, giving up on a start that keeps failing', () => {
    for (const line of [
      'User=voice-hub',
      'StateDirectory=voice-hub',
      'CacheDirectory=voice-hub',
      'ConfigurationDirectory=voice-hub',
      'Restart=always',
      'StartLimitIntervalSec=60',
      'StartLimitBurst=10',
      'ExecStart=/usr/bin/voice-hub --config /etc/voice-hub/appsettings.json --data-dir /var/lib/voice-hub',
    ]) {
      assert.ok(UNIT.split('\n').includes(line), line);
    }
    // Node's options, for the Node 20 executables that cannot carry them (src/runtime/node-options.mjs).
    assert.ok(UNIT.split('\n').includes(`Environment=NODE_OPTIONS=${NODE_OPTIONS_TEXT}`), 'NODE_OPTIONS');
    // V8's JIT needs writable-then-executable memory.
    assert.doesNotMatch(UNIT, /^MemoryDenyWriteExecute=/m);
  });

  it('the port-80 drop-in verifies and grants exactly CAP_NET_BIND_SERVICE', () => {
    const { root, unit } = scratchRoot(PORT_80);
    const verify = analyze(['verify', `--root=${root}`, '--man=no', unit]);
    assert.equal(verify.stderr, '');
    assert.equal(verify.status, 0);
    const security = analyze(['security', '--offline=true', `--root=${root}`, unit]);
    assert.match(security.stdout, /✗ CapabilityBoundingSet=~CAP_NET_\(BIND_SERVICE\|BROADCAST\|RAW\)/);
    assert.match(security.stdout, /✓ CapabilityBoundingSet=~CAP_SYS_ADMIN/);
  });
});
