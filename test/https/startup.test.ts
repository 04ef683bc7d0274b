// Start-up of the built bundle with HTTPS (issue 7): the short flags turn it on; a missing, unreadable,
// non-PEM or mismatched certificate or key stops start-up with a clear line and exit code 78.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { chmodSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { loadTlsFiles } from '../../src/http/tls.js';
import { ConfigError } from '../../src/config/load.js';
import { loadNativeUws } from '../../src/http/uws-native.js';
import { createEndpoints } from '../../src/wiring/endpoints.js';
import { runBundle, spawnService, testConfig } from '../support/service.js';
import { tmpDir } from '../support/tmp.js';
import { makeCaAndLeaf, makeExpired, makeNotYetValid, makeSelfSigned, request } from './helpers.js';

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
    // Before, the bare codes: "cannot read .../good.crt/key.pem: ENOTDIR", "ELOOP", "ENAMETOOLONG".
    const underFile = path.join(good.cert, 'key.pem');
    assert.equal(problemOf(() => loadTlsFiles(server(good.cert, underFile))), `Server.Certificate.KeyPath: cannot read ${underFile}: a part of its path is a file, not a directory`);
    const loop = path.join(dir, 'loop-a.pem');
    symlinkSync(path.join(dir, 'loop-b.pem'), loop);
    symlinkSync(loop, path.join(dir, 'loop-b.pem'));
    assert.equal(problemOf(() => loadTlsFiles(server(loop, good.key))), `Server.Certificate.Path: cannot read ${loop}: its path has a loop of symbolic links`);
    const long = path.join(dir, 'x'.repeat(300));
    assert.equal(problemOf(() => loadTlsFiles(server(long, good.key))), `Server.Certificate.Path: cannot read ${long}: its path or a name in it is too long`);
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

// Node's OpenSSL reads these keys, uWS' TLS library (BoringSSL) cannot serve HTTPS with them: before,
// start-up failed with the bare "App construction failed" (exit 1, retried) after writing the data
// directory, `config check` passed them, and a P-224 key started and then failed every handshake.
const unservable = [
  ['ed448', ['ed448'], 'a key of type ed448'],
  ['dsa', ['dsa:' + dsaParameters()], 'a key of type dsa'],
  ['rsa-pss', ['rsa-pss:2048'], 'a key of type rsa-pss'],
  ['secp256k1', ['ec', '-pkeyopt', 'ec_paramgen_curve:secp256k1'], 'an EC key on curve secp256k1'],
  ['brainpool', ['ec', '-pkeyopt', 'ec_paramgen_curve:brainpoolP256r1'], 'an EC key on curve brainpoolP256r1'],
  ['p224', ['ec', '-pkeyopt', 'ec_paramgen_curve:P-224'], 'an EC key on curve secp224r1'],
].map(([name, newKey, what]) => ({ name: name as string, files: makeSelfSigned(dir, name as string, newKey as string[]), what: what as string }));

function dsaParameters(): string {
  const file = path.join(dir, 'dsa.params');
  execFileSync('openssl', ['genpkey', '-genparam', '-algorithm', 'DSA', '-pkeyopt', 'dsa_paramgen_bits:2048', '-out', file], { stdio: 'ignore' });
  return file;
}

const servableKeys = {
  p256: ['ec', '-pkeyopt', 'ec_paramgen_curve:P-256'],
  p384: ['ec', '-pkeyopt', 'ec_paramgen_curve:P-384'],
  p521: ['ec', '-pkeyopt', 'ec_paramgen_curve:P-521'],
  ed25519: ['ed25519'],
};

describe('keys TLS cannot serve with', () => {
  for (const { name, files, what } of unservable) {
    it(`loadTlsFiles refuses ${name}, naming the kinds that work`, () => {
      assert.equal(
        problemOf(() => loadTlsFiles(server(files.cert, files.key))),
        `Server.Certificate.KeyPath: ${files.key} holds no usable private key: it is ${what}, which the HTTPS server cannot sign with; ` +
          'use an RSA key, an EC key on P-256, P-384 or P-521, or an Ed25519 key',
      );
    });
  }

  it('RSA, P-256, P-384, P-521 and Ed25519 keys are served: a TLS client completes the handshake', async () => {
    for (const [name, newKey] of Object.entries(servableKeys)) {
      const files = makeSelfSigned(dir, name, newKey);
      assert.ok(loadTlsFiles(server(files.cert, files.key)));
      const svc = await spawnService(['--cert', files.cert, '--key', files.key, '--https-port', '0', '--Mqtt.BrokerAddress', '', '--VoiceService.EnableVoice', 'false']);
      const port = /listening on https:\/\/127\.0\.0\.1:(\d+)/.exec(svc.output())![1];
      const res = await request(`https://127.0.0.1:${port}/health`, { ca: readFileSync(files.cert) });
      assert.equal(res.status, 200, `${name}: ${res.text}`);
      svc.proc.kill('SIGTERM');
      assert.equal(await svc.exited, 0);
    }
  });

  it('the service and config check stop with exit code 78 and write nothing to the data directory', async () => {
    const { files, what } = unservable[0]!;
    for (const command of [[], ['config', 'check']]) {
      const data = tmpDir();
      const { code, stderr } = await runBundle([...command, '--host', '127.0.0.1', '--port', '0', '--data-dir', data, '--cert', files.cert, '--key', files.key]);
      assert.equal(code, 78, stderr);
      assert.match(stderr, new RegExp(`^invalid configuration:\n {2}Server\.Certificate\.KeyPath: .* holds no usable private key: it is ${what}, `));
      assert.deepEqual(readdirSync(data), []);
    }
  });

  it('whatever else uWS refuses is a configuration problem naming both files, found before the store opens', () => {
    const { uws } = loadNativeUws();
    const config = testConfig().loaded.config;
    // Files loadTlsFiles never passes (it is the check), as the files could change between it and uWS.
    const tls = { certFile: notPem, keyFile: good.key, subject: 'CN=x', validFrom: new Date(), validTo: new Date(), names: '' };
    assert.throws(() => createEndpoints(config, uws, tls), (e: unknown) => {
      assert.ok(e instanceof ConfigError, String(e));
      assert.deepEqual(e.problems, [`Server.Certificate.Path: the HTTPS server cannot use the certificate ${notPem} with the key ${good.key} (App construction failed)`]);
      return true;
    });
  });
});

describe('certificate chains', () => {
  const { ca, leaf } = makeCaAndLeaf(dir, 'chain');
  const leafText = readFileSync(leaf.cert, 'utf8');
  const chainFile = (name: string, text: string): string => {
    const file = path.join(dir, name);
    writeFileSync(file, text);
    return file;
  };
  const good = chainFile('good-chain.crt', leafText + readFileSync(ca.cert, 'utf8'));
  // uWS reads every certificate of the file; X509Certificate only the first. Before, both of these
  // passed `config check` and stopped the service with "App construction failed" (exit 1, retried).
  const damaged = chainFile('damaged-chain.crt', `${leafText}-----BEGIN CERTIFICATE-----\nMIIBbad=\n-----END CERTIFICATE-----\n`);
  const cut = chainFile('cut-chain.crt', leafText + readFileSync(ca.cert, 'utf8').replace(/-----END CERTIFICATE-----\n$/, ''));

  it('a leaf followed by its CA is accepted', () => {
    assert.equal(loadTlsFiles(server(good, leaf.key))!.certFile, good);
  });

  it('a damaged or cut certificate after the first is named, with its place in the file', () => {
    assert.match(problemOf(() => loadTlsFiles(server(damaged, leaf.key))), new RegExp(`^Server\\.Certificate\\.Path: ${damaged}: certificate 2 of 2 is not a valid certificate \\(.+\\)$`));
    assert.equal(problemOf(() => loadTlsFiles(server(cut, leaf.key))), `Server.Certificate.Path: ${cut}: certificate 2 of 2 has no -----END CERTIFICATE----- line`);
  });

  // BoringSSL (uWS) takes a BEGIN or END line only when it holds just the marker; Node's reader is more
  // lenient. Before, a byte-order mark before the CA passed config check and the service started serving
  // the leaf alone (curl: "unable to get local issuer certificate"); one before the first certificate
  // stopped it with the bare "App construction failed".
  const BOM = '\uFEFF';
  const caText = readFileSync(ca.cert, 'utf8');
  const bomBeforeCa = chainFile('bom-chain.crt', leafText + BOM + caText);
  const MARKER_ONLY = 'the HTTPS server reads only a line holding just that marker';

  it('a BEGIN or END line holding more than its marker is named, with what else it holds', () => {
    assert.equal(problemOf(() => loadTlsFiles(server(bomBeforeCa, leaf.key))),
      `Server.Certificate.Path: ${bomBeforeCa}: certificate 2 of 2: its -----BEGIN CERTIFICATE----- line has a UTF-8 byte-order mark before it; ${MARKER_ONLY}`);
    const bomFirst = chainFile('bom-first.crt', BOM + leafText);
    assert.equal(problemOf(() => loadTlsFiles(server(bomFirst, leaf.key))),
      `Server.Certificate.Path: ${bomFirst}: certificate 1 of 1: its -----BEGIN CERTIFICATE----- line has a UTF-8 byte-order mark before it; ${MARKER_ONLY}`);
    const textBefore = chainFile('text-before.crt', `${leafText}CA: ${caText}`);
    assert.equal(problemOf(() => loadTlsFiles(server(textBefore, leaf.key))),
      `Server.Certificate.Path: ${textBefore}: certificate 2 of 2: its -----BEGIN CERTIFICATE----- line has "CA: " before it; ${MARKER_ONLY}`);
    const textAfter = chainFile('text-after.crt', leafText + caText.replace(/-----END CERTIFICATE-----\n$/, '-----END CERTIFICATE----- (CA)\n'));
    assert.equal(problemOf(() => loadTlsFiles(server(textAfter, leaf.key))),
      `Server.Certificate.Path: ${textAfter}: certificate 2 of 2: its -----END CERTIFICATE----- line has " (CA)" after it; ${MARKER_ONLY}`);
    const bomKey = chainFile('bom.key', BOM + readFileSync(leaf.key, 'utf8'));
    assert.equal(problemOf(() => loadTlsFiles(server(leaf.cert, bomKey))),
      `Server.Certificate.KeyPath: ${bomKey} holds no usable private key: its -----BEGIN PRIVATE KEY----- line has a UTF-8 byte-order mark before it; ${MARKER_ONLY}`);
    // Before: "DECODER routines::unsupported", which says nothing of where.
    const trailingKey = chainFile('trailing.key', readFileSync(leaf.key, 'utf8').replace(/-----END PRIVATE KEY-----\n$/, '-----END PRIVATE KEY----- server\n'));
    assert.equal(problemOf(() => loadTlsFiles(server(leaf.cert, trailingKey))),
      `Server.Certificate.KeyPath: ${trailingKey} holds no usable private key: its -----END PRIVATE KEY----- line has " server" after it; ${MARKER_ONLY}`);
    // Blanks after a marker and CRLF line ends are read by both.
    const blanks = chainFile('blanks-chain.crt', (leafText + caText).replace(/-----\n/g, '----- \t\r\n'));
    assert.equal(loadTlsFiles(server(blanks, leaf.key))!.certFile, blanks);
  });

  it('a TRUSTED CERTIFICATE further down the chain is refused; as the server certificate it is served', () => {
    // Before: config check passed it and uWS left the CA out of every handshake without a word.
    const trusted = (file: string): string => execFileSync('openssl', ['x509', '-in', file, '-trustout', '-addtrust', 'serverAuth'], { encoding: 'utf8' });
    const trustedCa = chainFile('trusted-ca-chain.crt', leafText + trusted(ca.cert));
    assert.equal(problemOf(() => loadTlsFiles(server(trustedCa, leaf.key))),
      `Server.Certificate.Path: ${trustedCa}: certificate 2 of 2 is a TRUSTED CERTIFICATE (with OpenSSL trust settings), which the HTTPS server leaves out ` +
      'of the chain it sends; write it as a plain certificate (openssl x509 -in ca.crt -out plain.crt)');
    const trustedLeaf = chainFile('trusted-leaf-chain.crt', trusted(leaf.cert) + caText);
    assert.equal(loadTlsFiles(server(trustedLeaf, leaf.key))!.certFile, trustedLeaf);
    // The old "X509 CERTIFICATE" label is read in a chain, so it is checked as one.
    const x509Ca = chainFile('x509-ca-chain.crt', leafText + caText.replace(/ CERTIFICATE-----/g, ' X509 CERTIFICATE-----'));
    assert.equal(loadTlsFiles(server(x509Ca, leaf.key))!.certFile, x509Ca);
    const damagedX509 = chainFile('damaged-x509-chain.crt', `${leafText}-----BEGIN X509 CERTIFICATE-----\nMIIBbad=\n-----END X509 CERTIFICATE-----\n`);
    assert.match(problemOf(() => loadTlsFiles(server(damagedX509, leaf.key))), /: certificate 2 of 2 is not a valid certificate \(.+\)$/);
  });

  it('a chain in the wrong order names the certificate the key belongs to and the order to write', () => {
    // Before: "the private key ... does not belong to the certificate", though the file held its certificate.
    const reversed = chainFile('reversed-chain.crt', caText + leafText);
    assert.equal(problemOf(() => loadTlsFiles(server(reversed, leaf.key))),
      `Server.Certificate.Path: ${reversed}: the private key in ${leaf.key} belongs to certificate 2 of 2 (CN=localhost), not to the first; ` +
      'put the server certificate first, then the intermediates that signed it (cat server.crt intermediate.crt > chain.crt)');
    // A key of none of them is still not a pair.
    assert.equal(problemOf(() => loadTlsFiles(server(reversed, other.key))),
      `Server.Certificate.KeyPath: the private key in ${other.key} does not belong to the certificate in ${reversed}`);
  });

  it('config check and the service stop with exit code 78 on a byte-order mark before the CA', async () => {
    for (const command of [['config', 'check'], []]) {
      const { code, stderr } = await runBundle([...command, '--host', '127.0.0.1', '--port', '0', '--data-dir', tmpDir(), '--cert', bomBeforeCa, '--key', leaf.key]);
      assert.equal(code, 78, stderr);
      assert.equal(stderr, `invalid configuration:\n  Server.Certificate.Path: ${bomBeforeCa}: certificate 2 of 2: its -----BEGIN CERTIFICATE----- line has a UTF-8 byte-order mark before it; ${MARKER_ONLY}\n`);
    }
  });

  it('config check and the service stop with exit code 78 on a damaged chain', async () => {
    for (const command of [['config', 'check'], []]) {
      const { code, stderr } = await runBundle([...command, '--host', '127.0.0.1', '--port', '0', '--data-dir', tmpDir(), '--cert', damaged, '--key', leaf.key]);
      assert.equal(code, 78, stderr);
      assert.match(stderr, /^invalid configuration:\n {2}Server\.Certificate\.Path: .*damaged-chain\.crt: certificate 2 of 2 is not a valid certificate/);
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

  it('an expired certificate: started, with a warning naming the date and the clock', async () => {
    // The clock may be the one that is wrong: a bad time source set it ahead.
    const old = makeExpired(dir);
    const svc = await spawnService(['--cert', old.cert, '--key', old.key, '--https-port', '0', '--Mqtt.BrokerAddress', '', '--VoiceService.EnableVoice', 'false']);
    assert.match(svc.output(), new RegExp(`warn: .*the HTTPS certificate ${old.cert} expired on 2001-01-01T00:00:00\\.000Z: devices will refuse it \\(or this machine's clock, \\d{4}-.*Z, is wrong\\)\n`));
    svc.proc.kill('SIGTERM');
    assert.equal(await svc.exited, 0);
  });

  it('a key every user may read: started, with a warning naming the file, its mode and the fix', async () => {
    const open = makeSelfSigned(tmpDir(), 'open');
    chmodSync(open.key, 0o644);
    const svc = await spawnService(['--cert', open.cert, '--key', open.key, '--https-port', '0', '--Mqtt.BrokerAddress', '', '--VoiceService.EnableVoice', 'false']);
    assert.match(svc.output(), new RegExp(`warn: App: the HTTPS key ${open.key} is readable by every user of this machine \\(mode 0644\\): any of them can pose as this service; make it readable by the service only \\(chmod o-r\\)\n`));
    svc.proc.kill('SIGTERM');
    assert.equal(await svc.exited, 0);
    // openssl writes keys 0600: no warning.
    chmodSync(open.key, 0o640);
    const quiet = await spawnService(['--cert', open.cert, '--key', open.key, '--https-port', '0', '--Mqtt.BrokerAddress', '', '--VoiceService.EnableVoice', 'false']);
    assert.doesNotMatch(quiet.output(), /readable by every user/);
    quiet.proc.kill('SIGTERM');
    assert.equal(await quiet.exited, 0);
  });

  // A 512-bit key started and failed every TLS 1.3 handshake; 768 bits started and Node's clients refused
  // it; 1024 bits started without a word, and Debian's curl and Python refused it ("key too weak").
  it('an RSA key under 1024 bits is refused, naming its size; one under 2048 starts with a warning', async () => {
    for (const bits of [512, 1016]) {
      const short = makeSelfSigned(dir, `rsa${bits}`, [`rsa:${bits}`]);
      assert.equal(
        problemOf(() => loadTlsFiles(server(short.cert, short.key))),
        `Server.Certificate.KeyPath: ${short.key} holds no usable private key: it is a ${bits}-bit RSA key, too short for TLS clients to accept; ` +
          'make one of 2048 bits (openssl req -newkey rsa:2048 ...)',
      );
    }
    const weak = makeSelfSigned(dir, 'rsa1024', ['rsa:1024']);
    const svc = await spawnService(['--cert', weak.cert, '--key', weak.key, '--https-port', '0', '--Mqtt.BrokerAddress', '', '--VoiceService.EnableVoice', 'false']);
    assert.match(svc.output(), new RegExp(`warn: App: the HTTPS key ${weak.key} is a 1024-bit RSA key: clients at OpenSSL's default security level \\(curl, Python and Node on Debian and Raspberry Pi OS\\) refuse keys under 2048 bits; make one of 2048\n`));
    svc.proc.kill('SIGTERM');
    assert.equal(await svc.exited, 0);
    // The 2048-bit key of the other tests: no warning.
    const quiet = await spawnService(['--cert', good.cert, '--key', good.key, '--https-port', '0', '--Mqtt.BrokerAddress', '', '--VoiceService.EnableVoice', 'false']);
    assert.doesNotMatch(quiet.output(), /-bit RSA key/);
    quiet.proc.kill('SIGTERM');
    assert.equal(await quiet.exited, 0);
  });

  // BoringSSL serves a leaf a CA signed with SHA-1, and OpenSSL 3's clients refuse it at any security level
  // above 0; a self-signed one they trust as given, without checking its signature.
  it('a certificate a CA signed with SHA-1 starts with a warning naming it, and clients do refuse it; a self-signed SHA-1 one is served quietly', async () => {
    const { ca, leaf } = makeCaAndLeaf(dir, 'sha1', 'sha1');
    assert.equal(loadTlsFiles(server(leaf.cert, leaf.key))!.weakSignature, 'it is signed with SHA-1 with RSA');
    const chain = path.join(dir, 'sha1-chain.crt');
    writeFileSync(chain, readFileSync(leaf.cert, 'utf8') + readFileSync(ca.cert, 'utf8'));
    assert.equal(loadTlsFiles(server(chain, leaf.key))!.weakSignature, 'certificate 1 of 2 (CN=localhost) is signed with SHA-1 with RSA');
    const selfSha1 = makeSelfSigned(dir, 'self-sha1', ['rsa:2048'], 'sha1');
    assert.equal(loadTlsFiles(server(selfSha1.cert, selfSha1.key))!.weakSignature, undefined);
    assert.equal(loadTlsFiles(server(good.cert, good.key))!.weakSignature, undefined);
    const sha256 = makeCaAndLeaf(dir, 'sha256').leaf;
    assert.equal(loadTlsFiles(server(sha256.cert, sha256.key))!.weakSignature, undefined);

    const flags = ['--https-port', '0', '--Mqtt.BrokerAddress', '', '--VoiceService.EnableVoice', 'false'];
    const svc = await spawnService(['--cert', leaf.cert, '--key', leaf.key, ...flags]);
    assert.match(svc.output(), new RegExp(`warn: App: the HTTPS certificate ${leaf.cert}: it is signed with SHA-1 with RSA, which TLS clients \\(curl, Python and Node on Debian and Raspberry Pi OS\\) refuse \\("CA signature digest algorithm too weak"\\); have it signed with SHA-256\n`));
    const port = /listening on https:\/\/127\.0\.0\.1:(\d+)/.exec(svc.output())![1];
    await assert.rejects(request(`https://127.0.0.1:${port}/health`, { ca: readFileSync(ca.cert) }), /CA signature digest algorithm too weak/);
    svc.proc.kill('SIGTERM');
    assert.equal(await svc.exited, 0);
    const quiet = await spawnService(['--cert', selfSha1.cert, '--key', selfSha1.key, ...flags]);
    assert.doesNotMatch(quiet.output(), /signed with/);
    const quietPort = /listening on https:\/\/127\.0\.0\.1:(\d+)/.exec(quiet.output())![1];
    assert.equal((await request(`https://127.0.0.1:${quietPort}/health`, { ca: readFileSync(selfSha1.cert) })).status, 200);
    quiet.proc.kill('SIGTERM');
    assert.equal(await quiet.exited, 0);
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
