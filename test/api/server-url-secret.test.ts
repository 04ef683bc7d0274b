// VoiceService.ServerUrl may carry secrets in its user info and its query: neither may reach an answer,
// the session history or the log; only the public form (src/upstream/public-url.ts) does.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { call, type HttpResult } from '../support/http.js';
import { startService, type TestService } from '../support/service.js';
import { adminToken, registerDevice } from '../support/tokens.js';
import { startEcho } from '../support/voice.js';
import { tmpDir } from '../support/tmp.js';
import { publicServerUrl } from '../../src/upstream/public-url.js';

const SECRETS = ['PASS', 'QUERYSECRET'];

function assertNoSecret(where: string, text: string): void {
  for (const s of SECRETS) assert.ok(!text.includes(s), `${where} contains ${s}: ${text}`);
}

describe('the upstream address in answers, history and logs', () => {
  it('has one public form: scheme, host, port and path', () => {
    assert.equal(publicServerUrl('wss://user:pw@voice.local:5050/a/b?token=x&k=y#frag'), 'wss://voice.local:5050/a/b');
    assert.equal(publicServerUrl('ws://[::1]/'), 'ws://[::1]/');
    assert.equal(publicServerUrl('not a url ?token=x'), '(invalid URL)');
  });

  it('is shown without user info, query or fragment, before and after a restart', async () => {
    const echo = await startEcho();
    const dataDir = tmpDir();
    const flags = {
      'VoiceService.ServerUrl': `ws://user:PASS@127.0.0.1:${echo.port}/leak?token=QUERYSECRET`,
      'Mqtt.BrokerAddress': '',
    };
    const expected = `ws://127.0.0.1:${echo.port}/leak`;
    const answers: Array<[string, HttpResult]> = [];
    const record = async (svc: TestService, name: string, method: string, path: string, opts: Parameters<typeof call>[3] = {}): Promise<HttpResult> => {
      const res = await call(svc.url, method, path, opts);
      answers.push([name, res]);
      return res;
    };

    const first = await startService({ dataDir, flags });
    const admin = await adminToken(first);
    const device = await registerDevice(first);
    const started = await record(first, 'start', 'POST', '/api/voice/start', { token: device.token, body: { deviceId: device.id, userId: 'u' } });
    assert.equal(started.status, 200, started.text);
    const ended = started.json.sessionId as string;
    const message = await record(first, 'message', 'POST', '/api/voice/message', { token: device.token, body: { sessionId: ended, text: 'hi' } });
    assert.equal(message.status, 200, message.text);
    assert.equal(message.json.config.serverUrl, expected);
    const stop = await record(first, 'stop', 'POST', '/api/voice/stop', { token: device.token, body: { sessionId: ended } });
    assert.equal(stop.status, 200, stop.text);
    assert.equal(stop.json.config.serverUrl, expected);
    // Left open: the restart records it as interrupted from what the history holds.
    const open = await record(first, 'start again', 'POST', '/api/voice/start', { token: device.token, body: { deviceId: device.id, userId: 'u' } });
    assert.equal(open.status, 200, open.text);
    const health = await record(first, 'health', 'GET', '/health');
    assert.equal(health.json.entries['voice-service'].data.serverUrl, expected);
    await record(first, 'voice settings', 'GET', '/api/config/voice', { token: admin });
    await record(first, 'OpenAPI', 'GET', '/swagger/v1/swagger.json');
    const firstLogs = first.logs.join('\n');
    await first.stop();

    const second = await startService({ dataDir, flags });
    for (const id of [ended, open.json.sessionId as string]) {
      const stored = await record(second, `history of ${id}`, 'POST', '/api/voice/stop', { token: device.token, body: { sessionId: id } });
      assert.equal(stored.status, 200, stored.text);
      assert.equal(stored.json.config.serverUrl, expected);
    }

    for (const [name, res] of answers) {
      assertNoSecret(name, JSON.stringify([...res.headers]) + res.text);
    }
    assertNoSecret('the log', firstLogs + second.logs.join('\n'));
    await second.stop();
    // The history as it lies on disk, not only as the API reads it back.
    for (const entry of readdirSync(dataDir, { recursive: true, withFileTypes: true })) {
      if (entry.isFile()) assertNoSecret(entry.name, readFileSync(path.join(entry.parentPath, entry.name)).toString('latin1'));
    }
  });
});
