// The upstream voice server over wss:// with a private CA (issue 7): VoiceService.CaFile makes it work;
// without it, sessions fail to start with 502 and /health's voice entry says why, in TLS's words.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { before, describe, it } from 'node:test';
import { createApp } from '../../src/app.js';
import { ConfigError } from '../../src/config/load.js';
import { loadCaFile } from '../../src/http/tls.js';
import { silentLogger } from '../../src/log/logger.js';
import { startEchoServer, type EchoServer } from '../../src/upstream/echo-server.js';
import { testConfig } from '../support/service.js';
import { tmpDir } from '../support/tmp.js';
import { adminToken } from '../support/tokens.js';
import { atEnd, makeCaAndLeaf, makeNotYetValid, request, startLoggedService } from './helpers.js';

const dir = tmpDir();
const { ca, leaf } = makeCaAndLeaf(dir);
let echo: EchoServer;
let upstream: string;

before(async () => {
  echo = await startEchoServer({
    host: '127.0.0.1', port: 0, logger: silentLogger, tls: { cert: readFileSync(leaf.cert), key: readFileSync(leaf.key) },
  });
  atEnd(() => echo.close());
  upstream = `wss://127.0.0.1:${echo.port}/voice`;
});

async function registerAndStart(base: string, id: string) {
  const reg = await request(`${base}/api/device/register`, {
    method: 'POST', body: { deviceId: id, deviceName: id, deviceType: 'speaker', capabilities: [], location: 'lab' },
  });
  assert.equal(reg.status, 200, reg.text);
  return request(`${base}/api/voice/start`, {
    method: 'POST',
    headers: { authorization: `Bearer ${reg.json.deviceToken as string}` },
    body: { deviceId: id, userId: 'u', sessionConfig: { audioFormat: 'opus', sampleRate: 16000, channels: 1 } },
  });
}

describe('upstream over wss:// with a private CA', () => {
  it('works with VoiceService.CaFile: health Healthy, sessions start and talk to it', async () => {
    const svc = await startLoggedService({
      flags: { 'VoiceService.ServerUrl': upstream, 'VoiceService.CaFile': ca.cert, 'VoiceService.ApiKey': 'k', 'Mqtt.BrokerAddress': '' },
    });
    const health = await request(`${svc.url}/health`);
    assert.equal(health.json.entries['voice-service'].status, 'Healthy', health.text);
    assert.match(health.json.entries['voice-service'].description, /wss:\/\/127\.0\.0\.1:\d+\/voice opened/);
    const start = await registerAndStart(svc.url, 'wss-ok');
    assert.equal(start.status, 200, start.text);
    const sessionId = start.json.sessionId as string;
    assert.ok(echo.connections() >= 1);
    const stop = await request(`${svc.url}/api/voice/stop`, {
      method: 'POST', headers: { authorization: `Bearer ${await adminToken(svc)}` }, body: { sessionId },
    });
    assert.equal(stop.status, 200, stop.text);
  });

  it('fails clearly without it: 502 at session start, and /health says the certificate is not trusted', async () => {
    const svc = await startLoggedService({ flags: { 'VoiceService.ServerUrl': upstream, 'Mqtt.BrokerAddress': '' } });
    const tlsError = /unable to verify the first certificate|unable to get local issuer certificate|self-signed certificate in certificate chain/;
    const start = await registerAndStart(svc.url, 'wss-untrusted');
    assert.equal(start.status, 502, start.text);
    assert.match(start.json.detail, /upstream voice server unreachable/);
    assert.match(start.json.detail, tlsError);
    const health = await request(`${svc.url}/health`);
    assert.equal(health.status, 503);
    const entry = health.json.entries['voice-service'];
    assert.equal(entry.status, 'Unhealthy');
    assert.match(entry.description, tlsError);
    assert.match(entry.exception, tlsError);
  });

  it('a CaFile with a certificate TLS would stop at or skip is refused, naming it; what TLS reads is accepted', () => {
    // Node's TLS reads the file up to the first certificate it cannot read, and skips one whose BEGIN or
    // END line holds more: before, the CA after it was silently not trusted, and every session failed
    // at start with "unable to get local issuer certificate" while the configuration had passed.
    const other = readFileSync(leaf.cert, 'utf8');
    const caText = readFileSync(ca.cert, 'utf8');
    const file = (name: string, text: string): string => {
      const f = path.join(dir, name);
      writeFileSync(f, text);
      return f;
    };
    const refused = (f: string): string => {
      try {
        loadCaFile(f);
      } catch (e) {
        assert.ok(e instanceof ConfigError, String(e));
        return e.problems.join('\n');
      }
      return 'accepted';
    };
    const damaged = file('ca-after-damaged.pem', `${other}-----BEGIN CERTIFICATE-----\nMIIBbad=\n-----END CERTIFICATE-----\n${caText}`);
    assert.match(refused(damaged), new RegExp(`^VoiceService\\.CaFile: ${damaged}: certificate 2 of 3 is not a valid certificate \\(.+\\)$`));
    const indented = file('ca-indented.pem', other + caText.replace('-----BEGIN', '  -----BEGIN'));
    assert.equal(refused(indented), `VoiceService.CaFile: ${indented}: certificate 2 of 2: its -----BEGIN CERTIFICATE----- line has "  " before it; TLS reads only a line holding just that marker`);
    const trailing = file('ca-trailing.pem', other + caText.replace(/-----END CERTIFICATE-----\n$/, '-----END CERTIFICATE----- (CA)\n'));
    assert.equal(refused(trailing), `VoiceService.CaFile: ${trailing}: certificate 2 of 2: its -----END CERTIFICATE----- line has " (CA)" after it; TLS reads only a line holding just that marker`);
    const cut = file('ca-cut.pem', caText + other.replace(/-----END CERTIFICATE-----\n$/, ''));
    assert.equal(refused(cut), `VoiceService.CaFile: ${cut}: certificate 2 of 2 has no -----END CERTIFICATE----- line`);
    // OpenSSL reads a byte-order mark before a BEGIN line, and TRUSTED CERTIFICATE blocks.
    assert.equal(refused(file('ca-bom.pem', `${other}\uFEFF${caText}`)), 'accepted');
    const trusted = execFileSync('openssl', ['x509', '-in', ca.cert, '-trustout'], { encoding: 'utf8' });
    assert.equal(refused(file('ca-trusted.pem', other + trusted)), 'accepted');
  });

  it('a CaFile that is missing or not a certificate is a configuration problem at start', async () => {
    const notPem = path.join(dir, 'not-a-cert.pem');
    writeFileSync(notPem, 'hello\n');
    for (const [file, words] of [[path.join(dir, 'missing.pem'), /it does not exist/], [notPem, /is not a PEM certificate/]] as const) {
      const { loaded } = testConfig({ flags: { 'VoiceService.ServerUrl': upstream, 'VoiceService.CaFile': file } });
      const app = createApp(loaded, { logger: silentLogger });
      await assert.rejects(app.start(), (e: unknown) => {
        assert.ok(e instanceof ConfigError);
        assert.equal(e.problems.length, 1);
        assert.ok(e.problems[0]!.startsWith('VoiceService.CaFile: '), e.problems[0]);
        assert.match(e.problems[0]!, words);
        return true;
      });
      await app.stop();
    }
  });
});

describe('an upstream certificate not valid yet by this machine clock', () => {
  it('is said to be judged by the clock, with its reading: at session start (502) and in /health', async () => {
    // A Pi without a real-time clock starts in the past (the time it saved, or 1970) until NTP sets its
    // clock: a bare "certificate is not yet valid" read as the voice server's fault.
    const future = makeNotYetValid(dir, 'future-upstream');
    const server = await startEchoServer({
      host: '127.0.0.1', port: 0, logger: silentLogger, tls: { cert: readFileSync(future.cert), key: readFileSync(future.key) },
    });
    atEnd(() => server.close());
    const svc = await startLoggedService({
      flags: { 'VoiceService.ServerUrl': `wss://127.0.0.1:${server.port}/voice`, 'VoiceService.CaFile': future.cert, 'Mqtt.BrokerAddress': '' },
    });
    const why = /^certificate is not yet valid \(this machine's clock says (\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z): if that is in the past, it is this machine that is wrong, until NTP sets its clock\)$/;
    const before = Date.now();
    const start = await registerAndStart(svc.url, 'wss-future');
    assert.equal(start.status, 502, start.text);
    const detail = String(start.json.detail);
    assert.ok(detail.startsWith('upstream voice server unreachable: '), detail);
    const said = why.exec(detail.slice('upstream voice server unreachable: '.length));
    assert.ok(said, detail);
    assert.ok(Math.abs(Date.parse(said[1]!) - before) < 60_000, `the reading is the clock's: ${said[1]}`);
    const health = await request(`${svc.url}/health`);
    assert.equal(health.status, 503);
    const entry = health.json.entries['voice-service'];
    assert.equal(entry.status, 'Unhealthy');
    assert.match(entry.description, why);
    assert.equal(entry.exception, entry.description);
  });
});
