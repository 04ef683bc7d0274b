// Hub.MaximumConnections: a LAN host cannot make the hub hold connection after connection. Beyond the
// limit a WebSocket upgrade is answered 503 with Retry-After; connections still being authenticated
// count, so a burst of slow upgrades cannot overshoot it; a freed place is taken again. And
// Hub.MaximumConnectionsPerAddress: one host cannot take all of those places. Other hosts are other
// loopback addresses here (127.0.0.2 and on), which Linux routes to 127.0.0.1 as any of 127.0.0.0/8.
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { after, describe, it } from 'node:test';
import { RawClient, startHub, type TestHub } from './helpers.js';
import { startService } from '../support/service.js';
import { waitUntil } from '../support/wait.js';

interface Refusal { status: number; retryAfter: string | undefined; body: string }

/** A WebSocket upgrade by hand, to read a refusal's headers and body. */
function upgradeRefusal(url: string): Promise<Refusal> {
  const target = new URL(url);
  return new Promise((resolve, reject) => {
    const req = request({
      host: target.hostname, port: target.port, path: target.pathname + target.search,
      headers: { Connection: 'Upgrade', Upgrade: 'websocket', 'Sec-WebSocket-Version': '13', 'Sec-WebSocket-Key': 'dGhlIHNhbXBsZSBub25jZQ==' },
    });
    req.on('upgrade', (_res, socket) => {
      socket.destroy();
      reject(new Error('the upgrade was accepted'));
    });
    req.on('response', (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, retryAfter: res.headers['retry-after'], body }));
    });
    req.on('error', reject);
    req.end();
  });
}

const wsUrl = (hub: TestHub): string => hub.url.replace(/^http/, 'ws');

const FULL: Refusal = { status: 503, retryAfter: '5', body: 'Too many connections' };
const MINE_FULL: Refusal = { status: 429, retryAfter: '5', body: 'Too many connections from this address' };

describe('the hub holds at most Hub.MaximumConnections connections', () => {
  it('refuses the upgrade beyond the limit with 503 and Retry-After, and takes a freed place again', async (t) => {
    const hub = await startHub({ maximumConnections: 3 });
    t.after(() => hub.stop());
    const clients = await Promise.all([1, 2, 3].map(() => RawClient.connect(wsUrl(hub))));
    assert.deepEqual(await upgradeRefusal(wsUrl(hub)), FULL);
    assert.deepEqual(await upgradeRefusal(wsUrl(hub)), FULL);
    const stats = hub.server.stats();
    assert.equal(stats.connections, 3);
    assert.equal(stats.upgradesRefusedFull, 2);
    clients[0]!.ws.close();
    await waitUntil(() => hub.server.stats().connections === 2, 'a place freed');
    const again = await RawClient.connect(wsUrl(hub));
    assert.equal(hub.server.stats().connections, 3);
    for (const c of [...clients.slice(1), again]) c.ws.close();
  });

  it('counts upgrades whose token is still being checked: ten at once for two places open two', async (t) => {
    const hub = await startHub({
      maximumConnections: 2,
      authenticate: async (token) => {
        await new Promise((resolve) => setTimeout(resolve, 200));
        return token;
      },
    });
    t.after(() => hub.stop());
    const results = await Promise.allSettled(Array.from({ length: 10 }, () => RawClient.connect(wsUrl(hub), { Authorization: 'Bearer t' })));
    const opened = results.filter((r) => r.status === 'fulfilled');
    const refused = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
    assert.equal(opened.length, 2);
    assert.deepEqual(refused.map((r) => String(r.reason)), Array(8).fill('Error: HTTP 503'));
    assert.equal(hub.server.stats().connections, 2);
    for (const r of opened) (r as PromiseFulfilledResult<RawClient>).value.ws.close();
  });
});

describe('one address holds at most Hub.MaximumConnectionsPerAddress connections', () => {
  it('refuses its upgrade beyond the limit with 429 and Retry-After; other addresses still connect; a freed place is taken again', async (t) => {
    const hub = await startHub({ maximumConnectionsPerAddress: 2 });
    t.after(() => hub.stop());
    const mine = [await RawClient.connect(wsUrl(hub)), await RawClient.connect(wsUrl(hub))];
    assert.deepEqual(await upgradeRefusal(wsUrl(hub)), MINE_FULL);
    const others = [await RawClient.connect(wsUrl(hub), {}, '127.0.0.2'), await RawClient.connect(wsUrl(hub), {}, '127.0.0.2'), await RawClient.connect(wsUrl(hub), {}, '127.0.0.3')];
    await assert.rejects(RawClient.connect(wsUrl(hub), {}, '127.0.0.2'), /HTTP 429/);
    const stats = hub.server.stats();
    assert.equal(stats.connections, 5);
    assert.equal(stats.upgradesRefusedPerAddress, 2);
    assert.equal(stats.upgradesRefusedFull, 0);
    mine[0]!.ws.close();
    await waitUntil(() => hub.server.stats().connections === 4, 'a place freed');
    const again = await RawClient.connect(wsUrl(hub));
    assert.deepEqual(await upgradeRefusal(wsUrl(hub)), MINE_FULL);
    assert.equal(hub.server.stats().clientAddresses, 3);
    for (const c of [mine[1]!, again, ...others]) c.ws.close();
    await waitUntil(() => hub.server.stats().clientAddresses === 0, 'every place given back');
  });

  it('counts upgrades whose token is still being checked, and gives back the place of one refused', async (t) => {
    let accept = true;
    const hub = await startHub({
      maximumConnectionsPerAddress: 2,
      authenticate: async (token) => {
        await new Promise((resolve) => setTimeout(resolve, 200));
        if (!accept) throw new Error('bad token');
        return token;
      },
    });
    t.after(() => hub.stop());
    const results = await Promise.allSettled(Array.from({ length: 10 }, () => RawClient.connect(wsUrl(hub), { Authorization: 'Bearer t' })));
    const opened = results.filter((r): r is PromiseFulfilledResult<RawClient> => r.status === 'fulfilled');
    const refused = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
    assert.equal(opened.length, 2);
    assert.deepEqual(refused.map((r) => String(r.reason)), Array(8).fill('Error: HTTP 429'));
    opened[0]!.value.ws.close();
    await waitUntil(() => hub.server.stats().connections === 1, 'a place freed');
    accept = false;
    await assert.rejects(RawClient.connect(wsUrl(hub), { Authorization: 'Bearer t' }), /HTTP 401/);
    await assert.rejects(RawClient.connect(wsUrl(hub), { Authorization: 'Bearer t' }), /HTTP 401/);
    accept = true;
    const again = await RawClient.connect(wsUrl(hub), { Authorization: 'Bearer t' });
    assert.equal(hub.server.stats().connections, 2);
    for (const c of [opened[1]!.value, again]) c.ws.close();
    await waitUntil(() => hub.server.stats().clientAddresses === 0, 'every place given back');
  });

  it('0 switches it off', async (t) => {
    const hub = await startHub({ maximumConnectionsPerAddress: 0, maximumConnections: 5 });
    t.after(() => hub.stop());
    const clients = await Promise.all([1, 2, 3, 4, 5].map(() => RawClient.connect(wsUrl(hub))));
    assert.deepEqual(await upgradeRefusal(wsUrl(hub)), FULL);
    for (const c of clients) c.ws.close();
  });
});

describe('the service takes the limit from its configuration', () => {
  const services: { stop(): Promise<void> }[] = [];
  after(async () => {
    for (const s of services) await s.stop();
  });

  it('--Hub.MaximumConnections 2: the third connection is refused and logged', async () => {
    const service = await startService({ flags: { 'Hub.MaximumConnections': 2 } });
    services.push(service);
    const url = `${service.url.replace(/^http/, 'ws')}/voice-hub`;
    const clients = [await RawClient.connect(url), await RawClient.connect(url)];
    assert.deepEqual(await upgradeRefusal(url), FULL);
    await waitUntil(() => service.logs.some((l) => l.includes('WebSocket upgrade refused: the hub holds 2 connections')), 'the warning');
    // The timestamp off; the debug line every refusal has stays out of the warnings.
    assert.deepEqual(service.logs.filter((l) => l.includes(' warn: ')).map((l) => l.replace(/^\S+ /, '')).filter((l) => l.includes('upgrade refused')),
      ['warn: Hub: WebSocket upgrade refused: the hub holds 2 connections, its limit (503 to the client)']);
    for (const c of clients) c.ws.close();
  });

  it('--Hub.MaximumConnectionsPerAddress 1: a second connection from one address is refused and logged', async () => {
    const service = await startService({ flags: { 'Hub.MaximumConnectionsPerAddress': 1 } });
    services.push(service);
    const url = `${service.url.replace(/^http/, 'ws')}/voice-hub`;
    const clients = [await RawClient.connect(url), await RawClient.connect(url, {}, '127.0.0.2')];
    assert.deepEqual(await upgradeRefusal(url), MINE_FULL);
    await waitUntil(() => service.logs.some((l) => l.includes('WebSocket upgrade refused: 127.0.0.1 holds')), 'the warning');
    assert.deepEqual(service.logs.filter((l) => l.includes(' warn: ')).map((l) => l.replace(/^\S+ /, '')).filter((l) => l.includes('upgrade refused')),
      ['warn: Hub: WebSocket upgrade refused: 127.0.0.1 holds as many connections as one address may (Hub.MaximumConnectionsPerAddress: 1; 429 to the client)']);
    for (const c of clients) c.ws.close();
  });
});
