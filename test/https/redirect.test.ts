// Server.HttpsRedirect (issue 7): plain HTTP answers 308 to the same URL on the HTTPS port for the API
// and the hub, never for /health; off, plain HTTP is served as before.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { before, describe, it } from 'node:test';
import WebSocket from 'ws';
import { tmpDir } from '../support/tmp.js';
import { makeSelfSigned, request, startLoggedService, type LoggedService } from './helpers.js';
import { httpRequest, rawRequest } from '../support/raw-http.js';

const dir = tmpDir();
const { cert, key } = makeSelfSigned(dir);
const ca = readFileSync(cert);
const tlsFlags = { 'Server.HttpsPort': 0, 'Server.Certificate.Path': cert, 'Server.Certificate.KeyPath': key, 'Mqtt.BrokerAddress': '', 'VoiceService.EnableVoice': false };

/** The status and Location a plain WebSocket upgrade gets (the `ws` client reports non-101 answers). */
function upgradeAnswer(url: string): Promise<{ status: number; location: string | undefined }> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { handshakeTimeout: 5000 });
    ws.on('unexpected-response', (_req, res) => {
      resolve({ status: res.statusCode ?? 0, location: res.headers.location });
      res.resume();
      ws.terminate();
    });
    ws.on('open', () => {
      ws.terminate();
      resolve({ status: 101, location: undefined });
    });
    ws.on('error', (e) => reject(e));
  });
}

describe('HttpsRedirect on', () => {
  let svc: LoggedService;
  let httpsPort: number;
  before(async () => {
    svc = await startLoggedService({ flags: { ...tlsFlags, 'Server.HttpsRedirect': true } });
    httpsPort = svc.app.httpsPort!;
  });

  it('redirects API requests with 308 to the same path and query on the HTTPS port', async () => {
    const get = await request(`${svc.url}/api/device/list?page=2&x=%2F`);
    assert.equal(get.status, 308);
    assert.equal(get.headers.location, `https://127.0.0.1:${httpsPort}/api/device/list?page=2&x=%2F`);
    const post = await request(`${svc.url}/api/device/register`, { method: 'POST', body: { deviceId: 'r-1' } });
    assert.equal(post.status, 308);
    assert.equal(post.headers.location, `https://127.0.0.1:${httpsPort}/api/device/register`);
    // The host the client used is kept (port replaced), including a name and an IPv6 literal.
    const named = await request(`${svc.url}/swagger`, { headers: { host: 'pi.local:5000' } });
    assert.equal(named.headers.location, `https://pi.local:${httpsPort}/swagger`);
    const v6 = await request(`${svc.url}/api/device/list`, { headers: { host: '[::1]:5000' } });
    assert.equal(v6.headers.location, `https://[::1]:${httpsPort}/api/device/list`);
    // Unknown paths too: nothing is served in plain text.
    assert.equal((await request(`${svc.url}/nope`)).status, 308);
  });

  it('following the redirect reaches the same API over TLS (a POST stays a POST)', async () => {
    const first = await request(`${svc.url}/api/device/register`, {
      method: 'POST', body: { deviceId: 'r-2', deviceName: 'R2', deviceType: 'speaker', capabilities: [], location: 'lab' },
    });
    assert.equal(first.status, 308);
    const second = await request(first.headers.location!, {
      method: 'POST', ca, body: { deviceId: 'r-2', deviceName: 'R2', deviceType: 'speaker', capabilities: [], location: 'lab' },
    });
    assert.equal(second.status, 200, second.text);
    assert.equal(second.json.deviceInfo.id, 'r-2');
  });

  it('a path or query with characters a URI may not hold raw is redirected with them percent-encoded (UTF-8), as clients can follow it', async () => {
    // Raw UTF-8 in the target, as firmware sends a device id; a Location with those bytes raw is read as
    // Latin-1 by fetch (undici), which then followed it to /api/device/k%C3%83%C2%BCche.
    const answer = await rawRequest(svc.port, httpRequest('GET', '/api/device/k\u00fcche/status?q=\u00fc&r=%2F|', []));
    assert.deepEqual(answer.statuses, [308], answer.text);
    const location = /\r\nLocation: ([^\r]*)\r\n/.exec(answer.text)?.[1];
    assert.equal(location, `https://127.0.0.1:${httpsPort}/api/device/k%C3%BCche/status?q=%C3%BC&r=%2F%7C`);
    assert.equal(new URL(location!).pathname, '/api/device/k%C3%BCche/status');
  });

  it('never redirects /health, so technicians and probes keep working over plain HTTP', async () => {
    const health = await request(`${svc.url}/health`);
    assert.equal(health.status, 200, health.text);
    assert.equal(health.json.status, 'Healthy');
    const text = await request(`${svc.url}/health`, { headers: { accept: 'text/plain' } });
    assert.equal(text.status, 200);
    // Every path the health route answers, as the router matches it; nothing beyond it.
    for (const path of ['/HEALTH', '/Health/', '/%68ealth']) {
      const res = await request(`${svc.url}${path}`);
      assert.equal(res.status, 200, `${path}: ${res.status} ${res.headers.location ?? ''}`);
    }
    for (const path of ['/health/x', '/health//', '/healthz']) {
      const res = await request(`${svc.url}${path}`);
      assert.equal(res.status, 308, path);
      assert.equal(res.headers.location, `https://127.0.0.1:${httpsPort}${path}`);
    }
  });

  it('redirects the hub: negotiate and the WebSocket upgrade', async () => {
    const negotiate = await request(`${svc.url}/voice-hub/negotiate?negotiateVersion=1`, { method: 'POST' });
    assert.equal(negotiate.status, 308);
    assert.equal(negotiate.headers.location, `https://127.0.0.1:${httpsPort}/voice-hub/negotiate?negotiateVersion=1`);
    const upgrade = await upgradeAnswer(`ws://127.0.0.1:${svc.port}/voice-hub`);
    assert.equal(upgrade.status, 308);
    assert.equal(upgrade.location, `https://127.0.0.1:${httpsPort}/voice-hub`);
    // Over TLS the hub answers.
    const tls = await request(`https://127.0.0.1:${httpsPort}/voice-hub/negotiate?negotiateVersion=1`, { method: 'POST', ca });
    assert.equal(tls.status, 200, tls.text);
  });

  it('does not redirect a request a TLS-terminating proxy forwarded (X-Forwarded-Proto: https)', async () => {
    const res = await request(`${svc.url}/api/device/list`, { headers: { 'x-forwarded-proto': 'https' } });
    assert.equal(res.status, 401); // served: the admin token is missing
  });
});

describe('HttpsRedirect off (the default)', () => {
  it('serves plain HTTP beside HTTPS', async () => {
    const svc = await startLoggedService({ flags: tlsFlags });
    assert.equal(svc.loaded.config.Server.HttpsRedirect, false);
    assert.equal((await request(`${svc.url}/api/device/list`)).status, 401);
    assert.equal((await request(`${svc.url}/voice-hub/negotiate?negotiateVersion=1`, { method: 'POST' })).status, 200);
    assert.equal((await upgradeAnswer(`ws://127.0.0.1:${svc.port}/voice-hub`)).status, 101);
    assert.equal((await request(`${svc.httpsUrl}/api/device/list`, { ca })).status, 401);
  });
});
