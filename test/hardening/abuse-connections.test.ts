// 2,000 connections opened and dropped quickly: hub WebSockets (with and without a handshake, after
// negotiate, cut mid-handshake) and HTTP (answered, cut mid-headers, cut mid-body, cut at once).
// Against the built bundle: its open file descriptors return to the baseline (no socket kept) and
// its RSS to within 10 MiB of the baseline (both after a full GC forced through the daemon's
// inspector; a leak of even 5 KB per connection would pass that). In-process, where the hub can be asked: its connection count and pending negotiations
// return to 0, and it saw every connection.
import assert from 'node:assert/strict';
import net from 'node:net';
import { after, describe, it } from 'node:test';
import WebSocket from 'ws';
import { silentLogger } from '../../src/log/logger.js';
import { startEchoServer } from '../../src/upstream/echo-server.js';
import { call } from '../support/http.js';
import { startService } from '../support/service.js';
import { registerDevice } from '../support/tokens.js';
import { assertHealthyProcess, assertMemoryReturns, settledRss, startDaemon, type Daemon } from './daemon.js';
import { HubWire } from './hub-wire.js';
import { waitUntil, withTimeout } from '../support/wait.js';

const MARGIN_MB = 10;
const WAVE = 100;

let daemon: Daemon | undefined;
after(async () => {
  await daemon?.stop();
});

const wsUrl = (base: string, query = ''): string => `${base.replace(/^http/, 'ws')}/voice-hub${query}`;

/** Opens a hub socket; `then` decides what happens once it is open; resolves when it is gone. */
function hubSocket(url: string, then: (ws: WebSocket) => void): Promise<void> {
  return withTimeout(new Promise<void>((resolve) => {
    const ws = new WebSocket(url, { perMessageDeflate: false });
    ws.on('error', () => {});
    ws.once('open', () => then(ws));
    ws.once('close', () => resolve());
  }), 10_000, 'hub socket to close');
}

/** Writes `data` (if any) on a raw TCP connection and destroys it after `ms` or at the first answer byte. */
function tcp(port: number, data: string | undefined, ms: number): Promise<void> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    const done = (): void => {
      socket.destroy();
      resolve();
    };
    socket.on('error', done);
    socket.on('connect', () => {
      if (data === undefined) return done();
      socket.write(data);
      setTimeout(done, ms);
    });
    socket.on('data', done);
  });
}

const HANDSHAKE = '{"protocol":"json","version":1}\u001e';

/** The i-th of the 2,000 drops: eight kinds in turn, half hub, half HTTP. */
async function drop(base: string, port: number, i: number): Promise<void> {
  switch (i % 8) {
    case 0: // handshake, then cut
      return hubSocket(wsUrl(base), (ws) => {
        ws.once('message', () => ws.terminate());
        ws.send(HANDSHAKE);
      });
    case 1: // cut before any handshake
      return hubSocket(wsUrl(base), (ws) => ws.terminate());
    case 2: { // negotiate, connect with the id, handshake, close politely
      const res = await fetch(`${base}/voice-hub/negotiate?negotiateVersion=1`, { method: 'POST' });
      const { connectionToken } = (await res.json()) as { connectionToken: string };
      return hubSocket(wsUrl(base, `?id=${connectionToken}`), (ws) => {
        ws.once('message', () => ws.close());
        ws.send(HANDSHAKE);
      });
    }
    case 3: // half a handshake, then cut
      return hubSocket(wsUrl(base), (ws) => {
        ws.send('{"protocol":"js');
        setTimeout(() => ws.terminate(), 5);
      });
    case 4: // an answered request on a keep-alive connection, then cut
      return tcp(port, 'GET /api/device/list HTTP/1.1\r\nHost: x\r\n\r\n', 2000);
    case 5: // cut in the middle of the headers
      return tcp(port, 'GET /api/device/list HTTP/1.1\r\nHost: x\r\nAuthori', 5);
    case 6: // cut in the middle of a body the handler is waiting for
      return tcp(port, 'POST /api/device/register HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"deviceId":', 5);
    default: // connect and cut at once
      return tcp(port, undefined, 0);
  }
}

async function dropMany(base: string, port: number, count: number): Promise<void> {
  for (let start = 0; start < count; start += WAVE) {
    await Promise.all(Array.from({ length: Math.min(WAVE, count - start) }, (_, k) => drop(base, port, start + k)));
  }
}

describe('2,000 connections opened and dropped', () => {
  it('the built bundle keeps no socket and its RSS returns to the baseline', async (t) => {
    const d = await startDaemon();
    daemon = d;
    await dropMany(d.url, d.port, 400); // warm-up: every path once, JIT and pools settled
    await waitUntil(() => d.fds() <= 30, 'sockets of the warm-up to close', 15_000, 100);
    const baselineFds = d.fds();
    const baseline = await settledRss(d);
    await dropMany(d.url, d.port, 2000);
    await waitUntil(() => d.fds() <= baselineFds, `open fds back to ${baselineFds} (now ${d.fds()})`, 15_000, 100);
    const rss = await assertMemoryReturns(d, baseline, MARGIN_MB);
    assertHealthyProcess(d);
    t.diagnostic(`fds ${baselineFds} -> ${d.fds()}, RSS baseline ${baseline.toFixed(1)} MiB, after ${rss.toFixed(1)} MiB`);
    assert.equal(await d.stop(), 0);
  });

  it('in-process: the hub saw every connection and forgot each one', async () => {
    const svc = await startService();
    const before = svc.app.hub.stats();
    await dropMany(svc.url, svc.port, 2000);
    await waitUntil(() => svc.app.hub.connectionCount() === 0, `hub connections to drop to 0 (now ${svc.app.hub.connectionCount()})`, 15_000, 50);
    const stats = svc.app.hub.stats();
    assert.equal(stats.connections, 0);
    assert.equal(stats.pendingNegotiations, 0, 'every negotiation was claimed and released');
    assert.equal(stats.groups, 0);
    assert.equal(stats.clientAddresses, 0, 'every place taken per address was given back');
    // Four hub kinds of eight: 1,000 sockets, each opened on the hub.
    assert.equal(stats.connectionsOpened! - before.connectionsOpened!, 1000);
  });

  // Found here: each session a device joined stayed a group (and a uWS topic) of its connection for
  // as long as the connection lived, so a device that keeps its hub connection grew the hub forever.
  it('a connection kept across 100 sessions holds only the group of its live session', async () => {
    const echo = await startEchoServer({ host: '127.0.0.1', port: 0, logger: silentLogger });
    try {
      const svc = await startService({ flags: { 'VoiceService.ServerUrl': `ws://127.0.0.1:${echo.port}/voice` } });
      const device = await registerDevice(svc);
      const wire = await HubWire.connect(svc.url, 'messagepack');
      for (let i = 0; i < 100; i++) {
        // Each start replaces (ends) the device's previous session.
        const res = await call(svc.url, 'POST', '/api/voice/start', { token: device.token, body: { deviceId: device.id, userId: 'anna' } });
        assert.equal(res.status, 200, res.text);
        await wire.join(res.json.sessionId, device.token);
      }
      assert.equal(svc.app.hub.stats().groups, 1);
      assert.equal(wire.of('SessionEnded').length, 99, 'every replaced session told its group');
      wire.close();
    } finally {
      await echo.close();
    }
  });
});
