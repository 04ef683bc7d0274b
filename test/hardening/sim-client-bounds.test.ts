// `voice-hub simulate` pointed at a host that is not voice-hub, or a hostile one: what it reads is
// bounded. Its API requests and its SignalR client's negotiate stop reading past MAX_ANSWER_BYTES and drop
// the connection; its SignalR WebSocket takes messages up to SIM_MAX_MESSAGE_BYTES (more than any the hub
// sends) and offers no compression, where ws' defaults would take 100 MiB, or reach it from a few
// hundred KB of deflated frames.
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { WebSocketServer, type WebSocket } from 'ws';
import { MAX_ANSWER_BYTES } from '../../src/cli/bounded-answer.js';
import { buildSimConnection, SIM_MAX_MESSAGE_BYTES } from '../../src/cli/sim-client.js';
import { apiRequest } from '../../src/cli/sim-device.js';
import { endlessAnswer, type EndlessAnswer } from '../support/endless-answer.js';
import { runBundle } from '../support/service.js';
import { waitUntil, withTimeout } from '../support/wait.js';

const RS = '\u001e';

/** A loopback HTTP server whose every answer is made by `answer`, swapped per case, and a WebSocket endpoint. */
let answer: (req: IncomingMessage, res: ServerResponse) => void = (_req, res) => res.end();
let onSocket: (ws: WebSocket, req: IncomingMessage) => void = (ws) => ws.close();
let server: Server;
let wss: WebSocketServer;
let base: string;
before(async () => {
  server = createServer((req, res) => answer(req, res));
  wss = new WebSocketServer({ server, perMessageDeflate: true, maxPayload: 1024 * 1024 });
  wss.on('connection', (ws, req) => onSocket(ws, req));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
after(() => {
  for (const c of wss.clients) c.terminate();
  wss.close();
  server.closeAllConnections();
  server.close();
});

/** The endless answer (test/support/endless-answer.ts) to every request from now on. */
function endless(): EndlessAnswer {
  const far = endlessAnswer();
  answer = (_req, res) => far.answer(res);
  return far;
}

const api = () => ({ baseUrl: base, timeoutMs: 10_000 });

describe('simulate: API answers are read up to 1 MiB', () => {
  it('an endless answer: the request fails saying so, and the connection is dropped', async () => {
    const far = endless();
    await assert.rejects(apiRequest(api(), 'POST', '/api/device/register', { deviceId: 'x' }), {
      message: `POST ${base}/api/device/register: HTTP 200 answered with more than 1 MiB, far more than voice-hub sends: stopped reading`,
    });
    await waitUntil(far.closed, 'the connection dropped', 2000);
    // What the sockets' buffers held on top of the bound, not the 512 MiB the server would write.
    assert.ok(far.written() < MAX_ANSWER_BYTES + 32 * 1024 * 1024, `the server wrote ${far.written()} bytes`);
  });

  it('an answer that declares 400 MB: refused before reading it', async () => {
    answer = (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(400 * 1024 * 1024) });
      res.write('{"deviceId":');
    };
    await assert.rejects(apiRequest(api(), 'POST', '/api/voice/start', {}), {
      message: `POST ${base}/api/voice/start: HTTP 200 answered with more than 1 MiB, far more than voice-hub sends: stopped reading`,
    });
  });

  it('an answer within the bound is read whole', async () => {
    const big = 'a'.repeat(MAX_ANSWER_BYTES - 100);
    answer = (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ big }));
    };
    const got = await apiRequest(api(), 'GET', '/api/anything');
    assert.deepEqual(got.json, { big });
  });
});

describe('simulate: the SignalR client is bounded', () => {
  it('an endless negotiate answer: start() fails saying so, and the connection is dropped', async () => {
    const far = endless();
    const connection = buildSimConnection(`${base}/hubs/voice`, { protocol: 'json' });
    await assert.rejects(withTimeout(connection.start(), 10_000, 'start'), (e: Error) => {
      assert.match(e.message, /POST http:\/\/127\.0\.0\.1:\d+\/hubs\/voice\/negotiate\?negotiateVersion=1: HTTP 200 answered with more than 1 MiB, far more than voice-hub sends: stopped reading/);
      return true;
    });
    await waitUntil(far.closed, 'the connection dropped', 2000);
    assert.ok(far.written() < MAX_ANSWER_BYTES + 32 * 1024 * 1024, `the server wrote ${far.written()} bytes`);
  });

  it('a negotiate that cannot connect: start() fails naming the request and why, not only "request failed"', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const { port } = closed.address() as AddressInfo;
    await new Promise((resolve) => closed.close(resolve));
    const connection = buildSimConnection(`http://127.0.0.1:${port}/voice-hub`, { protocol: 'json' });
    await assert.rejects(withTimeout(connection.start(), 10_000, 'start'), {
      message: `Failed to complete negotiation with the server: Error: POST http://127.0.0.1:${port}/voice-hub/negotiate?negotiateVersion=1: connect ECONNREFUSED 127.0.0.1:${port}`,
    });
  });

  const EMPTY_INVOCATION = JSON.stringify({ type: 1, target: 'Big', arguments: [''] });
  /** The length of the text argument that makes the invocation `size` bytes with its separator. */
  const argumentLength = (size: number): number => size - EMPTY_INVOCATION.length - 1;

  /** A hub that completes the handshake, then sends one invocation of `Big`, `size` bytes on the wire. */
  function hubSending(size: number): { offered: () => string | undefined; closedWith: () => number | undefined } {
    let offered: string | undefined;
    let closedWith: number | undefined;
    onSocket = (ws, req) => {
      offered = req.headers['sec-websocket-extensions'];
      ws.on('close', (code) => { closedWith = code; });
      ws.once('message', () => {
        ws.send(`{}${RS}`);
        // Once start() has resolved on the handshake answer.
        setTimeout(() => ws.send(`${EMPTY_INVOCATION.slice(0, -3)}${'b'.repeat(argumentLength(size))}"]}${RS}`), 100);
      });
    };
    return { offered: () => offered, closedWith: () => closedWith };
  }

  it('a message over the bound: the client closes with 1009 and delivers nothing; it offered no compression', async () => {
    const hub = hubSending(SIM_MAX_MESSAGE_BYTES + 1024);
    const connection = buildSimConnection(`${base}/hubs/voice`, { protocol: 'json', skipNegotiation: true });
    let received = 0;
    connection.on('Big', () => { received++; });
    const closed = new Promise<Error | undefined>((resolve) => connection.onclose(resolve));
    await withTimeout(connection.start(), 10_000, 'start');
    const error = await withTimeout(closed, 10_000, 'the close');
    assert.match(String(error?.message), /^WebSocket closed with status code: \d+/);
    await waitUntil(() => hub.closedWith() !== undefined, 'the server saw the close', 2000);
    assert.equal(hub.closedWith(), 1009, 'the client closed with 1009 (message too big)');
    assert.equal(received, 0);
    assert.equal(hub.offered(), undefined);
  });

  it('a message within the bound (larger than the hub forwards from its voice server) is delivered', async () => {
    hubSending(SIM_MAX_MESSAGE_BYTES - 1024);
    const connection = buildSimConnection(`${base}/hubs/voice`, { protocol: 'json', skipNegotiation: true });
    const got = new Promise<string>((resolve) => connection.on('Big', resolve));
    await withTimeout(connection.start(), 10_000, 'start');
    assert.equal((await withTimeout(got, 10_000, 'the message')).length, argumentLength(SIM_MAX_MESSAGE_BYTES - 1024));
    await connection.stop();
  });
});

describe('simulate: what the host answers reaches the terminal visible, one line each', () => {
  it('a refusal whose detail holds an escape sequence and a newline: quoted on its line, the escape written out', async () => {
    answer = (_req, res) => {
      res.writeHead(400, { 'content-type': 'application/problem+json' });
      res.end(JSON.stringify({ title: 'Bad Request', status: 400, detail: 'bad\x1b[31mred\nresult: OK (forged)' }));
    };
    const res = await runBundle(['simulate', '--url', base, '--devices', '1', '--seconds', '1'], {}, 30_000);
    assert.equal(res.code, 1, res.stderr);
    const quoted = 'POST /api/device/register: HTTP 400 bad\\x1b[31mred result: OK (forged)';
    assert.match(res.stderr, new RegExp(`^fail: sim-\\w+-1: ${escapeRegExp(quoted)}$`, 'm'));
    assert.match(res.stdout, new RegExp(`^device sim-\\w+-1 failed: ${escapeRegExp(quoted)}$`, 'm'));
    assert.doesNotMatch(res.stdout + res.stderr, /\x1b|^result: OK/m);
  });
});

const escapeRegExp = (text: string): string => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
