// Memory a burst took comes back however the service is started. The built bundle runs here WITHOUT
// GLIBC_TUNABLES (as `make run` and the bare executable do; only the systemd unit sets it): 2,000 hub
// connections held open at once, all sending a 1 MB message at the same moment, and 400 requests with
// 1 MB bodies (both within the limits this daemon is configured with), then everything closes. Within 30 s of the load ending RSS (after a forced GC) must be back within
// 20 MiB of its idle figure. glibc's malloc used to keep the freed heap: 265 MB against 98 MB idle.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import { after, describe, it } from 'node:test';
import WebSocket from 'ws';
import { assertHealthyProcess, settledRss, startDaemon, type Daemon } from './daemon.js';
import { sleep, waitUntil, withTimeout } from '../support/wait.js';

const CONNECTIONS = 2000;
/** Client addresses the connections come from: 250 each. */
const HOSTS = 8;
const BODIES = 400;
const MARGIN_MB = 20;
const RETURN_MS = 30_000;
/** Each hub message and request body: large, yet within the limits this daemon is given (LIMIT). */
const SIZE = 1_000_000;
const LIMIT = 2 * 1024 * 1024;

let daemon: Daemon | undefined;
after(async () => {
  await daemon?.stop();
});

const HANDSHAKE = '{"protocol":"json","version":1}\u001e';

/**
 * A hub connection past its handshake, from `localAddress`: the burst comes from many LAN hosts, here
 * loopback addresses, each within Hub.MaximumConnectionsPerAddress.
 */
function hubClient(base: string, localAddress: string): Promise<WebSocket> {
  return withTimeout(new Promise((resolve, reject) => {
    const ws = new WebSocket(`${base.replace(/^http/, 'ws')}/voice-hub`, { perMessageDeflate: false, localAddress });
    ws.once('error', reject);
    ws.once('open', () => ws.send(HANDSHAKE));
    ws.once('message', () => resolve(ws));
  }), 30_000, 'hub client handshake');
}

/** Sizes vary a little, so the service's buffers are not all one size class. */
const SIZE_STEPS = 97;
/**
 * The invocations' UTF-8 text, built once per size: 2,000 sends that each built their own (a repeat,
 * a stringify, a Buffer) cost this process more CPU than the service spends answering them, on the
 * same two cores.
 */
const invocations = Array.from({ length: SIZE_STEPS }, (_, step) => Buffer.from(
  JSON.stringify({ type: 1, invocationId: '1', target: 'NoSuchMethod', arguments: ['x'.repeat(SIZE + step * 13)] }) + '\u001e',
));

/**
 * How long the burst's 2 GB may take to be answered: every reply comes at its end, as the bytes of all
 * connections arrive interleaved. 40 s on this 2-core machine alone, over 60 s on CI beside another
 * test file; three times that, as the same commit varies up to 2x. What is checked here is memory.
 */
const BURST_MS = 180_000;

/** Sends a large invocation of a method that does not exist (parsed in full, answered with a completion error). */
function bigInvocation(ws: WebSocket, i: number): Promise<void> {
  return withTimeout(new Promise((resolve) => {
    ws.once('message', () => resolve());
    ws.once('close', () => resolve());
    ws.send(invocations[i % SIZE_STEPS]!, { binary: false });
  }), BURST_MS, `hub client ${i}`);
}

/** One register request's body, encoded once: a device name too long for the service (answered 400). */
const registerBody = Buffer.from(JSON.stringify({ deviceId: 'big', deviceName: 'y'.repeat(SIZE), deviceType: 'speaker' }));

/**
 * POSTs `body` on a connection of its own and resolves with the status. node:http queues the head and
 * the body before connecting and writes them as the connection opens: fetch (undici) opened all 400
 * connections, then spent seconds on its side before writing each request, and uWS closes a connection
 * that has sent no request for 10 s (CI saw "fetch failed": ECONNRESET). A client that connects must
 * write at once, or the service rightly takes it for an idle one (test/hardening/slow-clients.test.ts).
 */
function postAtOnce(url: string, path: string, body: Buffer, timeoutMs: number): Promise<number> {
  return withTimeout(new Promise((resolve, reject) => {
    const req = http.request(`${url}${path}`, {
      method: 'POST',
      agent: false,
      headers: { 'content-type': 'application/json', 'content-length': String(body.length) },
    }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode!));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  }), timeoutMs, `POST ${path}`);
}

async function burst(d: Daemon): Promise<void> {
  const clients: WebSocket[] = [];
  for (let start = 0; start < CONNECTIONS; start += 200) {
    clients.push(...(await Promise.all(Array.from({ length: 200 }, (_, k) => hubClient(d.url, `127.0.0.${2 + ((start + k) % HOSTS)}`)))));
  }
  // All at once: the service holds every message (and uWS its frame) at the same time.
  await Promise.all(clients.map((ws, i) => bigInvocation(ws, i)));
  // 400 MB sent at once: on a loaded 2-core machine the last of them answers long after one request's
  // usual 15 s, so they get the burst's budget, as the hub messages above do.
  const statuses = await Promise.all(Array.from({ length: BODIES }, () => postAtOnce(d.url, '/api/device/register', registerBody, BURST_MS)));
  assert.deepEqual(statuses, Array.from({ length: BODIES }, () => 400));
  await Promise.all(clients.map((ws) => new Promise<void>((resolve) => {
    if (ws.readyState === WebSocket.CLOSED) return resolve();
    ws.once('close', () => resolve());
    ws.close();
  })));
}

describe('memory after a burst, started without GLIBC_TUNABLES', () => {
  it(`RSS returns within ${MARGIN_MB} MiB of idle within ${RETURN_MS / 1000} s`, async (t) => {
    assert.equal(process.env.GLIBC_TUNABLES, undefined, 'the test runner itself has GLIBC_TUNABLES set');
    const d = await startDaemon({ settings: { Hub: { MaximumReceiveMessageSize: LIMIT }, Server: { MaxBodyBytes: LIMIT } } });
    daemon = d;
    assert.doesNotMatch(readEnviron(d.pid), /GLIBC_TUNABLES=/);
    const idle = await settledRss(d);
    await burst(d);
    const ended = Date.now();
    await d.collectGarbage();
    const peak = d.rssMb();
    let now = peak;
    while (now > idle + MARGIN_MB && Date.now() - ended < RETURN_MS) {
      await sleep(1000);
      await d.collectGarbage();
      now = d.rssMb();
    }
    const seconds = (Date.now() - ended) / 1000;
    t.diagnostic(`RSS idle ${idle.toFixed(1)} MiB, after the burst ${peak.toFixed(1)} MiB, ${seconds.toFixed(0)} s later ${now.toFixed(1)} MiB`);
    assert.ok(now <= idle + MARGIN_MB, `RSS ${now.toFixed(1)} MiB ${seconds.toFixed(0)} s after the burst, idle was ${idle.toFixed(1)} MiB`);
    await waitUntil(() => d.alive(), 'alive');
    assertHealthyProcess(d);
    assert.equal(await d.stop(), 0);
  });
});

const readEnviron = (pid: number): string => readFileSync(`/proc/${pid}/environ`, 'latin1');
