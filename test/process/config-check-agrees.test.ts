// `config check` exits 78 (or 65, or 1) for what `serve` would refuse, with the same line: each case runs
// both with the same arguments and expects one answer from them, and the refused serve to leave nothing.
import assert from 'node:assert/strict';
import { existsSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { describe, it } from 'node:test';
import { runBundle } from '../support/service.js';
import { tmpDir } from '../support/tmp.js';

/** An empty configuration file: the checkout's own config/appsettings.json is not read. */
function emptyConfig(): string {
  const file = path.join(tmpDir(), 'empty.json');
  writeFileSync(file, '{}');
  return file;
}

/** `config check` and `serve` with the same arguments (serve with MQTT off). */
async function checkAndServe(args: string[]): Promise<{ check: Awaited<ReturnType<typeof runBundle>>; serve: Awaited<ReturnType<typeof runBundle>> }> {
  const check = await runBundle(['config', 'check', ...args]);
  const serve = await runBundle(['serve', ...args, '--Mqtt.BrokerAddress', '']);
  return { check, serve };
}

describe('config check refuses the listen address serve refuses', () => {
  const unresolvable = (host: string): string =>
    `invalid configuration:\n  Server.Host: "${host}" does not resolve to an address (ENOTFOUND): set an address of this machine, or a name it resolves\n`;
  const notOurs = (port: number): string =>
    `voice-hub: cannot listen 10.254.254.1:${port}: address not available (EADDRNOTAVAIL); that address is not one of this machine's: choose another (--host)\n`;
  const cases: Array<[host: string, port: number, code: number, stderr: string]> = [
    ['nonexistent.invalid', 18090, 78, unresolvable('nonexistent.invalid')],
    ['nonexistent.invalid', 0, 78, unresolvable('nonexistent.invalid')],
    ['999.1.1.1', 18090, 78, unresolvable('999.1.1.1')],
    ['999.1.1.1', 0, 78, unresolvable('999.1.1.1')],
    ['10.254.254.1', 18090, 1, notOurs(18090)],
    ['10.254.254.1', 0, 1, notOurs(0)],
  ];
  for (const [host, port, code, stderr] of cases) {
    it(`--Server.Host ${host} --Server.Port ${port}: exit ${code} from both, naming the cause; serve creates nothing`, async () => {
      const dataDir = path.join(tmpDir(), 'x', 'x');
      const { check, serve } = await checkAndServe(['--config', emptyConfig(), '--data-dir', dataDir, '--Server.Host', host, '--Server.Port', String(port)]);
      assert.equal(check.code, code, check.stderr);
      assert.equal(check.stderr, stderr);
      assert.match(check.stdout, /^# configuration file: /, 'the configuration is printed before the refusal');
      assert.equal(serve.code, code, serve.stderr);
      assert.equal(serve.stderr.split('\n').filter((l) => !/^\S+ (info|dbug): /.test(l)).join('\n'), stderr);
      assert.equal(existsSync(path.dirname(dataDir)), false, 'the refused start made no data directory');
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
