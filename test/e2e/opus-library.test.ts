// VoiceService.OpusLibrary in the bundle users run: the system libopus decodes (inline and on the
// addon's threads) by default; a library that is missing or is not libopus is named in a warning with
// the reason and the bundled wasm libopus decodes instead; "" asks for the wasm one without a warning.
// Each way, devices streaming through the echo server get every answer back, decoded.
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { loadSigningKey } from '../../src/auth/signing-key.js';
import { TokenService } from '../../src/auth/tokens.js';
import { runSimulation } from '../../src/cli/simulate.js';
import { spawnService } from '../support/service.js';
import { tmpDir } from '../support/tmp.js';
import { startEcho } from '../support/voice.js';
import { waitUntil } from '../support/wait.js';

const WASM = 'the bundled wasm libopus';

const CASES: { name: string; args: string[]; decoding: RegExp; warning?: string }[] = [
  { name: 'default (libopus.so.0), on a decoder thread', args: ['--VoiceService.DecoderThreads', '1'], decoding: /Opus decoding: libopus 1\.[\d.]+ \(system library, on up to 1 decoder thread\)/ },
  { name: 'default (libopus.so.0), inline', args: ['--VoiceService.DecoderThreads', '0'], decoding: /Opus decoding: libopus 1\.[\d.]+ \(system library, inline on the event loop\)/ },
  {
    name: 'a file that is not there',
    args: ['--VoiceService.OpusLibrary', '/nonexistent/libopus.so.0', '--VoiceService.DecoderThreads', '1'],
    decoding: new RegExp(`Opus decoding: ${WASM} \\(on up to 1 decoder thread\\)`),
    warning: `Opus: /nonexistent/libopus.so.0 cannot be used (/nonexistent/libopus.so.0: cannot open shared object file: No such file or directory); ${WASM} decodes instead (install libopus0, or set VoiceService.OpusLibrary to "" to say so)`,
  },
  {
    name: 'a library that is not libopus',
    args: ['--VoiceService.OpusLibrary', 'libm.so.6', '--VoiceService.DecoderThreads', '0'],
    decoding: new RegExp(`Opus decoding: ${WASM} \\(inline on the event loop\\)`),
    warning: `Opus: libm.so.6 cannot be used (libm.so.6 does not export libopus' decoder functions); ${WASM} decodes instead (install libopus0, or set VoiceService.OpusLibrary to "" to say so)`,
  },
  { name: 'empty: the wasm decoder, no warning', args: ['--VoiceService.OpusLibrary', ''], decoding: new RegExp(`Opus decoding: ${WASM} \\(`) },
];

describe('VoiceService.OpusLibrary in the bundle', () => {
  let echoUrl: string;
  before(async () => {
    const echo = await startEcho();
    echoUrl = `ws://127.0.0.1:${echo.port}/voice`;
  });

  for (const c of CASES) {
    it(`${c.name}: logged, and 2 devices x 1 s get every answer back`, async () => {
      const dataDir = tmpDir();
      const svc = await spawnService(['--data-dir', dataDir, '--Mqtt.BrokerAddress', '', '--VoiceService.ServerUrl', echoUrl, ...c.args]);
      await waitUntil(() => /Opus decoding: /.test(svc.output()), 'the decoding line');
      assert.match(svc.output(), c.decoding);
      const warnings = svc.output().split('\n').filter((l) => l.includes('Opus: '));
      assert.deepEqual(warnings.map((l) => l.replace(/^.*? warn: Upstream: /, '')), c.warning ? [c.warning] : []);
      const admin = (await new TokenService(loadSigningKey('', dataDir)).issueAdmin(600_000)).token;
      const report = await runSimulation({ url: svc.url, devices: 2, seconds: 1, adminToken: admin, log: () => {} });
      assert.deepEqual(report.failures, []);
      assert.deepEqual(report.responses, { expected: 100, received: 100, answered: 100, lost: 0, duplicated: 0, late: 0 });
      assert.deepEqual(report.errors, []);
    });
  }
});
