// Start-up of the built bundle with HTTPS (issue 7): the short flags turn it on; a missing, unreadable,
// non-PEM or mismatched certificate or key stops start-up with a clear line and exit code 78.
import assert from 'node:assert/strict';
import { chmodSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { loadTlsFiles } from '../../src/http/tls.js';
import { ConfigError } from '../../src/config/load.js';
import { runBundle, spawnService } from '../support/service.js';
import { tmpDir } from '../support/tmp.js';
import { makeNotYetValid, makeSelfSigned, request } from './helpers.js';

const dir = tmpDir();
const good = makeSelfSigned(dir, 'good');
const other = makeSelfSigned(dir, 'other');
const notPem = path.join(dir, 'not.pem');
writeFileSync(notPem, 'this is not PEM\n');
const combined = path.join(dir, 'combined.pem');
writeFileSync(combined, readFileSync(good.cert, 'utf8') + readFileSync(good.key, 'utf8'));
const unreadable = path.join(dir, 'unreadable.key');
writeFileSync(unreadable, readFileSync(good.key));
chmodSync(unreadable, 0o000);

const server = (cert: string, key = ''): Parameters<typeof loadTlsFiles>[0] => ({
  Host: '127.0.0.1', Port: 0, HttpsPort: 0, HttpsRedirect: false, MaxBodyBytes: 1, Certificate: { Path: cert, KeyPath: key },
});

function problemOf(fn: () => unknown): string {
  try {
    fn();
  } catch (e) {
    assert.ok(e instanceof ConfigError, String(e));
    assert.equal(e.problems.length, 1, e.problems.join('\n'));
    return e.problems[0]!;
  }
  assert.fail('no problem reported');
}

describe('loadTlsFiles', () => {
  it('is off without a certificate, and accepts a matching pair or one file holding both', () => {
    assert.equal(loadTlsFiles(server('')), undefined);
    const files = loadTlsFiles(server(good.cert, good.key))!;
    assert.equal(files.certFile, good.cert);
    assert.equal(files.keyFile, good.key);
    assert.match(files.names, /DNS:localhost, IP Address:127\.0\.0\.1/);
    assert.equal(loadTlsFiles(server(combined))!.keyFile, combined);
  });

  it('names the key, the file and what is wrong', () => {
    const missing = path.join(dir, 'missing.crt');
    assert.equal(problemOf(() => loadTlsFiles(server(missing, good.key))), `Server.Certificate.Path: cannot read ${missing}: it does not exist`);
    // Read whole, /dev/zero or /dev/urandom took the process to 16 GB and std::bad_alloc.
    assert.equal(problemOf(() => loadTlsFiles(server('/dev/zero', good.key))), 'Server.Certificate.Path: cannot read /dev/zero: it is not a regular file');
    assert.equal(problemOf(() => loadTlsFiles(server(good.cert, '/dev/urandom'))), 'Server.Certificate.KeyPath: cannot read /dev/urandom: it is not a regular file');
    assert.match(problemOf(() => loadTlsFiles(server(notPem, good.key))), /^Server\.Certificate\.Path: .*not\.pem is not a PEM certificate/);
    assert.match(problemOf(() => loadTlsFiles(server(good.cert, notPem))), /^Server\.Certificate\.KeyPath: .*not\.pem holds no usable private key/);
    assert.match(problemOf(() => loadTlsFiles(server(good.cert))), /^Server\.Certificate\.Path \(no Server\.Certificate\.KeyPath: the key is read from the certificate file\): .* holds no usable private key/);
    assert.equal(
      problemOf(() => loadTlsFiles(server(good.cert, other.key))),
      `Server.Certificate.KeyPath: the private key in ${other.key} does not belong to the certificate in ${good.cert}`,
    );
    assert.match(problemOf(() => loadTlsFiles({ ...server(''), HttpsRedirect: true })), /^Server\.HttpsRedirect: is true but Server\.Certificate\.Path is empty/);
    assert.match(problemOf(() => loadTlsFiles(server('', good.key))), /^Server\.Certificate\.KeyPath: is set but Server\.Certificate\.Path is empty/);
    assert.match(problemOf(() => loadTlsFiles({ ...server(good.cert, good.key), Port: 5000, HttpsPort: 5000 })), /^Server\.HttpsPort: 5000 is also Server\.Port/);
    if (process.getuid?.() !== 0) {
      assert.match(problemOf(() => loadTlsFiles(server(good.cert, unreadable))), /cannot read .*unreadable\.key: permission denied/);
    }
  });
});

describe('the bundle', () => {
  it('a certificate not valid yet: started, with a warning naming the date and the clock', async () => {
    const future = makeNotYetValid(dir);
    const svc = await spawnService(['--cert', future.cert, '--key', future.key, '--https-port', '0', '--Mqtt.BrokerAddress', '', '--VoiceService.EnableVoice', 'false']);
    assert.match(svc.output(), new RegExp(`warn: .*the HTTPS certificate ${future.cert} is valid only from 2030-01-01T00:00:00\\.000Z: devices will refuse it until then \\(or this machine's clock, \\d{4}-.*Z, is wrong\\)\n`));
    svc.proc.kill('SIGTERM');
    assert.equal(await svc.exited, 0);
  });

  it('serves HTTPS with --cert, --key and --https-port', async () => {
    const svc = await spawnService(['--cert', good.cert, '--key', good.key, '--https-port', '0', '--Mqtt.BrokerAddress', '', '--VoiceService.EnableVoice', 'false']);
    const m = /listening on https:\/\/127\.0\.0\.1:(\d+)/.exec(svc.output());
    assert.ok(m, svc.output());
    const res = await request(`https://127.0.0.1:${m[1]}/health`, { ca: readFileSync(good.cert) });
    assert.equal(res.status, 200, res.text);
    assert.equal((await request(`${svc.url}/health`)).status, 200);
    svc.proc.kill('SIGTERM');
    assert.equal(await svc.exited, 0);
  });

  it('an HTTPS port held by another process: exit 75, and the advice names the HTTPS port setting', async () => {
    const first = await spawnService(['--cert', good.cert, '--key', good.key, '--https-port', '0', '--Mqtt.BrokerAddress', '', '--VoiceService.EnableVoice', 'false']);
    const httpsPort = Number(/listening on https:\/\/127\.0\.0\.1:(\d+)/.exec(first.output())![1]);
    const res = await runBundle(['--host', '127.0.0.1', '--port', '0', '--cert', good.cert, '--key', good.key, '--https-port', String(httpsPort), '--data-dir', tmpDir(), '--Mqtt.BrokerAddress', '']);
    assert.equal(res.code, 75, res.stderr);
    assert.match(res.stderr, new RegExp(`port ${httpsPort} on 127\\.0\\.0\\.1 is already in use by PID ${first.proc.pid} .*: stop it or choose another port \\(--https-port, Server\\.HttpsPort\\)`));
    first.proc.kill('SIGTERM');
    assert.equal(await first.exited, 0);
  });

  for (const [name, args, expected] of [
    ['a missing certificate', ['--cert', path.join(dir, 'nope.crt'), '--key', good.key], /Server\.Certificate\.Path: cannot read .*nope\.crt: it does not exist/],
    ['a key of another certificate', ['--cert', good.cert, '--key', other.key], /the private key in .*other\.key does not belong to the certificate in .*good\.crt/],
    ['a certificate that is not PEM', ['--cert', notPem, '--key', good.key], /not\.pem is not a PEM certificate/],
  ] as const) {
    it(`stops with exit code 78 on ${name}`, async () => {
      const data = tmpDir();
      const { code, stderr } = await runBundle(['--host', '127.0.0.1', '--port', '0', '--data-dir', data, ...args]);
      assert.equal(code, 78, stderr);
      assert.match(stderr, /^invalid configuration:\n {2}/);
      assert.match(stderr, expected);
    });
  }
});
