// A null for an optional request property is read as if it were absent, as ASP.NET Core binds what .NET
// clients send for unset properties (System.Text.Json writes null for them): defaults apply. A required
// property stays required, and a property whose schema takes null (a status metric) keeps its null.
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { VALIDATION_TITLE } from '../../src/http/problem.js';
import { call } from '../support/http.js';
import { answered, assertProblem } from '../support/problem.js';
import { adminToken } from '../support/tokens.js';
import { startVoiceRig } from '../support/voice.js';
import type { TestService } from '../support/service.js';

const INVALID = { title: VALIDATION_TITLE, detail: 'The request body is invalid.' };

describe('null for an optional property', () => {
  let svc: TestService;
  let admin: string;
  let token: string;
  before(async () => {
    ({ svc } = await startVoiceRig());
    admin = await adminToken(svc);
    const res = await call(svc.url, 'POST', '/api/device/register', {
      body: { deviceId: 'null-1', deviceName: 'Kitchen', deviceType: 'speaker', capabilities: null, location: null },
    });
    assert.equal(res.status, 200, res.text);
    token = res.json.deviceToken;
  });

  it('registers with the defaults of capabilities and location', async () => {
    const list = await call(svc.url, 'GET', '/api/device/list', { token: admin });
    assert.equal(list.json.devices.find((d: { id: string }) => d.id === 'null-1').location, '');
  });

  it('starts a session with the defaults of userId and of every sessionConfig value, and sends a message as text', async () => {
    for (const sessionConfig of [null, { audioFormat: null, sampleRate: null, channels: null, autoMode: null }]) {
      const start = await call(svc.url, 'POST', '/api/voice/start', { token, body: { deviceId: 'null-1', userId: null, sessionConfig } });
      assert.equal(start.status, 200, start.text);
      const message = await call(svc.url, 'POST', '/api/voice/message', { token, body: { sessionId: start.json.sessionId, text: 'hi', messageType: null } });
      assert.equal(message.status, 200, message.text);
      assert.equal(message.json.userId, '');
      assert.deepEqual({ ...message.json.config, serverUrl: '' }, { audioFormat: 'opus', sampleRate: 16000, channels: 1, autoMode: false, serverUrl: '' });
    }
  });

  it('a null required property is missing, as ASP.NET says of a null in a non-nullable one; a metric keeps its null', async () => {
    const register = await call(svc.url, 'POST', '/api/device/register', { body: { deviceId: null, deviceName: 'n', deviceType: null } });
    assertProblem(answered(register), 400, { ...INVALID, errors: { deviceId: ['The deviceId field is required.'], deviceType: ['The deviceType field is required.'] } });
    const message = await call(svc.url, 'POST', '/api/voice/message', { token, body: { sessionId: 'any', text: null } });
    assertProblem(answered(message), 400, { ...INVALID, errors: { text: ['The text field is required.'] } });
    const status = await call(svc.url, 'PUT', '/api/device/null-1/status', { token, body: { status: 'online', batteryLevel: null, cpuUsage: 5 } });
    assert.equal(status.status, 200, status.text);
    assert.deepEqual(status.json.metrics, { batteryLevel: null, temperature: null, memoryUsage: null, cpuUsage: 5 });
  });

describe('property names in any case', () => {
  it('are read as the schema spells them, as System.Text.Json\'s web defaults read them; of two spellings the last wins', async () => {
    // What a .NET client serialising with System.Text.Json's plain defaults sends: PascalCase names.
    const registered = await call(svc.url, 'POST', '/api/device/register', {
      body: { DeviceId: 'case-1', DEVICENAME: 'Kitchen', devicetype: 'speaker', Capabilities: ['audio'], Location: null },
    });
    assert.equal(registered.status, 200, registered.text);
    assert.deepEqual({ id: registered.json.deviceInfo.id, name: registered.json.deviceInfo.name }, { id: 'case-1', name: 'Kitchen' });
    const twice = await call(svc.url, 'POST', '/api/device/register', { raw: '{"deviceId":"case-2","DeviceId":"case-3","deviceName":"n","deviceType":"t"}', headers: { 'content-type': 'application/json' } });
    assert.equal(twice.status, 200, twice.text);
    assert.equal(twice.json.deviceInfo.id, 'case-3');
    const status = await call(svc.url, 'PUT', '/api/device/case-1/status', { token: registered.json.deviceToken, body: { Status: 'busy', BatteryLevel: 40 } });
    assert.equal(status.status, 200, status.text);
    assert.equal(status.json.status, 'busy');
    assert.equal(status.json.metrics.batteryLevel, 40);
  });
});
});
