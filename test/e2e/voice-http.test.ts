// The voice endpoints over HTTP against the whole service and a real upstream (POST
// /api/voice/start|stop|message; docs/protocol.md, "The upstream voice server"): statuses and
// bodies, the session record, one active session per device, the hub address, and an unreachable upstream.
import assert from 'node:assert/strict';
import http from 'node:http';
import net from 'node:net';
import { before, describe, it } from 'node:test';
import { WebSocketServer } from 'ws';
import { call, type HttpResult } from '../support/http.js';
import { startService } from '../support/service.js';
import { adminToken, registerDevice } from '../support/tokens.js';
import { audioArg, joinedClient, startEcho, startSession, startVoiceRig, type VoiceRig } from '../support/voice.js';
import { speechPackets } from '../voice/helpers.js';
import { withTimeout } from '../support/wait.js';
import { freePort } from '../support/ports.js';

/** A problem body without its per-request traceId. */
function problem(res: HttpResult): Record<string, unknown> {
  assert.equal(res.headers.get('content-type'), 'application/problem+json');
  assert.match(res.json.traceId, /^00-[0-9a-f]{32}-[0-9a-f]{16}-00$/);
  const { traceId: _traceId, ...rest } = res.json;
  return rest;
}

/** A JSON POST with headers fetch refuses to set (Host). */
function postWithHost(port: number, path: string, body: unknown, headers: Record<string, string>): Promise<{ status: number; json: any }> { // eslint-disable-line @typescript-eslint/no-explicit-any
  const data = JSON.stringify(body);
  return withTimeout(new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path, method: 'POST', headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(data), ...headers } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, json: JSON.parse(text) }));
    });
    req.on('error', reject);
    req.end(data);
  }), 10_000, `POST ${path}`);
}

const start = (rig: VoiceRig, body: Record<string, unknown>, token?: string, headers?: Record<string, string>) =>
  call(rig.svc.url, 'POST', '/api/voice/start', { body, ...(token ? { token } : {}), ...(headers ? { headers } : {}) });

describe('voice endpoints', () => {
  let rig: VoiceRig;
  let admin: string;
  before(async () => {
    rig = await startVoiceRig();
    admin = await adminToken(rig.svc);
  });

  it('start answers sessionId, status, websocketUrl and message; the session is Active with the defaults', async () => {
    const device = await registerDevice(rig.svc);
    const res = await start(rig, { deviceId: device.id, userId: 'u-1' }, device.token);
    assert.equal(res.status, 200);
    const { sessionId } = res.json;
    assert.match(sessionId, /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    assert.deepEqual(res.json, {
      sessionId,
      status: 'started',
      websocketUrl: `ws://127.0.0.1:${rig.svc.port}/voice-hub`,
      message: `Voice session started; join it on the hub with JoinSession("${sessionId}", deviceToken).`,
    });
    const live = rig.svc.app.sessions.get(sessionId);
    assert.equal(live?.state, 'Active');
    assert.deepEqual(live?.config, { audioFormat: 'opus', sampleRate: 16000, channels: 1, autoMode: false, serverUrl: `ws://127.0.0.1:${rig.echo.port}/voice` });
    assert.ok(rig.echo.connections() >= 1, 'the upstream connection is open');
  });

  it('websocketUrl follows the Host header and X-Forwarded-Proto', async () => {
    const device = await registerDevice(rig.svc);
    const https = await start(rig, { deviceId: device.id }, device.token, { 'x-forwarded-proto': 'https' });
    assert.equal(https.status, 200);
    assert.equal(https.json.websocketUrl, `wss://127.0.0.1:${rig.svc.port}/voice-hub`);
    // fetch cannot set Host; node:http can, as a reverse proxy would.
    const proxied = await postWithHost(rig.svc.port, '/api/voice/start', { deviceId: device.id }, {
      host: 'hub.example.org', 'x-forwarded-proto': 'https, http', authorization: `Bearer ${device.token}`,
    });
    assert.equal(proxied.status, 200);
    assert.equal(proxied.json.websocketUrl, 'wss://hub.example.org/voice-hub');
    const plain = await postWithHost(rig.svc.port, '/api/voice/start', { deviceId: device.id }, { host: 'hub.example.org:8080', authorization: `Bearer ${device.token}` });
    assert.equal(plain.json.websocketUrl, 'ws://hub.example.org:8080/voice-hub');
  });

  it('an unknown device is 404; a token of another device is 403; no token is 401', async () => {
    const device = await registerDevice(rig.svc);
    const other = await registerDevice(rig.svc);
    const unknown = await start(rig, { deviceId: 'no-such-device' }, admin);
    assert.equal(unknown.status, 404);
    assert.deepEqual(problem(unknown), {
      type: 'https://tools.ietf.org/html/rfc9110#section-15.5.5', title: 'Not Found', status: 404, detail: "device 'no-such-device' does not exist",
    });
    const forbidden = await start(rig, { deviceId: device.id }, other.token);
    assert.equal(forbidden.status, 403);
    assert.equal(problem(forbidden).detail, 'The token belongs to another device.');
    const anonymous = await start(rig, { deviceId: device.id });
    assert.equal(anonymous.status, 401);
    assert.equal(anonymous.headers.get('www-authenticate'), 'Bearer');

    const { sessionId } = await startSession(rig.svc, device.id, device.token);
    for (const [path, body] of [['/api/voice/stop', { sessionId }], ['/api/voice/message', { sessionId, text: 'hi' }]] as const) {
      const res = await call(rig.svc.url, 'POST', path, { body, token: other.token });
      assert.equal(res.status, 403, path);
    }
    assert.equal(rig.svc.app.sessions.get(sessionId)?.state, 'Active', 'the refused stop changed nothing');
  });

  it('sessionConfig is validated: 400 with every field named', async () => {
    const device = await registerDevice(rig.svc);
    const res = await start(rig, { deviceId: device.id, sessionConfig: { audioFormat: 'pcm', sampleRate: 44100, channels: 3, autoMode: 'yes' } }, device.token);
    assert.equal(res.status, 400);
    assert.deepEqual(problem(res), {
      type: 'https://tools.ietf.org/html/rfc9110#section-15.5.1',
      title: 'One or more validation errors occurred.',
      status: 400,
      detail: 'The request body is invalid.',
      errors: {
        'sessionConfig.audioFormat': ['must be one of "opus"'],
        'sessionConfig.sampleRate': ['must be one of 8000, 12000, 16000, 24000, 48000'],
        'sessionConfig.channels': ['must be one of 1, 2'],
        'sessionConfig.autoMode': ['must be boolean'],
      },
    });
    const notObject = await start(rig, { deviceId: device.id, sessionConfig: 'x' }, device.token);
    assert.equal(notObject.status, 400);
    assert.deepEqual(notObject.json.errors, { sessionConfig: ['must be object'] });
    assert.equal(rig.svc.app.sessions.list().filter((s) => s.deviceId === device.id).length, 0, 'no session was made');
  });

  it('stop answers the final record (Stopped, audioPacketsSent); again gives the same; unknown is 404', async () => {
    const device = await registerDevice(rig.svc);
    const { sessionId } = await startSession(rig.svc, device.id, device.token);
    const { connection, events } = await joinedClient(rig.svc, sessionId, device.token);
    const packets = speechPackets().slice(0, 7);
    for (const p of packets) void connection.send('SendAudioData', sessionId, audioArg(p));
    await events.waitFor('AudioProcessed', 7);
    const res = await call(rig.svc.url, 'POST', '/api/voice/stop', { body: { sessionId }, token: device.token });
    assert.equal(res.status, 200);
    const { startTime, endTime, ...rest } = res.json;
    assert.deepEqual(rest, {
      id: sessionId, sessionId, deviceId: device.id, userId: 'user-1', state: 'Stopped', endReason: 'stopped by request', audioPacketsSent: 7,
      config: { audioFormat: 'opus', sampleRate: 16000, channels: 1, autoMode: false, serverUrl: `ws://127.0.0.1:${rig.echo.port}/voice` },
    });
    assert.ok(Date.parse(endTime) >= Date.parse(startTime));
    assert.deepEqual(await events.waitFor('SessionEnded'), [{ sessionId, reason: 'stopped by request' }]);
    const again = await call(rig.svc.url, 'POST', '/api/voice/stop', { body: { sessionId }, token: device.token });
    assert.deepEqual([again.status, again.json], [200, res.json], 'the history record, unchanged');
    const unknown = await call(rig.svc.url, 'POST', '/api/voice/stop', { body: { sessionId: 'no-such-session' }, token: admin });
    assert.equal(unknown.status, 404);
    assert.equal(problem(unknown).detail, "session 'no-such-session' does not exist");
  });

  it('message forwards text upstream and the group gets TextResponse; a stopped session is 409', async () => {
    const device = await registerDevice(rig.svc);
    const { sessionId } = await startSession(rig.svc, device.id, device.token);
    const { events } = await joinedClient(rig.svc, sessionId, device.token, { protocol: 'messagepack' });
    const res = await call(rig.svc.url, 'POST', '/api/voice/message', { body: { sessionId, text: 'turn on the lights', messageType: 'text' }, token: device.token });
    assert.equal(res.status, 200);
    assert.equal(res.json.state, 'Active');
    assert.deepEqual(await events.waitFor('TextResponse'), [{ sessionId, text: 'echo: turn on the lights', final: true }]);
    // The echo server's `!error` command makes the upstream send an `error` frame: Error to the group.
    await call(rig.svc.url, 'POST', '/api/voice/message', { body: { sessionId, text: '!error upstream says no' }, token: device.token });
    assert.deepEqual(await events.waitFor('Error'), ['upstream says no']);
    await call(rig.svc.url, 'POST', '/api/voice/stop', { body: { sessionId }, token: device.token });
    const late = await call(rig.svc.url, 'POST', '/api/voice/message', { body: { sessionId, text: 'too late' }, token: device.token });
    assert.equal(late.status, 409);
    assert.equal(problem(late).detail, `session '${sessionId}' is not active (Stopped)`);
  });

  it('one active session per device: a second start ends the first with reason "replaced"', async () => {
    const device = await registerDevice(rig.svc);
    const first = await startSession(rig.svc, device.id, device.token);
    const { events } = await joinedClient(rig.svc, first.sessionId, device.token);
    const second = await startSession(rig.svc, device.id, device.token);
    assert.notEqual(second.sessionId, first.sessionId);
    assert.deepEqual(await events.waitFor('SessionEnded'), [{ sessionId: first.sessionId, reason: 'replaced' }]);
    assert.equal(rig.svc.app.sessions.get(first.sessionId)?.state, 'Stopped');
    assert.equal(rig.svc.app.sessions.get(second.sessionId)?.state, 'Active');
    assert.deepEqual(rig.svc.app.sessions.list().filter((s) => s.deviceId === device.id).map((s) => s.id), [second.sessionId]);
  });

  it('voice disabled through PUT /api/config/voice: start is 503 until it is enabled again', async () => {
    const device = await registerDevice(rig.svc);
    const off = await call(rig.svc.url, 'PUT', '/api/config/voice', { body: { enableVoice: false }, token: admin });
    assert.equal(off.status, 200);
    try {
      const res = await start(rig, { deviceId: device.id }, device.token);
      assert.equal(res.status, 503);
      assert.equal(problem(res).detail, 'voice features are disabled (VoiceService.EnableVoice is false)');
    } finally {
      assert.equal((await call(rig.svc.url, 'PUT', '/api/config/voice', { body: { enableVoice: true }, token: admin })).status, 200);
    }
    assert.equal((await start(rig, { deviceId: device.id }, device.token)).status, 200);
  });

  it('the voice defaults stored through PUT /api/config/voice are the next session\'s; its own sessionConfig still wins', async () => {
    const device = await registerDevice(rig.svc);
    const put = await call(rig.svc.url, 'PUT', '/api/config/voice', { body: { audioSampleRate: 48000, audioChannels: 2 }, token: admin });
    assert.equal(put.status, 200, put.text);
    const configOf = async (sessionConfig?: Record<string, unknown>): Promise<unknown> => {
      const res = await start(rig, { deviceId: device.id, ...(sessionConfig ? { sessionConfig } : {}) }, device.token);
      assert.equal(res.status, 200, res.text);
      const stop = await call(rig.svc.url, 'POST', '/api/voice/stop', { body: { sessionId: res.json.sessionId }, token: device.token });
      const { sampleRate, channels } = stop.json.config;
      return { sampleRate, channels };
    };
    try {
      assert.deepEqual(await configOf(), { sampleRate: 48000, channels: 2 });
      assert.deepEqual(await configOf({ sampleRate: 8000 }), { sampleRate: 8000, channels: 2 });
    } finally {
      assert.equal((await call(rig.svc.url, 'PUT', '/api/config/voice', { body: { audioSampleRate: null, audioChannels: null }, token: admin })).status, 200);
    }
    assert.deepEqual(await configOf(), { sampleRate: 16000, channels: 1 });
  });
});

describe('a stop answers the final record, whatever the history keeps of it', () => {
  for (const history of [0, 1]) {
    it(`Storage.SessionHistory ${history}: each of several sessions stopped at once is answered 200 with its own final record`, async () => {
      const rig = await startVoiceRig({ flags: { 'Storage.SessionHistory': history } });
      const sessions = await Promise.all([1, 2, 3].map(async () => {
        const { id, token } = await registerDevice(rig.svc);
        return { token, ...(await startSession(rig.svc, id, token)) };
      }));
      const stops = await Promise.all(sessions.map(({ sessionId, token }) => call(rig.svc.url, 'POST', '/api/voice/stop', { body: { sessionId }, token })));
      assert.deepEqual(
        stops.map((res) => [res.status, res.json?.sessionId, res.json?.state, res.json?.endReason]),
        sessions.map(({ sessionId }) => [200, sessionId, 'Stopped', 'stopped by request']),
        stops.map((res) => res.text).join('\n'),
      );
    });
  }
});

describe('upstream unreachable at start', () => {
  it('connection refused: 502 and no session left behind; a start works once the upstream is there', async () => {
    const port = await freePort();
    const svc = await startService({ flags: { 'VoiceService.ServerUrl': `ws://127.0.0.1:${port}/voice`, 'Mqtt.BrokerAddress': '' } });
    const device = await registerDevice(svc);
    const res = await call(svc.url, 'POST', '/api/voice/start', { body: { deviceId: device.id }, token: device.token });
    assert.equal(res.status, 502);
    assert.match(problem(res).detail as string, /^upstream voice server unreachable: .*ECONNREFUSED/);
    assert.deepEqual(svc.app.sessions.list(), [], 'nothing live');
    assert.deepEqual(svc.app.store.sessions.listOpen(), [], 'nothing open in the history');

    await startEcho(port);
    const ok = await call(svc.url, 'POST', '/api/voice/start', { body: { deviceId: device.id }, token: device.token });
    assert.equal(ok.status, 200);
    assert.deepEqual(svc.app.sessions.list().map((s) => s.id), [ok.json.sessionId]);
  });

  it('an upstream that accepts TCP but never answers: 502 after VoiceService.ConnectTimeout, nothing left behind', async (t) => {
    const sockets = new Set<net.Socket>();
    const blackHole = net.createServer((s) => { sockets.add(s); s.on('error', () => undefined); });
    await new Promise<void>((resolve) => blackHole.listen(0, '127.0.0.1', resolve));
    t.after(() => {
      for (const s of sockets) s.destroy();
      blackHole.close();
    });
    const port = (blackHole.address() as net.AddressInfo).port;
    const svc = await startService({
      flags: { 'VoiceService.ServerUrl': `ws://127.0.0.1:${port}/voice`, 'VoiceService.ConnectTimeout': '00:00:01', 'Mqtt.BrokerAddress': '' },
    });
    const device = await registerDevice(svc);
    // Bounded well above the 1 s ConnectTimeout: a start that waited for TCP's own timeout would fail here.
    const res = await withTimeout(call(svc.url, 'POST', '/api/voice/start', { body: { deviceId: device.id }, token: device.token }), 5000, 'start');
    assert.equal(res.status, 502);
    assert.equal(problem(res).detail, 'upstream voice server unreachable: timed out after 1 s');
    assert.deepEqual(svc.app.sessions.list(), []);
    assert.deepEqual(svc.app.store.sessions.listOpen(), []);
    assert.ok(sockets.size >= 1, 'the service did try to connect');
  });
});

describe('an upstream that stops reading', () => {
  it('a message is 503 (the text was not sent) once what waits for it passes the bound, as documented', async (t) => {
    const wss = new WebSocketServer({ host: '127.0.0.1', port: 0 });
    await new Promise<void>((resolve) => wss.once('listening', resolve));
    // Reads the start frame, then nothing more: TCP fills, then the service's send buffer.
    wss.on('connection', (socket) => socket.once('message', () => (socket as unknown as { _socket: net.Socket })._socket.pause()));
    t.after(() => new Promise<void>((resolve) => { for (const c of wss.clients) c.terminate(); wss.close(() => resolve()); }));
    const svc = await startService({ flags: { 'VoiceService.ServerUrl': `ws://127.0.0.1:${(wss.address() as net.AddressInfo).port}/voice`, 'Mqtt.BrokerAddress': '' } });
    const device = await registerDevice(svc);
    const { sessionId } = await startSession(svc, device.id, device.token);
    let res: HttpResult | undefined;
    for (let i = 0; i < 20_000; i++) {
      res = await call(svc.url, 'POST', '/api/voice/message', { body: { sessionId, text: 'x'.repeat(4096) }, token: device.token });
      if (res.status !== 200) break;
    }
    assert.equal(res?.status, 503);
    assert.deepEqual(problem(res!), {
      type: 'https://tools.ietf.org/html/rfc9110#section-15.6.4', title: 'Service Unavailable', status: 503,
      detail: 'upstream is not keeping up: text dropped',
    });
    const openapi = await call(svc.url, 'GET', '/swagger/v1/swagger.json');
    assert.match(openapi.json.paths['/api/voice/message'].post.responses['503'].description, /not keeping up/);
  });
});
