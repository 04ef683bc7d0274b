// inject() and a real socket run one pipeline: the same requests answered both ways give the same
// status, headers and body (trace ids aside, which are random per answer).
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { INVALID_HOST_TEXT } from '../../src/http/gate.js';
import type { InjectRequest } from '../../src/http/inject.js';
import { rawRequest } from '../support/raw-http.js';
import { startService, type TestService } from '../support/service.js';
import { adminToken } from '../support/tokens.js';

const TRACE_ID = /"traceId":"00-[0-9a-f]{32}-[0-9a-f]{16}-00"/g;
// Set by the socket layer (uWS), not by the pipeline.
const TRANSPORT_HEADERS = new Set(['date', 'uwebsockets', 'content-length', 'connection', 'transfer-encoding']);

describe('inject and the listener answer alike', () => {
  let svc: TestService;
  let admin: string;
  before(async () => {
    svc = await startService({ flags: { 'Server.MaxBodyBytes': 256, AllowedHosts: 'localhost;127.0.0.1' } });
    admin = await adminToken(svc);
  });

  it('for successes, refusals and problems', async () => {
    const requests: InjectRequest[] = [
      { method: 'GET', url: '/api/config/voice', headers: { authorization: `Bearer ${admin}` } },
      { method: 'GET', url: '/api/config/voice' },
      { method: 'GET', url: '/api/config/voice', headers: { authorization: 'Basic x' } },
      { method: 'GET', url: '/api/config/nothing', headers: { authorization: `Bearer ${admin}` } },
      { method: 'GET', url: '/api/device/list?x=1', headers: { authorization: `Bearer ${admin}` } },
      { method: 'POST', url: '/api/device/list' },
      { method: 'GET', url: '/api/nowhere' },
      { method: 'GET', url: '/api/device/%zz/status' },
      { method: 'POST', url: '/api/device/register', headers: { 'content-type': 'text/plain' }, body: '{}' },
      { method: 'POST', url: '/api/device/register', headers: { 'content-type': 'application/json' }, body: '{' },
      { method: 'POST', url: '/api/device/register', body: { deviceId: 'p', deviceName: 'x'.repeat(300), deviceType: 't' } },
      { method: 'POST', url: '/api/device/register', body: { deviceId: '' } },
      { method: 'PUT', url: '/api/config/voice', headers: { authorization: `Bearer ${admin}` }, body: { audioChannels: 3 } },
    ];
    const statuses: number[] = [];
    for (const request of requests) {
      const what = `${request.method} ${request.url}`;
      const injected = await svc.app.inject(request);
      const headers = new Headers({ host: `127.0.0.1:${svc.port}` });
      for (const [k, v] of Object.entries(request.headers ?? {})) headers.set(k, String(v));
      let body: string | undefined;
      if (typeof request.body === 'string') body = request.body;
      else if (request.body !== undefined) {
        body = JSON.stringify(request.body);
        if (!headers.has('content-type')) headers.set('content-type', 'application/json');
      }
      const res = await fetch(`${svc.url}${request.url}`, { method: request.method, headers, body, signal: AbortSignal.timeout(15_000) });
      const text = await res.text();
      assert.equal(injected.status, res.status, what);
      statuses.push(res.status);
      assert.equal(injected.body.replace(TRACE_ID, ''), text.replace(TRACE_ID, ''), what);
      const wire: Record<string, string> = {};
      res.headers.forEach((v, k) => {
        if (!TRANSPORT_HEADERS.has(k)) wire[k] = v;
      });
      assert.deepEqual(injected.headers, wire, what);
    }
    // Every stage of the pipeline answered at least once: the handler, auth, routing, body checks.
    assert.deepEqual(statuses, [200, 401, 401, 404, 200, 405, 404, 400, 415, 400, 413, 400, 400]);
  });

  // fetch always sends its own Host: the host gate's refusal is compared over a raw socket.
  it('for a Host that AllowedHosts refuses', async () => {
    const injected = await svc.app.inject({ method: 'GET', url: '/health', headers: { host: 'evil.example' } });
    const raw = await rawRequest(svc.port, 'GET /health HTTP/1.1\r\nHost: evil.example\r\nConnection: close\r\n\r\n', 5000);
    assert.deepEqual(raw.statuses, [400]);
    assert.equal(injected.status, 400);
    assert.equal(raw.text.slice(raw.text.indexOf('\r\n\r\n') + 4), injected.body);
    assert.equal(injected.body, INVALID_HOST_TEXT);
    assert.equal(injected.headers['content-type'], 'text/plain; charset=utf-8');
    assert.match(raw.text, /\r\nContent-Type: text\/plain; charset=utf-8\r\n/i);
  });
});
