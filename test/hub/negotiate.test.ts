// Negotiation bookkeeping and the request helpers: versions, ids, expiry, bounds, tokens, CORS.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CORS_ALLOW_HEADERS, corsPolicy } from '../../src/http/cors.js';
import { overTls } from '../../src/http/forwarded-proto.js';
import { NegotiationStore, bearerToken, negotiateResponse, parseNegotiateVersion, queryParam } from '../../src/hub/negotiate.js';

describe('negotiate version, as ASP.NET Core reads it (int.TryParse)', () => {
  const NOT_INTEGER = { error: 'The client requested a non-integer protocol version.' };
  const table: [string | null, ReturnType<typeof parseNegotiateVersion>][] = [
    [null, { version: 0 }], ['0', { version: 0 }], ['1', { version: 1 }], ['2', { version: 1 }], ['99', { version: 1 }],
    [' 1 ', { version: 1 }], ['+1', { version: 1 }], ['007', { version: 1 }], ['-0', { version: 0 }], ['2147483647', { version: 1 }],
    ['', NOT_INTEGER], ['x', NOT_INTEGER], ['1.5', NOT_INTEGER], ['1,0', NOT_INTEGER], ['2147483648', NOT_INTEGER], ['1 1', NOT_INTEGER],
    ['-1', { error: "The client requested version '-1', but the server does not support this version." }],
    ['-2147483648', { error: "The client requested version '-2147483648', but the server does not support this version." }],
  ];
  for (const [raw, expected] of table) it(`${JSON.stringify(raw)} -> ${JSON.stringify(expected)}`, () => assert.deepEqual(parseNegotiateVersion(raw), expected));
});

describe('query parameters, as ASP.NET Core reads them', () => {
  const q = (text: string) => new URLSearchParams(text);
  it('names match ignoring case', () => {
    assert.equal(queryParam(q('ID=abc'), 'id'), 'abc');
    assert.equal(queryParam(q('NegotiateVersion=1'), 'negotiateVersion'), '1');
    assert.equal(queryParam(q('Access_Token=t'), 'access_token'), 't');
  });
  it('several values are joined with commas; an absent name is null', () => {
    assert.equal(queryParam(q('negotiateVersion=1&NEGOTIATEVERSION=0'), 'negotiateVersion'), '1,0');
    assert.equal(queryParam(q('other=1'), 'id'), null);
    assert.equal(queryParam(q('id='), 'id'), '');
  });
});

describe('negotiation store', () => {
  it('version 1 has a separate secret token; version 0 uses the connection id', () => {
    const store = new NegotiationStore(1000, 10);
    const v1 = store.create(1, undefined, 0, '127.0.0.1')!;
    const v0 = store.create(0, undefined, 0, '127.0.0.1')!;
    assert.notEqual(v1.key, v1.connectionId);
    assert.equal(v0.key, v0.connectionId);
    assert.match(v1.key, /^[A-Za-z0-9_-]{22}$/);
    assert.deepEqual(Object.keys(negotiateResponse(v1)).sort(), ['availableTransports', 'connectionId', 'connectionToken', 'negotiateVersion']);
    assert.deepEqual(Object.keys(negotiateResponse(v0)).sort(), ['availableTransports', 'connectionId', 'negotiateVersion']);
    assert.deepEqual(negotiateResponse(v1).availableTransports, [{ transport: 'WebSockets', transferFormats: ['Text', 'Binary'] }]);
  });

  it('claims once: a second claim is in use, a released one is unknown', () => {
    const store = new NegotiationStore(1000, 10);
    const n = store.create(1, { name: 'u' }, 0, '127.0.0.1')!;
    const first = store.claim(n.key, 1);
    assert.equal(first.kind, 'claimed');
    assert.deepEqual(first.kind === 'claimed' && first.negotiation.user, { name: 'u' });
    assert.equal(store.claim(n.key, 2).kind, 'in-use');
    store.release(n.key);
    assert.equal(store.claim(n.key, 3).kind, 'not-found');
    assert.equal(store.claim('unknown', 3).kind, 'not-found');
  });

  it('expires unused negotiations', () => {
    const store = new NegotiationStore(100, 10);
    const old = store.create(1, undefined, 0, '127.0.0.1')!;
    const young = store.create(1, undefined, 80, '127.0.0.1')!;
    assert.equal(store.claim(old.key, 100).kind, 'not-found', 'too old to claim');
    assert.equal(store.expire(150), 1);
    assert.equal(store.waitingCount(), 1);
    assert.equal(store.claim(young.key, 150).kind, 'claimed');
    assert.equal(store.expire(1000), 0, 'claimed ones do not expire');
  });

  it('keeps at most maxWaiting, dropping the oldest', () => {
    const store = new NegotiationStore(10_000, 3);
    const all = Array.from({ length: 5 }, (_, i) => store.create(1, undefined, i, '127.0.0.1')!);
    assert.equal(store.waitingCount(), 3);
    assert.equal(store.claim(all[0]!.key, 10).kind, 'not-found');
    assert.equal(store.claim(all[1]!.key, 10).kind, 'not-found');
    assert.equal(store.claim(all[4]!.key, 10).kind, 'claimed');
  });
});

describe('bearer token', () => {
  const table: [string, string | null, string | undefined][] = [
    ['Bearer abc', null, 'abc'],
    ['bearer abc', null, 'abc'],
    ['Bearer   abc  ', null, 'abc'],
    ['', 'q', 'q'],
    ['Bearer h', 'q', 'h'],
    ['Basic xyz', null, undefined],
    ['Bearer ', '', undefined],
    ['', null, undefined],
  ];
  for (const [header, query, expected] of table) {
    it(`${JSON.stringify(header)} + ${JSON.stringify(query)}`, () => assert.equal(bearerToken(header, query), expected));
  }
});

describe('CORS', () => {
  const policy = corsPolicy(['http://Pi.local:8080']);

  it('echoes the exact listed origin with credentials, never *; origins compare without letter case', () => {
    assert.deepEqual(policy.headers('http://pi.local:8080'), {
      'Access-Control-Allow-Origin': 'http://pi.local:8080',
      'Access-Control-Allow-Credentials': 'true',
      Vary: 'Origin',
    });
    assert.deepEqual(policy.headers(''), {});
    assert.deepEqual(policy.headers('http://other.local'), { Vary: 'Origin' }, 'an unlisted origin gets no CORS headers');
    assert.deepEqual(corsPolicy([]).headers('http://other.local'), {}, 'no list: nothing varies by origin');
  });

  it('preflight allows the SignalR client and API headers for a listed origin only', () => {
    const headers = policy.preflight('http://pi.local:8080');
    assert.equal(headers['Access-Control-Allow-Headers'], CORS_ALLOW_HEADERS);
    for (const h of ['x-requested-with', 'x-signalr-user-agent', 'authorization', 'content-type', 'x-api-key']) assert.ok(CORS_ALLOW_HEADERS.includes(h));
    assert.equal(headers['Access-Control-Allow-Methods'], 'GET, POST, PUT, DELETE, OPTIONS');
    assert.equal(headers['Access-Control-Max-Age'], '600');
    assert.deepEqual(policy.preflight('http://evil.example'), { Vary: 'Origin' });
  });

  it('admits no Origin, the service\'s own pages and listed origins', () => {
    assert.equal(policy.admits('', 'pi.local:5000', false), true);
    assert.equal(policy.admits('http://pi.local:5000', 'pi.local:5000', false), true, 'same scheme, host and port');
    assert.equal(policy.admits('https://pi.local:5001', 'pi.local:5001', true), true, 'same scheme, host and port, over TLS');
    assert.equal(policy.admits('http://pi.local:8080', 'pi.local:5000', false), true, 'listed');
    assert.equal(policy.admits('http://pi.local:8080', 'pi.local:5000', true), true, 'listed, whatever the request came over');
    assert.equal(policy.admits('http://evil.example', 'pi.local:5000', false), false);
    assert.equal(policy.admits('null', 'pi.local:5000', false), false);
    assert.equal(policy.admits('http://pi.local:5000', '', false), false, 'no Host to be the same as');
  });

  it('the service\'s own origin includes its scheme: the other scheme\'s default port is another server', () => {
    // A service on port 80 and a page of another server at https://pi.local (port 443): both name `Host: pi.local`.
    assert.equal(policy.admits('https://pi.local', 'pi.local', false), false);
    assert.equal(policy.admits('http://pi.local', 'pi.local', false), true);
    assert.equal(policy.admits('http://pi.local', 'pi.local', true), false, 'a service on 443 and a page on port 80');
    assert.equal(policy.admits('https://pi.local', 'pi.local', true), true);
    assert.equal(policy.admits('https://pi.local:5000', 'pi.local:5000', false), false);
    assert.equal(policy.admits('ws://pi.local:5000', 'pi.local:5000', false), false, 'no page has a ws: origin');
  });

  it('overTls: TLS, or a proxy\'s first X-Forwarded-Proto entry saying https', () => {
    assert.equal(overTls(true, ''), true);
    assert.equal(overTls(false, ''), false);
    assert.equal(overTls(false, 'https'), true);
    assert.equal(overTls(false, ' HTTPS , http'), true);
    assert.equal(overTls(false, 'http, https'), false, 'the entry of the proxy nearest the client counts');
    assert.equal(overTls(true, 'http'), true, 'a request over TLS is over TLS');
  });
});
