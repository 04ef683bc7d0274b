// AllowedHosts as ASP.NET Core's host filtering (issue 7): the matcher table, then the service: 400 with
// a plain-text body before any routing, for the API and for the hub's negotiate and upgrade.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import WebSocket from 'ws';
import { INVALID_HOST_TEXT, requestGate } from '../../src/http/gate.js';
import { hostName } from '../../src/host-names.js';
import { hostMatcher } from '../../src/http/hosts.js';
import { rawRequest } from '../support/raw-http.js';
import { request, startLoggedService } from './helpers.js';

// Wait this long for a first byte: the HTTP/1.0 case gets none until uWS's idle timeout closes it.
const FIRST_BYTE_MS = 20_000;

describe('hostMatcher (HostString.MatchesAny)', () => {
  const rows: Array<[allowed: string, host: string, expected: boolean]> = [
    ['*', 'anything.example:1234', true],
    ['*', 'anything.example', true],
    ['*', 'not a host', false], // `*` allows any well-formed host; Kestrel refuses a malformed one before any middleware
    ['0:0::1', '[::1]:5000', true], // IPv6 entries compare in canonical text
    ['pi.local', 'pi.local', true],
    ['pi.local', 'PI.LOCAL:5000', true], // case-insensitive, port ignored
    ['pi.local', 'pi.local.evil.com', false],
    ['pi.local', 'evil.com', false],
    ['pi.local;localhost', 'localhost:80', true],
    [' pi.local ; localhost ', 'localhost', true],
    ['pi.local:5000', 'pi.local:6000', true], // a port in an entry is ignored too
    ['*.example.com', 'a.example.com', true],
    ['*.example.com', 'a.b.example.com:443', true],
    ['*.example.com', 'example.com', false], // the wildcard needs a subdomain
    ['*.example.com', 'badexample.com', false],
    ['[::1]', '[::1]:5000', true],
    ['::1', '[::1]', true], // an unbracketed IPv6 entry
    ['[::1]', '[::2]:5000', false],
    ['192.168.1.20', '192.168.1.20:5000', true],
    ['bücher.example', 'xn--bcher-kva.example', true], // Unicode entries compare as punycode
    ['0.0.0.0', 'whatever', true], // Kestrel's any-address entries switch filtering off, as in ASP.NET
    ['[::]', 'whatever', true],
    ['pi.local', 'pi.local:port', false], // malformed
    ['pi.local', '[::1', false],
  ];
  for (const [allowed, host, expected] of rows) {
    it(`${JSON.stringify(allowed)} ${expected ? 'allows' : 'refuses'} Host ${JSON.stringify(host)}`, () => {
      assert.equal(hostMatcher(allowed)(host), expected);
    });
  }

  it('hostName strips ports and keeps IPv6 brackets', () => {
    assert.equal(hostName('Pi.Local:5000'), 'pi.local');
    assert.equal(hostName('[FE80::1]:80'), '[fe80::1]');
    assert.equal(hostName(''), undefined);
  });

  it('the gate allows an empty Host (AllowEmptyHosts) and refuses before any redirect', () => {
    const gate = requestGate({ allowedHosts: 'pi.local', httpsRedirectPort: () => 5001, fallbackHost: 'pi', neverRedirected: '/health' });
    const base = { path: '/api/device/list', query: '', secure: false, forwardedProto: '' };
    assert.equal(gate({ ...base, host: 'evil.com' })?.status, 400);
    assert.deepEqual(gate({ ...base, host: '' }), { status: 308, text: '', headers: { Location: 'https://pi:5001/api/device/list' } });
    assert.equal(gate({ ...base, host: 'pi.local', secure: true }), undefined);
  });
});


function upgradeStatus(port: number, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`ws://127.0.0.1:${port}/voice-hub`, { headers: { host }, handshakeTimeout: 5000 });
    ws.on('unexpected-response', (_req, res) => {
      resolve(res.statusCode ?? 0);
      res.resume();
      ws.terminate();
    });
    ws.on('open', () => {
      resolve(101);
      ws.terminate();
    });
    ws.on('error', reject);
  });
}

describe('AllowedHosts on the running service', { concurrency: true }, () => {
  const flags = { 'Mqtt.BrokerAddress': '', 'VoiceService.EnableVoice': false };

  it('`*` (the default) allows any Host', async () => {
    const svc = await startLoggedService({ flags });
    for (const host of ['pi.local', 'evil.example:8080', '[::1]:5000', '10.0.0.7']) {
      assert.equal((await request(`${svc.url}/health`, { headers: { host } })).status, 200, host);
    }
    assert.equal(await upgradeStatus(svc.port, 'evil.example'), 101);
  });

  it('an exact list: listed names pass with any port; others get 400 text/plain before routing', async () => {
    const svc = await startLoggedService({ flags: { ...flags, AllowedHosts: 'pi.local;localhost;127.0.0.1' } });
    assert.equal((await request(`${svc.url}/health`, { headers: { host: 'pi.local:5000' } })).status, 200);
    assert.equal((await request(`${svc.url}/health`, { headers: { host: 'LOCALHOST' } })).status, 200);
    assert.equal((await request(`${svc.url}/health`)).status, 200); // Host: 127.0.0.1:<port>
    const refused = await request(`${svc.url}/health`, { headers: { host: 'evil.example' } });
    assert.equal(refused.status, 400);
    assert.equal(refused.headers['content-type'], 'text/plain; charset=utf-8');
    assert.equal(refused.text, INVALID_HOST_TEXT);
    // Before routing: an unknown path or a bad body is not even looked at.
    assert.equal((await request(`${svc.url}/no/such/route`, { headers: { host: 'evil.example' } })).text, INVALID_HOST_TEXT);
    const badBody = await request(`${svc.url}/api/device/register`, { method: 'POST', headers: { host: 'evil.example' }, body: { nope: 1 } });
    assert.equal(badBody.status, 400);
    assert.equal(badBody.text, INVALID_HOST_TEXT);
  });

  it('the hub: negotiate and the WebSocket upgrade are filtered too', async () => {
    const svc = await startLoggedService({ flags: { ...flags, AllowedHosts: 'pi.local' } });
    const negotiate = await request(`${svc.url}/voice-hub/negotiate?negotiateVersion=1`, { method: 'POST', headers: { host: 'evil.example' } });
    assert.equal(negotiate.status, 400);
    assert.equal(negotiate.text, INVALID_HOST_TEXT);
    assert.equal((await request(`${svc.url}/voice-hub/negotiate?negotiateVersion=1`, { method: 'POST', headers: { host: 'pi.local:5000' } })).status, 200);
    assert.equal(await upgradeStatus(svc.port, 'evil.example'), 400);
    assert.equal(await upgradeStatus(svc.port, 'pi.local:5000'), 101);
  });

  it('a wildcard allows subdomains only', async () => {
    const svc = await startLoggedService({ flags: { ...flags, AllowedHosts: '*.home.arpa' } });
    assert.equal((await request(`${svc.url}/health`, { headers: { host: 'kitchen.home.arpa:5000' } })).status, 200);
    assert.equal((await request(`${svc.url}/health`, { headers: { host: 'home.arpa' } })).status, 400);
    assert.equal((await request(`${svc.url}/health`, { headers: { host: 'evilhome.arpa' } })).status, 400);
  });

  it('an empty Host header is allowed (AllowEmptyHosts); a request without one is not served by uWS at all', async () => {
    const svc = await startLoggedService({ flags: { ...flags, AllowedHosts: 'pi.local' } });
    const empty = (await rawRequest(svc.port, 'GET /health HTTP/1.1\r\nHost:\r\nAccept: text/plain\r\n\r\n', FIRST_BYTE_MS)).text;
    assert.match(empty, /^HTTP\/1\.1 200 OK\r\n/);
    assert.match(empty, /\r\n\r\nHealthy$/);
    // HTTP/1.0 without Host (which ASP.NET would allow): uWS speaks HTTP/1.1 only and closes such a
    // connection after its idle timeout without an answer, so it never reaches host filtering.
    const old = (await rawRequest(svc.port, 'GET /health HTTP/1.0\r\nAccept: text/plain\r\n\r\n', FIRST_BYTE_MS)).text;
    assert.equal(old, '');
  });
});
