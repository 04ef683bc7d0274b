// A client that pipelines requests and never reads its answers, against the service (a daemon on a
// loopback port). Before answers were written with tryEnd, uWS kept every answer the socket could not
// take: 1.1 MB of pipelined GETs for the OpenAPI document took the service from 79 MB to 765 MB, and a
// client writing small pipelined 404s grew it by 15 MB/s. Now at most one answer per connection waits
// in the service; uWS closes a connection whose next request arrives behind it. A client that reads
// slowly still gets a large answer whole.
//
// RSS bound: baseline + 40 MiB at every sample (one waiting answer is at most the largest asset, about
// 1.5 MB; the rest is garbage V8 collects at its own pace). Keeping the answers passed 400 MiB here.
import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, describe, it } from 'node:test';
import { assertHealthyProcess, settledRss, startDaemon, type Daemon } from './daemon.js';
import { sleep, waitUntil } from '../support/wait.js';

const RSS_BOUND_MB = 40;
let daemon: Daemon;

before(async () => {
  daemon = await startDaemon();
});

after(async () => {
  await daemon?.stop();
});

const get = (path: string): string => `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`;

/** A connection that writes `chunk` every 20 ms for `ms` and never reads; resolves with whether the service closed it. */
function unreadPipeliner(port: number, chunk: string, ms: number, sample: () => void): Promise<boolean> {
  return new Promise((resolve) => {
    let closed = false;
    const socket = net.connect(port, '127.0.0.1', () => socket.pause());
    socket.on('error', () => {});
    socket.on('close', () => (closed = true));
    const timer = setInterval(() => {
      sample();
      if (!socket.destroyed) socket.write(chunk);
    }, 20);
    setTimeout(() => {
      clearInterval(timer);
      socket.destroy();
      resolve(closed);
    }, ms);
  });
}

describe('answers a client does not read', () => {
  for (const [name, path, repeat] of [['the OpenAPI document', '/swagger/v1/swagger.json', 500], ['404s', '/api/nothing', 2000]] as const) {
    it(`pipelined ${name}, never read: the service closes the connection and its memory stays bounded`, async () => {
      const baseline = await settledRss(daemon);
      let maxRss = baseline;
      const closed = await unreadPipeliner(daemon.port, get(path).repeat(repeat), 4000, () => (maxRss = Math.max(maxRss, daemon.rssMb())));
      assert.ok(closed, 'the service closed the connection');
      assert.ok(maxRss <= baseline + RSS_BOUND_MB, `RSS peaked at ${maxRss.toFixed(1)} MiB, baseline ${baseline.toFixed(1)} MiB`);
      const health = await fetch(`${daemon.url}/health`);
      assert.ok([200, 503].includes(health.status), `health answered ${health.status}`);
      assertHealthyProcess(daemon);
    });
  }

  it('a large answer read slowly arrives whole, and the connection goes on to the next request', async () => {
    const alone = Buffer.from(await (await fetch(`${daemon.url}/swagger/v1/swagger.json`)).arrayBuffer());
    const socket = net.connect(daemon.port, '127.0.0.1');
    socket.on('error', () => {});
    await new Promise<void>((resolve) => socket.once('connect', resolve));
    socket.pause();
    const chunks: Buffer[] = [];
    socket.on('data', (d: Buffer) => chunks.push(d));
    socket.write(get('/swagger/v1/swagger.json'));
    // Reads a little every 10 ms, so that the answer meets a full socket on its way.
    await sleep(200);
    const reader = setInterval(() => {
      socket.resume();
      setTimeout(() => socket.pause(), 1);
    }, 10);
    try {
      const text = (): string => Buffer.concat(chunks).toString('latin1');
      await waitUntil(() => text().length >= alone.length, 'the whole OpenAPI document', 30_000);
      const head = text().slice(0, text().indexOf('\r\n\r\n'));
      assert.match(head, /^HTTP\/1\.1 200 OK/);
      assert.match(head, new RegExp(`content-length: ${alone.length}`, 'i'));
      await waitUntil(() => text().length >= head.length + 4 + alone.length, 'the body', 30_000);
      assert.ok(Buffer.concat(chunks).subarray(head.length + 4).equals(alone), 'the same bytes as read at once');
      chunks.length = 0;
      socket.write(get('/api/nothing'));
      await waitUntil(() => /^HTTP\/1\.1 404/.test(text()), 'the next answer on the same connection', 10_000);
    } finally {
      clearInterval(reader);
      socket.destroy();
    }
    assertHealthyProcess(daemon);
  });
});
