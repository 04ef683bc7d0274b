// HTTPS beside HTTP (issue 7): the same API and hub on the TLS listener, with a self-signed certificate
// made here by openssl; the official SignalR client over wss:// in a child process that trusts it with
// NODE_EXTRA_CA_CERTS; one session group spanning both listeners.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { before, describe, it } from 'node:test';
import * as signalR from '@microsoft/signalr';
import { silentLogger } from '../../src/log/logger.js';
import { startEchoServer } from '../../src/upstream/echo-server.js';
import { tmpDir } from '../support/tmp.js';
import { atEnd, makeSelfSigned, request, speechPacket, startHubChild, startLoggedService, type LoggedService } from './helpers.js';

describe('HTTPS listener beside HTTP', () => {
  const dir = tmpDir();
  const { cert, key } = makeSelfSigned(dir);
  const ca = readFileSync(cert);
  let svc: LoggedService;
  let https: string;

  before(async () => {
    const echo = await startEchoServer({ host: '127.0.0.1', port: 0, logger: silentLogger });
    atEnd(() => echo.close());
    svc = await startLoggedService({
      flags: {
        'Server.HttpsPort': 0,
        'Server.Certificate.Path': cert,
        'Server.Certificate.KeyPath': key,
        'VoiceService.ServerUrl': `ws://127.0.0.1:${echo.port}/voice`,
        'Mqtt.BrokerAddress': '',
      },
    });
    assert.ok(svc.httpsUrl, 'an HTTPS port is reported');
    https = svc.httpsUrl;
    assert.notEqual(svc.app.httpsPort, svc.port);
  });

  async function register(base: string, id: string): Promise<string> {
    const res = await request(`${base}/api/device/register`, {
      method: 'POST',
      ca,
      body: { deviceId: id, deviceName: id, deviceType: 'speaker', capabilities: ['audio'], location: 'lab' },
    });
    assert.equal(res.status, 200, res.text);
    return res.json.deviceToken as string;
  }

  async function startSession(base: string, id: string, token: string, headers: Record<string, string> = {}) {
    const res = await request(`${base}/api/voice/start`, {
      method: 'POST',
      ca,
      headers: { authorization: `Bearer ${token}`, ...headers },
      body: { deviceId: id, userId: 'anna', sessionConfig: { audioFormat: 'opus', sampleRate: 16000, channels: 1 } },
    });
    assert.equal(res.status, 200, res.text);
    return res.json as { sessionId: string; websocketUrl: string };
  }

  it('serves the API over TLS with the certificate, and verification is real', async () => {
    const health = await request(`${https}/health`, { ca });
    assert.equal(health.status, 200, health.text);
    assert.equal(health.json.status, 'Healthy');
    const token = await register(https, 'tls-1');
    const status = await request(`${https}/api/device/tls-1/status`, {
      method: 'PUT', ca, headers: { authorization: `Bearer ${token}` }, body: { status: 'online', batteryLevel: 80 },
    });
    assert.equal(status.status, 200, status.text);
    // Without our certificate trusted, the client refuses the connection.
    await assert.rejects(request(`${https}/health`), /self-signed certificate/);
    // And plain HTTP on the TLS port is not answered as HTTP.
    await assert.rejects(request(`${https.replace('https:', 'http:')}/health`));
  });

  it('websocketUrl says wss:// over HTTPS or behind X-Forwarded-Proto: https, ws:// otherwise', async () => {
    const token = await register(svc.url, 'tls-url');
    const overTls = await startSession(https, 'tls-url', token);
    assert.equal(overTls.websocketUrl, `wss://127.0.0.1:${svc.app.httpsPort}/voice-hub`);
    const plain = await startSession(svc.url, 'tls-url', token);
    assert.equal(plain.websocketUrl, `ws://127.0.0.1:${svc.port}/voice-hub`);
    const proxied = await startSession(svc.url, 'tls-url', token, { 'x-forwarded-proto': 'https' });
    assert.equal(proxied.websocketUrl, `wss://127.0.0.1:${svc.port}/voice-hub`);
  });

  it('one session group spans both listeners: HTTP and HTTPS members both get AudioProcessed', async () => {
    const token = await register(svc.url, 'tls-hub');
    const { sessionId, websocketUrl } = await startSession(https, 'tls-hub', token);

    // The device over wss:// (its own process, trusting our certificate the way docs/https.md says).
    const device = startHubChild(websocketUrl.replace(/^wss:/, 'https:'), sessionId, token, { NODE_EXTRA_CA_CERTS: cert });
    await device.waitFor('ready');
    assert.deepEqual((await device.waitFor('SessionJoined'))[0]!.args, [sessionId]);

    // A second member over plain HTTP, in this process.
    const local = new signalR.HubConnectionBuilder()
      .withUrl(`${svc.url}/voice-hub`, { transport: signalR.HttpTransportType.WebSockets })
      .configureLogging(signalR.LogLevel.None)
      .build();
    const processed: Array<{ sequence: number }> = [];
    local.on('AudioProcessed', (p: { sequence: number }) => processed.push(p));
    await local.start();
    atEnd(() => local.stop());
    await local.invoke('JoinSession', sessionId, token);

    // Audio from the HTTP member reaches the HTTPS member's group too...
    await local.send('SendAudioData', sessionId, speechPacket(0));
    const first = await device.waitFor('AudioProcessed', 1);
    assert.equal((first[0]!.args[0] as { sessionId: string }).sessionId, sessionId);
    // ...and audio from the HTTPS member reaches the HTTP member.
    device.send(`send ${speechPacket(1)}`);
    await device.waitFor('AudioProcessed', 2);
    const deadline = Date.now() + 10_000;
    while (processed.length < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    assert.equal(processed.length, 2, 'the HTTP member got both AudioProcessed events');
    assert.deepEqual(processed.map((p) => p.sequence), [1, 2]);
    // The echo server's answer, decoded, reached the TLS device as well.
    await device.waitFor('AudioResponse', 1);
    assert.deepEqual(device.events.filter((e) => e.event === 'Error'), []);
    device.send('quit');
  });

  it('the hub on HTTPS refuses what it refuses on HTTP (a forged connection token: 401)', async () => {
    const res = await request(`${https}/voice-hub/negotiate?negotiateVersion=1&access_token=forged`, { method: 'POST', ca });
    assert.equal(res.status, 401);
    const ok = await request(`${https}/voice-hub/negotiate?negotiateVersion=1`, { method: 'POST', ca });
    assert.equal(ok.status, 200, ok.text);
    assert.equal(ok.json.negotiateVersion, 1);
  });
});
