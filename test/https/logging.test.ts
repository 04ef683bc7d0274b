// The two log-level keys (issue 7): `Logging.LogLevel.Microsoft.AspNetCore` governs the per-request
// access log, `Default` everything else, `Logging.LogLevel.<Category>` our own categories; and no
// token, key or password ever reaches a log line, at the most talkative levels.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import * as signalR from '@microsoft/signalr';
import WebSocket from 'ws';
import { silentLogger } from '../../src/log/logger.js';
import { startEchoServer } from '../../src/upstream/echo-server.js';
import { startMosquitto } from '../support/mosquitto.js';
import { adminToken } from '../support/tokens.js';
import { atEnd, request, speechPacket, startLoggedService, type LoggedService } from './helpers.js';

const accessLines = (svc: LoggedService): string[] => svc.logs.filter((l) => / Microsoft\.AspNetCore: /.test(l));

async function register(svc: LoggedService, id: string, headers: Record<string, string> = {}): Promise<string> {
  const res = await request(`${svc.url}/api/device/register?debug=1`, {
    method: 'POST', headers, body: { deviceId: id, deviceName: id, deviceType: 'speaker', capabilities: [], location: 'lab' },
  });
  assert.equal(res.status, 200, res.text);
  return res.json.deviceToken as string;
}

describe('access log level', () => {
  it('Information: one line per request with method, path without query, status and duration', async () => {
    const svc = await startLoggedService({
      flags: { 'Logging.LogLevel.Microsoft.AspNetCore': 'Information', 'Logging.LogLevel.Default': 'Warning', 'Mqtt.BrokerAddress': '' },
    });
    await register(svc, 'log-1');
    await request(`${svc.url}/api/device/list?access_token=abc&page=1`);
    await request(`${svc.url}/nope`);
    const lines = accessLines(svc);
    assert.equal(lines.length, 3, lines.join('\n'));
    assert.match(lines[0]!, /^\S+ info: Microsoft\.AspNetCore: POST \/api\/device\/register 200 \d+\.\dms$/);
    assert.match(lines[1]!, /info: Microsoft\.AspNetCore: GET \/api\/device\/list 401 \d+\.\dms$/);
    assert.match(lines[2]!, /info: Microsoft\.AspNetCore: GET \/nope 404 \d+\.\dms$/);
    // Default: Warning keeps everything else quiet (no "listening on" line at Information).
    assert.deepEqual(svc.logs.filter((l) => / info: (?!Microsoft\.AspNetCore)/.test(l)), []);
  });

  it('Warning (as shipped): no access lines, while Default and category levels still apply', async () => {
    const svc = await startLoggedService({
      flags: { 'Logging.LogLevel.Default': 'Debug', 'Logging.LogLevel.Hub': 'Warning', 'Mqtt.BrokerAddress': '' },
    });
    assert.equal(svc.loaded.config.Logging.LogLevel['Microsoft.AspNetCore'], 'Warning');
    await register(svc, 'log-2');
    await request(`${svc.url}/voice-hub/negotiate?negotiateVersion=1&access_token=forged`, { method: 'POST' });
    assert.deepEqual(accessLines(svc), []);
    assert.ok(svc.logs.some((l) => / dbug: Storage: /.test(l)), 'Default: Debug reaches Storage');
    assert.deepEqual(svc.logs.filter((l) => / Hub: /.test(l)), [], 'Hub: Warning hides its debug lines');
  });
});

describe('no secret in any log line', () => {
  it('greps the whole log of a run that used every kind of secret', async () => {
    const secrets = {
      apiKey: 'apikey-S3cr3t-4f2a9c',
      upstreamKey: 'upstream-S3cr3t-77d1e0',
      mqttPassword: 'mqtt-S3cr3t-pw-19ab',
      signingKey: 'signing-S3cr3t-0123456789abcdef0123456789',
      forgedBearer: 'forged-S3cr3t-bearer',
      forgedQuery: 'forged-S3cr3t-query',
      forgedJoin: 'forged-S3cr3t-join',
    };
    const broker = await startMosquitto({ users: { hub: secrets.mqttPassword } });
    atEnd(() => broker.stop());
    const echo = await startEchoServer({ host: '127.0.0.1', port: 0, logger: silentLogger });
    atEnd(() => echo.close());
    const svc = await startLoggedService({
      flags: {
        'Logging.LogLevel.Default': 'Trace',
        'Logging.LogLevel.Microsoft.AspNetCore': 'Information',
        ApiKeys: [secrets.apiKey],
        'VoiceService.ServerUrl': `ws://127.0.0.1:${echo.port}/voice`,
        'VoiceService.ApiKey': secrets.upstreamKey,
        'VoiceService.RequireDeviceToken': true,
        'Mqtt.BrokerAddress': '127.0.0.1',
        'Mqtt.Port': broker.port,
        'Mqtt.Username': 'hub',
        'Mqtt.Password': secrets.mqttPassword,
        'Auth.SigningKey': secrets.signingKey,
      },
    });
    const apiKey = { 'x-api-key': secrets.apiKey };
    const deviceToken = await register(svc, 'sec-1', apiKey);
    const admin = await adminToken(svc);
    const bearer = (t: string) => ({ authorization: `Bearer ${t}` });

    // The API with every credential, right and wrong, in headers and in query strings.
    assert.equal((await request(`${svc.url}/api/device/register`, { method: 'POST', headers: { 'x-api-key': `${secrets.apiKey}x` }, body: {} })).status, 401);
    assert.equal((await request(`${svc.url}/api/device/sec-1/status?access_token=${deviceToken}`, {
      method: 'PUT', headers: bearer(deviceToken), body: { status: 'online', batteryLevel: 50 },
    })).status, 200);
    assert.equal((await request(`${svc.url}/api/device/list?api_key=${secrets.apiKey}`, { headers: bearer(admin) })).status, 200);
    assert.equal((await request(`${svc.url}/api/device/list`, { headers: bearer(secrets.forgedBearer) })).status, 401);
    const start = await request(`${svc.url}/api/voice/start`, {
      method: 'POST', headers: { ...apiKey, ...bearer(deviceToken) }, body: { deviceId: 'sec-1', userId: 'u' },
    });
    assert.equal(start.status, 200, start.text);
    const sessionId = start.json.sessionId as string;

    // The hub with the token as access_token (negotiate and upgrade), a forged one, and a forged JoinSession.
    assert.equal((await request(`${svc.url}/voice-hub/negotiate?negotiateVersion=1&access_token=${secrets.forgedQuery}`, { method: 'POST' })).status, 401);
    await new Promise<void>((resolve) => {
      const ws = new WebSocket(`ws://127.0.0.1:${svc.port}/voice-hub?access_token=${secrets.forgedQuery}`);
      ws.on('unexpected-response', (_q, res) => {
        res.resume();
        ws.terminate();
        resolve();
      });
      ws.on('error', () => resolve());
    });
    const hub = new signalR.HubConnectionBuilder()
      .withUrl(`${svc.url}/voice-hub`, { accessTokenFactory: () => deviceToken, transport: signalR.HttpTransportType.WebSockets })
      .configureLogging(signalR.LogLevel.None)
      .build();
    const errors: string[] = [];
    hub.on('Error', (m: string) => errors.push(m));
    let processed = 0;
    hub.on('AudioProcessed', () => processed++);
    await hub.start();
    await hub.invoke('JoinSession', sessionId, secrets.forgedJoin);
    // A client's mistakes that put its token where a name goes: the arguments swapped, a method, a path.
    await hub.invoke('JoinSession', deviceToken, sessionId);
    await assert.rejects(hub.invoke(deviceToken));
    assert.equal((await request(`${svc.url}/api/device/${deviceToken}`, { method: 'DELETE', headers: bearer(admin) })).status, 404);
    await hub.invoke('JoinSession', sessionId, deviceToken);
    await hub.send('SendAudioData', sessionId, speechPacket(0));
    const deadline = Date.now() + 10_000;
    while ((processed < 1 || errors.length < 2) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    assert.equal(processed, 1);
    assert.equal(errors.length, 2, 'the forged JoinSession and the swapped one were refused');
    await hub.stop();
    assert.equal((await request(`${svc.url}/api/voice/stop`, { method: 'POST', headers: { ...apiKey, ...bearer(deviceToken) }, body: { sessionId } })).status, 200);
    assert.equal((await request(`${svc.url}/api/device/sec-1`, { method: 'DELETE', headers: bearer(admin) })).status, 200);
    await svc.stop();

    // The run was talkative (so the grep means something) ...
    const log = svc.logs.join('\n');
    assert.ok(accessLines(svc).length >= 7, log);
    assert.ok(svc.logs.some((l) => / Hub: /.test(l)) && svc.logs.some((l) => / Mqtt: /.test(l)) && svc.logs.some((l) => / Upstream: /.test(l)), log);
    // ... and holds none of the secrets, whole or as a JWT's signature.
    const all = { ...secrets, deviceToken, admin, deviceSignature: deviceToken.split('.')[2]!, adminSignature: admin.split('.')[2]! };
    for (const [name, secret] of Object.entries(all)) {
      assert.ok(!log.includes(secret), `${name} appears in the log:\n${svc.logs.filter((l) => l.includes(secret)).join('\n')}`);
    }
    assert.ok(!accessLines(svc).some((l) => l.includes('?')), 'no query string in the access log');
  });
});
