// Routes match as ASP.NET Core's routing matches them, on the real service over loopback: literal
// segments in any letter case, one trailing slash ignored, for every route family (API, /health, the
// Swagger pages and document, the hub's negotiate and WebSocket). Route parameters keep their case.
import { HubConnectionBuilder, HttpTransportType, LogLevel } from '@microsoft/signalr';
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { RawClient } from '../hub/helpers.js';
import { call } from '../support/http.js';
import { startService, type TestService } from '../support/service.js';
import { adminToken } from '../support/tokens.js';
import { withTimeout } from '../support/wait.js';

describe('routes match case-insensitively', () => {
  let svc: TestService;
  let admin: string;
  before(async () => {
    svc = await startService();
    admin = await adminToken(svc);
  });

  it('the device API, with the device id kept as sent', async () => {
    const reg = await call(svc.url, 'POST', '/API/Device/Register', { body: { deviceId: 'Kitchen-Satellite', deviceName: 'Kitchen', deviceType: 'speaker' } });
    assert.equal(reg.status, 200, reg.text);
    assert.equal(reg.json.deviceInfo.id, 'Kitchen-Satellite');
    const token = reg.json.deviceToken as string;
    const status = await call(svc.url, 'PUT', '/api/DEVICE/Kitchen-Satellite/STATUS', { body: { status: 'online', batteryLevel: 80 }, token });
    assert.equal(status.status, 200, status.text);
    const list = await call(svc.url, 'GET', '/Api/Device/List/', { token: admin });
    assert.equal(list.status, 200);
    assert.deepEqual(list.json.devices.map((d: { id: string }) => d.id), ['Kitchen-Satellite']);
    const other = await call(svc.url, 'PUT', '/api/device/kitchen-satellite/status', { body: { status: 'online' }, token: admin });
    assert.equal(other.status, 404, 'another letter case in the id is another device');
    const refreshed = await call(svc.url, 'POST', '/API/DEVICE/Kitchen-Satellite/TOKEN', { token: admin });
    assert.equal(refreshed.status, 200, refreshed.text);
    const deleted = await call(svc.url, 'DELETE', '/API/DEVICE/Kitchen-Satellite', { token: admin });
    assert.equal(deleted.status, 200, deleted.text);
  });

  it('configuration, voice and health', async () => {
    const config = await call(svc.url, 'GET', '/API/CONFIG/device', { token: admin });
    assert.equal(config.status, 200, config.text);
    assert.deepEqual(config.json, (await call(svc.url, 'GET', '/api/config/device', { token: admin })).json);
    const stop = await call(svc.url, 'POST', '/API/Voice/Stop', { body: { sessionId: 'no-such-session' }, token: admin });
    assert.equal(stop.status, 404, stop.text);
    for (const p of ['/HEALTH', '/Health/']) {
      const health = await call(svc.url, 'GET', p);
      assert.ok([200, 503].includes(health.status), `${p}: ${health.status}`);
    }
  });

  it('Swagger UI and the API document', async () => {
    for (const p of ['/SWAGGER', '/Swagger/Index.html', '/swagger/V1/Swagger.json']) {
      const res = await call(svc.url, 'GET', p);
      assert.equal(res.status, 200, p);
    }
  });

  it('the hub: negotiate and the WebSocket, with the official client on a differently cased URL', async () => {
    for (const p of ['/Voice-Hub/negotiate', '/VOICE-HUB/NEGOTIATE', '/voice-hub/negotiate/']) {
      const res = await call(svc.url, 'POST', `${p}?negotiateVersion=1`);
      assert.equal(res.status, 200, p);
      assert.equal(typeof res.json.connectionToken, 'string');
    }
    assert.equal(await RawClient.refusal(`ws://127.0.0.1:${svc.port}/Voice-Hub`), 101);
    assert.equal(await RawClient.refusal(`ws://127.0.0.1:${svc.port}/voice-hub/`), 101);
    // Paths of the same length that are not the hub still reach the API's 404.
    const notHub = await call(svc.url, 'POST', '/voice-hubs/negotiate');
    assert.equal(notHub.status, 404);
    assert.equal(notHub.json.detail, 'No route matches POST /voice-hubs/negotiate.');
    assert.equal(await RawClient.refusal(`ws://127.0.0.1:${svc.port}/voice-hubs`), 404);

    for (const skipNegotiation of [false, true]) {
      const connection = new HubConnectionBuilder()
        .withUrl(`${svc.url}/Voice-Hub`, skipNegotiation ? { skipNegotiation, transport: HttpTransportType.WebSockets } : {})
        .configureLogging(LogLevel.None)
        .build();
      await withTimeout(connection.start(), 5000, 'start');
      await assert.rejects(connection.invoke('NoSuchMethod'), { message: "Failed to invoke 'NoSuchMethod' due to an error on the server. HubException: Method does not exist." });
      await connection.stop();
    }
  });
});
