// endBounded (src/http/bounded-end.ts) on the uWS addon in use: an answer larger than the socket takes at
// once goes out as it drains, to its end, and the connection goes on to its next request. With reading
// paused while it waited, this addon delivered no writable event either: the answer stopped where the
// kernel's buffers were full (3.9 MB of 20 on loopback; far sooner over Wi-Fi) and the client waited
// for good.
import assert from 'node:assert/strict';
import http from 'node:http';
import { after, before, describe, it } from 'node:test';
import type { TemplatedApp, us_listen_socket } from 'uWebSockets.js';
import { endBounded } from '../../src/http/bounded-end.js';
import { loadNativeUws } from '../../src/http/uws-native.js';

const { uws } = loadNativeUws();
const BIG = Buffer.alloc(20 * 1024 * 1024, 'voice-hub ');

describe('an answer larger than the socket takes at once', () => {
  let app: TemplatedApp;
  let listener: us_listen_socket;
  let port: number;
  before(async () => {
    app = uws.App();
    // Answered after a turn, as an answer that waited for I/O is.
    app.get('/big', (res) => {
      res.onAborted(() => {});
      setTimeout(() => res.cork(() => {
        res.writeStatus('200 OK');
        endBounded(res, BIG, { status: 200 });
      }), 10);
    });
    app.get('/small', (res) => {
      res.writeStatus('200 OK');
      endBounded(res, 'next', { status: 200 });
    });
    listener = await new Promise((resolve) => app.listen('127.0.0.1', 0, (socket) => resolve(socket as us_listen_socket)));
    port = uws.us_socket_local_port(listener);
  });
  after(() => uws.us_listen_socket_close(listener));

  it('arrives whole on a keep-alive connection read slowly, and the next request is answered on it', async () => {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const sockets = new Set<unknown>();
    const get = (path: string, slow: boolean) => new Promise<Buffer>((resolve, reject) => {
      const req = http.get({ host: '127.0.0.1', port, path, agent }, (res) => {
        sockets.add(res.socket);
        const chunks: Buffer[] = [];
        res.on('data', (d: Buffer) => {
          chunks.push(d);
          // A reader slower than loopback: the socket fills and drains many times.
          if (slow && chunks.length % 64 === 0) {
            res.pause();
            setTimeout(() => res.resume(), 5);
          }
        });
        res.on('end', () => resolve(Buffer.concat(chunks)));
        res.on('error', reject);
      });
      req.on('error', reject);
      req.setTimeout(20_000, () => req.destroy(new Error(`${path}: no progress for 20 s`)));
    });
    try {
      const body = await get('/big', true);
      assert.equal(body.length, BIG.length);
      assert.ok(body.equals(BIG));
      assert.equal((await get('/small', false)).toString(), 'next');
      assert.equal(sockets.size, 1, 'one keep-alive connection for both');
    } finally {
      agent.destroy();
    }
  });
});
