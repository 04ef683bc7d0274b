// The upstream voice server over wss:// with a private CA (issue 7): VoiceService.CaFile makes it work;
// without it, sessions fail to start with 502 and /health's voice entry says why, in TLS's words.
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { before, describe, it } from 'node:test';
import { createApp } from '../../src/app.js';
import { ConfigError } from '../../src/config/load.js';
import { silentLogger } from '../../src/log/logger.js';
import { startEchoServer, type EchoServer } from '../../src/upstream/echo-server.js';
import { testConfig } from '../support/service.js';
import { tmpDir } from '../support/tmp.js';
import { adminToken } from '../support/tokens.js';
import { atEnd, makeCaAndLeaf, request, startLoggedService } from './helpers.js';

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
