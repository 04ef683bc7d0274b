// CORS on the real service over loopback: one list (`Cors:AllowedOrigins`) for the API, /health and the
// hub's negotiate and WebSocket. Exact headers for a listed origin, none for another, preflights on any
// path answered 204, the configuration's checks on origins, and the environment form of the list.
import assert from 'node:assert/strict';
import { describe, it, before } from 'node:test';
import { problemsOf } from '../config/helpers.js';
import { call } from '../support/http.js';
import { rawRequest, statusesIn } from '../support/raw-http.js';
import { answered, assertProblem } from '../support/problem.js';
import { startService, type TestService } from '../support/service.js';
import { adminToken } from '../support/tokens.js';
import { RawClient } from '../hub/helpers.js';

const LISTED = 'http://dashboard.local:8080';
const OTHER = 'http://evil.example';

/** The CORS headers of a response, by lower-case name. */
function corsOf(headers: Headers): Record<string, string> {
  const out: Record<string, string> = {};
  headers.forEach((value, name) => {
    if (name.startsWith('access-control-') || name === 'vary') out[name] = value;
  });
  return out;
}

const ALLOWED = { 'access-control-allow-origin': LISTED, 'access-control-allow-credentials': 'true', vary: 'Origin' };
const PREFLIGHT_ALLOWED = {
  ...ALLOWED,
  'access-control-allow-methods': 'GET, POST, PUT, DELETE, OPTIONS',
  'access-control-allow-headers': 'authorization, content-type, x-api-key, x-requested-with, x-signalr-user-agent',
  'access-control-max-age': '600',
};

describe('CORS with an origin configured', () => {
  let svc: TestService;
  before(async () => {
    svc = await startService({ env: { Cors__AllowedOrigins__0: 'http://Dashboard.local:8080' } });
  });

  it('the environment form fills the list', () => {
    assert.deepEqual(svc.loaded.config.Cors.AllowedOrigins, ['http://Dashboard.local:8080']);
  });

  it('a preflight from the listed origin, on any API path, gets the allow headers and 204', async () => {
    for (const [path, method] of [['/api/device/register', 'POST'], ['/api/device/list', 'GET'], ['/api/device/kitchen/status', 'PUT'], ['/health', 'GET'], ['/API/DEVICE/LIST', 'GET']] as const) {
      const res = await call(svc.url, 'OPTIONS', path, {
        headers: { origin: LISTED, 'access-control-request-method': method, 'access-control-request-headers': 'authorization, content-type' },
      });
      assert.equal(res.status, 204, path);
      assert.equal(res.text, '');
      assert.deepEqual(corsOf(res.headers), PREFLIGHT_ALLOWED, path);
    }
  });

  it('a preflight from another origin is answered 204 without allow headers', async () => {
    const res = await call(svc.url, 'OPTIONS', '/api/device/register', { headers: { origin: OTHER, 'access-control-request-method': 'POST' } });
    assert.equal(res.status, 204);
    assert.deepEqual(corsOf(res.headers), { vary: 'Origin' });
  });

  it('an OPTIONS naming a method but with no Origin is no preflight: routed as any OPTIONS, on the API and the hub', async () => {
    const asks = { 'access-control-request-method': 'GET' };
    const list = await call(svc.url, 'OPTIONS', '/api/device/list', { headers: asks });
    assertProblem(answered(list), 405, { detail: 'Method OPTIONS is not allowed here.' });
    assert.equal(list.headers.get('allow'), 'DELETE, GET');
    assert.deepEqual(corsOf(list.headers), {});
    const health = await call(svc.url, 'OPTIONS', '/health', { headers: { ...asks, accept: 'text/plain' } });
    assert.deepEqual([health.status, health.text], [503, 'Unhealthy']);
    const negotiate = await call(svc.url, 'OPTIONS', '/voice-hub/negotiate', { headers: asks });
    assert.deepEqual([negotiate.status, negotiate.text, negotiate.headers.get('allow')], [405, 'Method not allowed', 'POST']);
    const hub = await call(svc.url, 'OPTIONS', '/voice-hub', { headers: asks });
    assert.deepEqual([hub.status, hub.text, hub.headers.get('allow')], [405, '', 'DELETE, GET, POST']);
    assert.deepEqual(corsOf(hub.headers), {});
  });

  it('API answers, errors included, carry the headers for the listed origin only', async () => {
    const registered = await call(svc.url, 'POST', '/api/device/register', {
      body: { deviceId: 'kitchen-satellite', deviceName: 'Kitchen satellite', deviceType: 'speaker' },
      headers: { origin: LISTED },
    });
    assert.equal(registered.status, 200, registered.text);
    assert.deepEqual(corsOf(registered.headers), ALLOWED);

    const health = await call(svc.url, 'GET', '/health', { headers: { origin: LISTED } });
    assert.ok([200, 503].includes(health.status));
    // /health's own Vary (its answer is chosen by Accept) is kept beside Origin.
    assert.deepEqual(corsOf(health.headers), { ...ALLOWED, vary: 'Accept, Origin' });

    const unauthorized = await call(svc.url, 'GET', '/api/device/list', { headers: { origin: LISTED } });
    assert.equal(unauthorized.status, 401);
    assert.deepEqual(corsOf(unauthorized.headers), ALLOWED, 'a page can read why it was refused');

    const list = await call(svc.url, 'GET', '/api/device/list', { headers: { origin: OTHER }, token: await adminToken(svc) });
    assert.equal(list.status, 200, 'the request itself is served; the browser withholds it from the page');
    assert.deepEqual(corsOf(list.headers), { vary: 'Origin' });

    const plain = await call(svc.url, 'GET', '/health');
    assert.deepEqual(corsOf(plain.headers), { vary: 'Accept' }, 'no Origin, no CORS headers');
  });

  it('a Vary the answer has already is kept beside Origin', async () => {
    const res = await call(svc.url, 'GET', '/swagger/swagger-ui.css', { headers: { origin: LISTED, 'accept-encoding': 'gzip' } });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('vary'), 'Accept-Encoding, Origin');
    assert.equal(res.headers.get('access-control-allow-origin'), LISTED);
  });

  it('negotiate uses the same list: listed origin echoed with credentials, another refused', async () => {
    const pre = await call(svc.url, 'OPTIONS', '/voice-hub/negotiate?negotiateVersion=1', {
      headers: { origin: LISTED, 'access-control-request-method': 'POST', 'access-control-request-headers': 'x-signalr-user-agent, x-requested-with' },
    });
    assert.equal(pre.status, 204);
    assert.deepEqual(corsOf(pre.headers), PREFLIGHT_ALLOWED);
    const otherPre = await call(svc.url, 'OPTIONS', '/voice-hub/negotiate', { headers: { origin: OTHER, 'access-control-request-method': 'POST' } });
    assert.equal(otherPre.status, 204);
    assert.deepEqual(corsOf(otherPre.headers), { vary: 'Origin' });

    const ok = await call(svc.url, 'POST', '/voice-hub/negotiate?negotiateVersion=1', { headers: { origin: LISTED } });
    assert.equal(ok.status, 200);
    assert.deepEqual(corsOf(ok.headers), ALLOWED);
    const refused = await call(svc.url, 'POST', '/voice-hub/negotiate?negotiateVersion=1', { headers: { origin: OTHER } });
    assert.equal(refused.status, 403);
    assert.equal(refused.text, 'Origin not allowed');
    assert.deepEqual(corsOf(refused.headers), { vary: 'Origin' });
  });

  it('the WebSocket admits the listed origin, the service\'s own pages and no Origin; refuses another', async () => {
    const ws = `ws://127.0.0.1:${svc.port}/voice-hub`;
    assert.equal(await RawClient.refusal(ws, { Origin: LISTED }), 101);
    assert.equal(await RawClient.refusal(ws, { Origin: `http://127.0.0.1:${svc.port}` }), 101);
    assert.equal(await RawClient.refusal(ws), 101);
    assert.equal(await RawClient.refusal(ws, { Origin: OTHER }), 403);
    // ESP8266/ESP32 firmware (arduinoWebSockets) sends `file://`, which no browser does; a browser's file page sends `null`.
    assert.equal(await RawClient.refusal(ws, { Origin: 'file://' }), 101);
    assert.equal(await RawClient.refusal(ws, { Origin: 'null' }), 403);
    const negotiated = await call(svc.url, 'POST', '/voice-hub/negotiate?negotiateVersion=1', { headers: { origin: 'file://' } });
    assert.equal(negotiated.status, 200);
    assert.deepEqual(corsOf(negotiated.headers), { vary: 'Origin' }, 'admitted, but no CORS headers: it is no browser');
  });
});

describe('CORS by default (no origins)', () => {
  let svc: TestService;
  before(async () => {
    svc = await startService();
  });

  it('no origin gets CORS headers; preflights are 204 without them', async () => {
    const pre = await call(svc.url, 'OPTIONS', '/api/device/register', { headers: { origin: LISTED, 'access-control-request-method': 'POST' } });
    assert.equal(pre.status, 204);
    assert.deepEqual(corsOf(pre.headers), {});
    const health = await call(svc.url, 'GET', '/health', { headers: { origin: LISTED } });
    assert.deepEqual(corsOf(health.headers), { vary: 'Accept' }, "only /health's own Vary");
    const negotiate = await call(svc.url, 'POST', '/voice-hub/negotiate?negotiateVersion=1', { headers: { origin: LISTED } });
    assert.equal(negotiate.status, 403);
    const own = await call(svc.url, 'POST', '/voice-hub/negotiate?negotiateVersion=1', { headers: { origin: `http://127.0.0.1:${svc.port}` } });
    assert.equal(own.status, 200, 'a page of the service itself is not cross-origin');
    assert.deepEqual(corsOf(own.headers), {});
  });

  it('the service\'s own origin is its scheme, host and port: a page on the other scheme of that host is refused, on negotiate and the WebSocket', async () => {
    /** The first status of a negotiate (POST) or WebSocket upgrade (GET) naming `host` and `origin`, over a raw socket (fetch sets Host itself). */
    const statusOf = async (method: 'POST' | 'GET', host: string, origin: string, extra: readonly string[] = []): Promise<number> => {
      const request = method === 'POST'
        ? ['POST /voice-hub/negotiate?negotiateVersion=1 HTTP/1.1', 'Content-Length: 0']
        : ['GET /voice-hub HTTP/1.1', 'Upgrade: websocket', 'Connection: Upgrade', 'Sec-WebSocket-Version: 13', 'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ=='];
      const head = [...request, `Host: ${host}`, `Origin: ${origin}`, ...extra, '', ''].join('\r\n');
      const answer = await rawRequest(svc.port, head, 5000, 300);
      return statusesIn(answer.text)[0] ?? 0;
    };
    const withPort = `127.0.0.1:${svc.port}`;
    for (const method of ['POST', 'GET'] as const) {
      const admitted = method === 'POST' ? 200 : 101;
      // As behind port 80: a browser names no port in Host for a default port, so http://127.0.0.1 and
      // https://127.0.0.1 (another server, on 443) both come with `Host: 127.0.0.1`.
      assert.equal(await statusOf(method, '127.0.0.1', 'http://127.0.0.1'), admitted, `${method}: the service's own page`);
      assert.equal(await statusOf(method, '127.0.0.1', 'https://127.0.0.1'), 403, `${method}: a page of another server on https`);
      assert.equal(await statusOf(method, withPort, `http://${withPort}`), admitted, `${method}: own, with a port`);
      assert.equal(await statusOf(method, withPort, `https://${withPort}`), 403, `${method}: https with the port of plain http`);
      // Behind a proxy that terminates TLS (its first X-Forwarded-Proto says https), the pages are https ones.
      assert.equal(await statusOf(method, '127.0.0.1', 'https://127.0.0.1', ['X-Forwarded-Proto: https']), admitted, `${method}: own, behind a TLS proxy`);
      assert.equal(await statusOf(method, '127.0.0.1', 'http://127.0.0.1', ['X-Forwarded-Proto: https']), 403, `${method}: plain http behind a TLS proxy`);
    }
  });

  it('an OPTIONS that is not a preflight is routed as before: 405, and the report on /health, which answers every method', async () => {
    const res = await call(svc.url, 'OPTIONS', '/api/device/list');
    assert.equal(res.status, 405);
    assert.equal(res.headers.get('allow'), 'DELETE, GET');
    const health = await call(svc.url, 'OPTIONS', '/health', { headers: { accept: 'text/plain' } });
    assert.deepEqual([health.status, health.text], [503, 'Unhealthy']);
  });
});

describe('Cors:AllowedOrigins in the configuration', () => {
  const EXPECTED = 'must be an origin as a browser sends it: `http://` or `https://`, a host (no `*` wildcards), an optional port, no path';
  for (const bad of ['*', 'http://*.example.com', 'https://*', 'http://a*b.local:8080', 'dashboard.local', 'http://dashboard.local/', 'http://dashboard.local/app', 'ftp://dashboard.local', 'http://dashboard.local:80', 'null', '']) {
    it(`refuses ${JSON.stringify(bad)}`, () => {
      assert.deepEqual(problemsOf({ env: { Cors__AllowedOrigins__0: bad } }), [
        `Cors.AllowedOrigins[0]: ${JSON.stringify(bad)} from env Cors__AllowedOrigins__0 is invalid: ${EXPECTED}`,
      ]);
    });
  }
  it('accepts http and https origins with and without ports, any letter case', () => {
    for (const good of ['http://dashboard.local:8080', 'https://Ha.Example.com', 'http://192.168.1.20:3000', 'http://[::1]:8123']) {
      assert.throws(() => problemsOf({ env: { Cors__AllowedOrigins__0: good } }), /expected the configuration to be refused/, good);
    }
  });
});
