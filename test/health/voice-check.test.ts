// The voice-service check against real WebSocket servers on 127.0.0.1 (ws, port 0).
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer as createHttpServer, type IncomingMessage } from 'node:http';
import https from 'node:https';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import WebSocket, { WebSocketServer } from 'ws';
import { createVoiceServiceCheck } from '../../src/health/checks.js';
import { UPSTREAM_MAX_MESSAGE_BYTES } from '../../src/upstream/websocket.js';
import { testConfig } from '../support/service.js';
import { tmpDir } from '../support/tmp.js';
import { waitUntil } from '../support/wait.js';
import { freePort } from '../support/ports.js';

interface Upstream {
  url: string;
  connections: number;
  authorizations: (string | undefined)[];
  closeCodes: number[];
}

/** A voice server stand-in that counts connections and records how they were closed. */
async function upstream(verify?: (auth: string | undefined) => boolean): Promise<Upstream> {
  const wss = new WebSocketServer({
    host: '127.0.0.1',
    port: 0,
    verifyClient: verify ? (info: { req: IncomingMessage }) => verify(info.req.headers.authorization) : undefined,
  });
  await new Promise((r) => wss.once('listening', r));
  const u: Upstream = { url: `ws://127.0.0.1:${(wss.address() as net.AddressInfo).port}/voice`, connections: 0, authorizations: [], closeCodes: [] };
  wss.on('connection', (socket, req) => {
    u.connections++;
    u.authorizations.push(req.headers.authorization);
    socket.on('close', (code) => u.closeCodes.push(code));
  });
  after(() => new Promise<void>((r) => wss.close(() => r())));
  return u;
}

const base = { apiKey: 'upstream-key', enabled: () => true, timeoutMs: 5000 };

describe('voice-service check', () => {
  it('is Healthy when the WebSocket opens, sends the API key, and closes with 1000', async () => {
    const u = await upstream();
    const result = await createVoiceServiceCheck({ ...base, serverUrl: u.url })();
    assert.equal(result.status, 'Healthy');
    assert.equal(result.description, `WebSocket connection to ${u.url} opened`);
    assert.equal(result.data?.serverUrl, u.url);
    assert.deepEqual(u.authorizations, ['Bearer upstream-key']);
    await waitUntil(() => u.closeCodes.length === 1, 'the probe to close');
    assert.deepEqual(u.closeCodes, [1000]);
  });

  it('is Unhealthy with the connection error text when nothing listens', async () => {
    const port = await freePort();
    const result = await createVoiceServiceCheck({ ...base, serverUrl: `ws://127.0.0.1:${port}/voice` })();
    assert.equal(result.status, 'Unhealthy');
    assert.equal(result.description, `connect ECONNREFUSED 127.0.0.1:${port}`);
    assert.equal(result.exception, result.description);
  });

  it('is Unhealthy when the server redirects, and says where to', async () => {
    const server = createHttpServer((_req, res) => res.writeHead(301, { Location: 'ws://other.example:5050/voice/?key=secret-value' }).end());
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    after(() => new Promise<void>((resolve) => server.close(() => resolve())));
    const serverUrl = `ws://127.0.0.1:${(server.address() as net.AddressInfo).port}/voice`;
    const result = await createVoiceServiceCheck({ ...base, serverUrl })();
    assert.equal(result.status, 'Unhealthy');
    assert.equal(result.description, 'Unexpected server response: 301 (a redirect to ws://other.example:5050/voice/, not followed: VoiceService.ServerUrl must be the WebSocket address itself)');
  });

  it('is Unhealthy when the server refuses the key', async () => {
    const u = await upstream((auth) => auth === 'Bearer right');
    const result = await createVoiceServiceCheck({ ...base, serverUrl: u.url, apiKey: 'wrong' })();
    assert.equal(result.status, 'Unhealthy');
    assert.equal(result.description, 'Unexpected server response: 401');
  });

  it('is Unhealthy after the timeout when the server never answers the upgrade', async () => {
    const silent = net.createServer(() => {});
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
    after(() => {
      silent.close();
      // Sockets the probe left behind are destroyed by its terminate().
    });
    const url = `ws://127.0.0.1:${(silent.address() as net.AddressInfo).port}/`;
    const result = await createVoiceServiceCheck({ ...base, serverUrl: url, timeoutMs: 200 })();
    assert.equal(result.status, 'Unhealthy');
    assert.equal(result.description, `no WebSocket connection to ${url} within 200 ms`);
  });

  it('reports TLS errors verbatim, and trusts a given CA', async () => {
    const dir = tmpDir();
    const key = path.join(dir, 'key.pem');
    const cert = path.join(dir, 'cert.pem');
    execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', key, '-out', cert, '-days', '1',
      '-subj', '/CN=localhost', '-addext', 'subjectAltName=IP:127.0.0.1'], { stdio: 'pipe' });
    const server = https.createServer({ key: readFileSync(key), cert: readFileSync(cert) });
    const wss = new WebSocketServer({ server });
    let connections = 0;
    wss.on('connection', () => connections++);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    after(() => {
      wss.close();
      server.close();
    });
    const url = `wss://127.0.0.1:${(server.address() as net.AddressInfo).port}/voice`;
    const untrusted = await createVoiceServiceCheck({ ...base, serverUrl: url })();
    assert.equal(untrusted.status, 'Unhealthy');
    assert.equal(untrusted.description, 'self-signed certificate');
    const trusted = await createVoiceServiceCheck({ ...base, serverUrl: url, ca: readFileSync(cert) })();
    assert.equal(trusted.status, 'Healthy');
    assert.equal(connections, 1);
  });

  it('is Healthy without connecting when voice is disabled, and follows the switch', async () => {
    const u = await upstream();
    let enabled = false;
    const check = createVoiceServiceCheck({ ...base, serverUrl: u.url, enabled: () => enabled });
    assert.deepEqual(await check(), { status: 'Healthy', description: 'voice features disabled', data: { serverUrl: u.url }, tags: ['voice', 'upstream'] });
    assert.equal(u.connections, 0);
    enabled = true;
    assert.equal((await check()).status, 'Healthy');
    assert.equal(u.connections, 1);
  });

  it('50 concurrent checks open one upstream connection', async () => {
    const u = await upstream();
    const check = createVoiceServiceCheck({ ...base, serverUrl: u.url, cacheMs: 60_000 });
    const results = await Promise.all(Array.from({ length: 50 }, () => check()));
    assert.ok(results.every((r) => r.status === 'Healthy'));
    assert.equal(u.connections, 1);
    await check(); // within cacheMs: reused
    assert.equal(u.connections, 1);
  });

  it('probes again once the cached result has expired', async () => {
    const u = await upstream();
    const check = createVoiceServiceCheck({ ...base, serverUrl: u.url, cacheMs: 0 });
    await check();
    await check();
    assert.equal(u.connections, 2);
  });

  it('hides credentials and query in the reported URL, and survives an invalid URL', async () => {
    const port = await freePort();
    const result = await createVoiceServiceCheck({ ...base, serverUrl: `ws://user:pw@127.0.0.1:${port}/v?key=secret` })();
    assert.equal(result.data?.serverUrl, `ws://127.0.0.1:${port}/v`);
    assert.doesNotMatch(JSON.stringify(result), /secret|pw@/);
    const invalid = await createVoiceServiceCheck({ ...base, serverUrl: 'not a url' })();
    assert.equal(invalid.status, 'Unhealthy');
    assert.match(invalid.description, /Invalid URL/);
  });

  // What answers at VoiceService.ServerUrl can send the probe anything once the connection opens. With
  // ws' defaults the probe offered permessage-deflate (a few hundred KB inflating to 100 MiB) and took
  // messages up to 100 MiB, held whole while it waited for the close.
  it('offers no compression and takes no message past the link\'s bound, as the sessions\' links do', async () => {
    const wss = new WebSocketServer({ host: '127.0.0.1', port: 0 });
    await new Promise((r) => wss.once('listening', r));
    after(() => new Promise<void>((r) => wss.close(() => r())));
    const offers: (string | undefined)[] = [];
    wss.on('connection', (socket, req) => {
      offers.push(req.headers['sec-websocket-extensions']);
      socket.send(Buffer.alloc(UPSTREAM_MAX_MESSAGE_BYTES + 1));
    });
    // What ws makes of it, seen from its sockets' events (the probe handles none of them after its verdict).
    const seen: string[] = [];
    const emit = WebSocket.prototype.emit;
    WebSocket.prototype.emit = function (this: WebSocket, event: string | symbol, ...args: unknown[]) {
      if (event === 'message') seen.push(`message of ${(args[0] as Buffer).length} bytes`);
      if (event === 'error') seen.push(`error: ${(args[0] as Error).message}`);
      return emit.call(this, event, ...args);
    };
    try {
      const url = `ws://127.0.0.1:${(wss.address() as net.AddressInfo).port}/voice`;
      const result = await createVoiceServiceCheck({ ...base, serverUrl: url })();
      assert.equal(result.status, 'Healthy');
      await waitUntil(() => seen.length > 0, 'ws to read the message');
      assert.deepEqual(seen, ['error: Max payload size exceeded']);
      assert.deepEqual(offers, [undefined]);
    } finally {
      WebSocket.prototype.emit = emit;
    }
  });
  // maxPayload bounds a message's bytes, not its fragments, and ws reads on after the probe's close
  // until the server answers it (or the probe's 2 s are up): one message in 1-byte fragments made each
  // probe hold a Buffer per byte, 115 MB of RSS from 3 MB of traffic, at every /health.
  it('a server that sends a message in more fragments than the link takes is cut off at once, not held 2 s', async () => {
    const fragments = 200_000;
    const frames = [Buffer.from([0x01, 1, 0x61])]; // text, not final, 1 byte
    for (let i = 1; i < fragments; i++) frames.push(Buffer.from([0x00, 1, 0x61])); // continuation, not final
    const bytes = Buffer.concat(frames);
    let closedAt = 0;
    const server = net.createServer((s) => {
      s.on('error', () => {});
      s.on('close', () => (closedAt = performance.now()));
      s.once('data', (request) => {
        const key = /sec-websocket-key: (.*)\r\n/i.exec(request.toString())![1]!;
        const accept = createHash('sha1').update(key + '258EAFA5-E914-47DA-95CA-C5AB0DC85B11').digest('base64');
        s.write(`HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${accept}\r\n\r\n`);
        // The message never ends, and the probe's close frame is read and never answered.
        s.write(bytes);
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    after(() => new Promise<void>((r) => server.close(() => r())));
    const url = `ws://127.0.0.1:${(server.address() as net.AddressInfo).port}/voice`;
    const result = await createVoiceServiceCheck({ ...base, serverUrl: url })();
    const verdictAt = performance.now();
    assert.equal(result.status, 'Healthy');
    await waitUntil(() => closedAt > 0, 'the probe to drop the connection', 5000, 10);
    // Cut off as the reads pass 4,096 fragments: milliseconds, where the close grace is 2,000 ms.
    assert.ok(closedAt - verdictAt < 1000, `the probe held the connection ${Math.round(closedAt - verdictAt)} ms`);
  });
});

/** A link-local IPv6 address of this machine and its interface (`fe80::...`, `eth0`), if it has one (loopback has none). */
function linkLocal(): { address: string; zone: string } | undefined {
  for (const [zone, addresses] of Object.entries(os.networkInterfaces())) {
    const found = addresses?.find((a) => a.family === 'IPv6' && a.address.startsWith('fe80:'));
    if (found) return { address: found.address, zone };
  }
  return undefined;
}

// A voice server on a link-local address, `ws://[fe80::1%25eth0]:5050/voice` (RFC 6874): the configuration
// refused it ("must be a ws:// or wss:// URL without a fragment") and `ws` could not parse it: URL parsers
// refuse any zone. The zone picks the interface; the Host header carries none.
describe('voice-service check of a server on a link-local address (a zone)', () => {
  it('the configuration takes such a ServerUrl', () => {
    const { loaded } = testConfig({ flags: { 'VoiceService.ServerUrl': 'ws://[fe80::1%25eth0]:5050/voice' } });
    assert.equal(loaded.config.VoiceService.ServerUrl, 'ws://[fe80::1%25eth0]:5050/voice');
  });

  it('is Healthy, dialled through the zone, shown with it, the Host without it', { skip: linkLocal() === undefined && 'no link-local IPv6 address here' }, async () => {
    const { address, zone } = linkLocal()!;
    const wss = new WebSocketServer({ host: `${address}%${zone}`, port: 0 });
    await new Promise((r) => wss.once('listening', r));
    after(() => new Promise<void>((r) => wss.close(() => r())));
    const hosts: (string | undefined)[] = [];
    const auths: (string | undefined)[] = [];
    wss.on('connection', (_socket, req) => {
      hosts.push(req.headers.host);
      auths.push(req.headers.authorization);
    });
    const port = (wss.address() as net.AddressInfo).port;
    const serverUrl = `ws://[${address}%25${zone}]:${port}/voice`;
    const result = await createVoiceServiceCheck({ ...base, serverUrl })();
    assert.deepEqual({ status: result.status, description: result.description }, { status: 'Healthy', description: `WebSocket connection to ${serverUrl} opened` });
    assert.deepEqual({ hosts, auths }, { hosts: [`[${address}]:${port}`], auths: ['Bearer upstream-key'] });
  });

  it('over TLS: the certificate is checked against the address without its zone', { skip: linkLocal() === undefined && 'no link-local IPv6 address here' }, async () => {
    const { address, zone } = linkLocal()!;
    const dir = tmpDir();
    const key = path.join(dir, 'key.pem');
    const cert = path.join(dir, 'cert.pem');
    execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', key, '-out', cert, '-days', '1',
      '-subj', '/CN=voice', '-addext', `subjectAltName=IP:${address}`], { stdio: 'pipe' });
    const server = https.createServer({ key: readFileSync(key), cert: readFileSync(cert) });
    const wss = new WebSocketServer({ server });
    await new Promise<void>((r) => server.listen(0, `${address}%${zone}`, r));
    after(() => {
      wss.close();
      server.close();
    });
    const serverUrl = `wss://[${address}%25${zone}]:${(server.address() as net.AddressInfo).port}/voice`;
    const trusted = await createVoiceServiceCheck({ ...base, serverUrl, ca: readFileSync(cert) })();
    assert.deepEqual({ status: trusted.status, description: trusted.description }, { status: 'Healthy', description: `WebSocket connection to ${serverUrl} opened` });
  });
});
