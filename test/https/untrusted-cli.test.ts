// `voice-hub health` and `voice-hub simulate` against a service whose certificate this machine does not
// trust (self-signed, or signed by a LAN CA, as docs/https.md sets up): the TLS error alone ("self-signed
// certificate") read as a broken service; the line now says how to trust it. Verification stays on.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { healthCommand } from '../../src/cli/health.js';
import { runSimulation } from '../../src/cli/simulate.js';
import { tmpDir } from '../support/tmp.js';
import { makeCaAndLeaf, makeSelfSigned } from './helpers.js';

const TRUST = 'the certificate is not trusted here: give the command its certificate or CA as NODE_EXTRA_CA_CERTS=/path/to/voice-hub.crt (never turn verification off)';

describe('a service whose certificate is not trusted', () => {
  const servers: https.Server[] = [];
  const urls: Record<string, string> = {};
  before(async () => {
    const dir = tmpDir();
    const self = makeSelfSigned(dir);
    const { leaf } = makeCaAndLeaf(dir);
    for (const [name, files] of [['self-signed', self], ['LAN CA', leaf]] as const) {
      const server = https.createServer({ cert: readFileSync(files.cert), key: readFileSync(files.key) }, (_req, res) => res.end('{}'));
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      servers.push(server);
      urls[name] = `https://localhost:${(server.address() as AddressInfo).port}`;
    }
  });
  after(() => servers.forEach((s) => s.close()));

  for (const name of ['self-signed', 'LAN CA']) {
    it(`${name}: health exits 3 saying how to trust it`, async () => {
      const { code, text } = await healthCommand(`${urls[name]}/health`);
      assert.equal(code, 3);
      assert.match(text, new RegExp(`^voice-hub is not reachable at ${urls[name]}/health: .+; ${TRUST.replace(/[.()/]/g, '\\$&')}\\n$`));
    });
  }

  it('self-signed: simulate fails the device saying how to trust it', async () => {
    const report = await runSimulation({ url: urls['self-signed']!, devices: 1, seconds: 0.5 });
    assert.equal(report.failures.length, 1);
    assert.ok(report.failures[0]!.reason.endsWith(`: self-signed certificate; ${TRUST}`), report.failures[0]!.reason);
  });
});
