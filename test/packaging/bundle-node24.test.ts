// dist/voice-hub.cjs runs on Node 20 and Node 24 alike: each loads the uWS addon built for its own module
// ABI from beside the bundle and says which. Node 24 is the executables' own pinned runtime on Debian 13's
// libraries (scripts/debian-libs.mjs), since its addon needs glibc 2.38; Node 20 is this process's node.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { node24OnDebian13 } from '../../scripts/debian-libs.mjs';
import { call } from '../support/http.js';
import { BUNDLE, ROOT } from '../support/service.js';
import { tmpDir } from '../support/tmp.js';
import { checkHub } from './executables.js';

async function runBundle(node: string): Promise<{ url: string; output: () => string; stop: () => Promise<number | null> }> {
  const home = tmpDir();
  const proc = spawn(node, [BUNDLE, '--host', '127.0.0.1', '--port', '0', '--data-dir', tmpDir(), '--Mqtt.BrokerAddress', ''], {
    cwd: home,
    env: { PATH: '/usr/bin:/bin', HOME: home, TMPDIR: home },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  after(() => {
    if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL');
  });
  let out = '';
  const exited = new Promise<number | null>((resolve) => proc.on('exit', (code) => resolve(code)));
  const port = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no listening line within 30 s:\n${out}`)), 30_000);
    const onData = (d: Buffer): void => {
      out += d.toString();
      const m = /listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]!);
      }
    };
    proc.stdout.on('data', onData);
    proc.stderr.on('data', onData);
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`exited with ${code} before listening:\n${out}`));
    });
  });
  return { url: `http://127.0.0.1:${port}`, output: () => out, stop: () => (proc.kill('SIGTERM'), exited) };
}

describe('the bundle on both runtimes', () => {
  for (const [name, node, abi, version] of [
    ['Node 24 on Debian 13 libraries', node24OnDebian13(), '137', /^v24\./],
    ['Node 20 (this node)', process.execPath, '115', /^v20\./],
  ] as const) {
    it(`${name}: loads uws_linux_x64_${abi}.node beside the bundle, answers /health and a hub session`, async () => {
      const svc = await runBundle(node);
      const addon = path.join(ROOT, 'dist', 'native', `uws_linux_${process.arch}_${abi}.node`).replace(/\./g, '\\.');
      const logged = new RegExp(`uWebSockets\\.js native addon loaded from ${addon} \\(Node (v\\d+\\.\\d+\\.\\d+), module ABI ${abi}\\)`).exec(svc.output());
      assert.ok(logged, svc.output());
      assert.match(logged[1]!, version);
      const health = await call(svc.url, 'GET', '/health');
      assert.equal(health.json?.entries?.database?.status, 'Healthy', health.text);
      await checkHub(svc.url, `bundle-${abi}`);
      assert.equal(await svc.stop(), 0, svc.output());
    });
  }
});
