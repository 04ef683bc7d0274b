// The Node 24 executables need glibc >= 2.38 (their uWS addon's newest symbol version), which is what
// their .deb's `Depends: libc6 (>= 2.38)` says. On Debian 12's glibc 2.36 they must refuse to start,
// naming the missing symbol version, and never run on a slow fallback: x64 natively on this Debian 12
// machine, arm64 under qemu-user with Debian 12's cross libraries.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { runProcess } from '../support/service.js';
import { sandbox } from './executables.js';

const DEBIAN12: Record<'x64' | 'arm64', string[]> = { x64: [], arm64: ['qemu-aarch64', '-L', '/usr/aarch64-linux-gnu'] };

describe('the Node 24 executables on Debian 12 (glibc 2.36)', () => {
  for (const platform of ['x64', 'arm64'] as const) {
    it(`voice-hub-linux-${platform} refuses to start, naming GLIBC_2.38`, async () => {
      const sb = sandbox(platform);
      const [cmd, ...pre] = [...DEBIAN12[platform], sb.exe];
      const args = [...pre, '--host', '127.0.0.1', '--port', '0', '--data-dir', sb.dataDir, '--Mqtt.BrokerAddress', ''];
      const res = await runProcess(cmd!, args, { cwd: sb.cwd, env: sb.env, timeoutMs: 90_000 });
      assert.equal(res.code, 1, `${res.stdout}${res.stderr}`);
      assert.match(
        res.stderr,
        new RegExp(`^start-up failed: the native uWebSockets\\.js addon \\(uws_linux_${platform}_137\\.node\\) did not load; refusing to fall back to the slow JS implementation: \\S*libc\\.so\\.6: version \`GLIBC_2\\.38' not found`, 'm'),
      );
      assert.doesNotMatch(res.stdout, /listening on/);
    });
  }
});
