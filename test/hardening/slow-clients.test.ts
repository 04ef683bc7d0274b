// Slow clients against the built bundle, the timeouts uWebSockets.js enforces on HTTP connections
// (10 s, checked on a 4 s tick: a close comes 10 to 14 s after the last progress):
// - a connection that sends no request, or sends none after its last answer, is closed, unanswered;
// - a body must keep coming at 16 KiB/s (160 KiB per 10 s) until it ends, or the connection is closed
//   unanswered and the request never runs (a slowloris upload cannot hold a connection forever);
// - a body that comes slowly but above that rate is read to its end and answered.
// A client that opened a connection long before it wrote its request once made a CI run fail here
// (test/hardening/memory-burst.test.ts): what the service does with such a client is written down here.
import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, describe, it } from 'node:test';
import { call } from '../support/http.js';
import { sleep, withTimeout } from '../support/wait.js';
import { adminTokenFor, assertHealthyProcess, startDaemon, type Daemon } from './daemon.js';

/** The earliest and latest close we accept after the last progress: 10 s on a 4 s tick, with slack for a loaded machine. */
const EARLIEST_CLOSE_MS = 7_000;
const LATEST_CLOSE_MS = 20_000;
const MAX_BODY = 1024 * 1024;

let daemon: Daemon;
before(async () => {
  daemon = await startDaemon({ settings: { Server: { MaxBodyBytes: MAX_BODY } } });
});
after(async () => {
  await daemon?.stop();
});

interface RawConnection {
  readonly socket: net.Socket;
  /** Everything the server sent. */
  received(): Buffer;
  /** Resolves with the time the connection ended (performance.now()). */
  readonly closed: Promise<number>;
  /** As closed, but rejects when the server has not closed it within LATEST_CLOSE_MS of `since`, plus 5 s. */
  closedBy(since: number, what: string): Promise<number>;
}

function connect(port: number): Promise<RawConnection> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    // A write into a connection the server has just closed fails (EPIPE, ECONNRESET): that is the close.
    const closed = new Promise<number>((done) => {
      socket.on('error', () => done(performance.now()));
      socket.on('end', () => done(performance.now()));
      socket.on('close', () => done(performance.now()));
    });
    socket.on('data', (d: Buffer) => chunks.push(d));
    const closedBy = (since: number, what: string): Promise<number> =>
      withTimeout(closed, Math.max(0, since + LATEST_CLOSE_MS + 5_000 - performance.now()), `${what}: the server to close the connection`);
    socket.once('connect', () => resolve({ socket, received: () => Buffer.concat(chunks), closed, closedBy }));
    socket.once('error', reject);
  });
}

/** A whole answer has come: its head and its JSON body (every answer here ends with an object). */
const fullyAnswered = (conn: RawConnection): boolean => /\r\n\r\n[\s\S]*\}$/.test(conn.received().toString('latin1'));

/** A register request's body of exactly `size` bytes: the JSON object, then spaces (still valid JSON). */
function registerBody(deviceId: string, size: number): Buffer {
  const json = JSON.stringify({ deviceId, deviceName: deviceId, deviceType: 'speaker' });
  return Buffer.concat([Buffer.from(json), Buffer.alloc(size - json.length, ' ')]);
}

function registerHead(length: number): string {
  return `POST /api/device/register HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${length}\r\n\r\n`;
}

/** Writes `body` in `chunk`-byte pieces every `everyMs` until it is all sent or the connection closed. */
async function trickle(conn: RawConnection, body: Buffer, chunk: number, everyMs: number): Promise<void> {
  let gone = false;
  void conn.closed.then(() => {
    gone = true;
  });
  for (let at = 0; at < body.length && !gone; at += chunk) {
    conn.socket.write(body.subarray(at, at + chunk));
    await sleep(everyMs);
  }
}

const closeDelays: string[] = [];

function assertClosedInWindow(name: string, since: number, closedAt: number): void {
  const ms = closedAt - since;
  closeDelays.push(`${name} ${(ms / 1000).toFixed(1)} s`);
  assert.ok(ms >= EARLIEST_CLOSE_MS && ms <= LATEST_CLOSE_MS, `${name}: closed ${ms.toFixed(0)} ms after its last progress, expected ${EARLIEST_CLOSE_MS}-${LATEST_CLOSE_MS} ms`);
}

describe('slow clients: what the HTTP listener closes and what it waits for', () => {
  it('silent, idle, trickling and slow-but-steady connections, side by side', async (t) => {
    const { port, url } = daemon;

    const silent = async (): Promise<void> => {
      const conn = await connect(port);
      const opened = performance.now();
      const closedAt = await conn.closedBy(opened, 'silent');
      assert.equal(conn.received().length, 0, 'a connection that sent nothing got bytes back');
      assertClosedInWindow('a connection that sends nothing', opened, closedAt);
    };

    const idleAfterAnswer = async (): Promise<void> => {
      const conn = await connect(port);
      conn.socket.write('GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
      // The answer ends with its (small, JSON) body; wait for it, then stay silent.
      const deadline = performance.now() + 10_000;
      while (!fullyAnswered(conn) && performance.now() < deadline) await sleep(20);
      const answered = performance.now();
      // Unhealthy: this daemon's voice server (port 9) is not there. Answered all the same.
      assert.match(conn.received().toString('latin1'), /^HTTP\/1\.1 503 Service Unavailable\r\n/);
      const closedAt = await conn.closedBy(answered, 'idle after its answer');
      assertClosedInWindow('a keep-alive connection idle after its answer', answered, closedAt);
    };

    const trickling = async (): Promise<void> => {
      const conn = await connect(port);
      const body = registerBody('slow-trickle', 64 * 1024);
      conn.socket.write(registerHead(body.length));
      const headSent = performance.now();
      // 1 KiB/s: the 64 KiB would take a minute; 16 KiB/s is the least uWS accepts.
      await trickle(conn, body, 512, 500);
      const closedAt = await conn.closedBy(headSent, 'trickled body');
      assert.equal(conn.received().length, 0, `a trickled body got an answer: ${conn.received().toString('latin1').slice(0, 200)}`);
      assertClosedInWindow('a body trickled at 1 KiB/s', headSent, closedAt);
    };

    const steady = async (): Promise<{ status: string; body: string }> => {
      const conn = await connect(port);
      // 48 KiB/s for 12 s, three times the least uWS accepts: slow, and read to its end.
      const body = registerBody('slow-steady', 96 * 6 * 1024);
      conn.socket.write(registerHead(body.length));
      await trickle(conn, body, 6 * 1024, 125);
      const deadline = performance.now() + LATEST_CLOSE_MS;
      while (!fullyAnswered(conn) && performance.now() < deadline) {
        const state = await Promise.race([conn.closed.then(() => 'closed'), sleep(50).then(() => 'waiting')]);
        if (state === 'closed') break;
      }
      const text = conn.received().toString('latin1');
      conn.socket.destroy();
      return { status: text.slice(0, text.indexOf('\r\n')), body: text.slice(text.indexOf('\r\n\r\n') + 4) };
    };

    const [answer] = await Promise.all([steady(), silent(), idleAfterAnswer(), trickling()]);
    assert.equal(answer.status, 'HTTP/1.1 200 OK', `the slow but steady upload: ${answer.body}`);
    assert.equal(JSON.parse(answer.body).deviceInfo.id, 'slow-steady');

    // Only the request whose body came in full ran.
    const list = await call(url, 'GET', '/api/device/list', { token: await adminTokenFor(daemon.dataDir) });
    assert.equal(list.status, 200, list.text);
    const ids = (list.json as { devices: Array<{ id: string }> }).devices.map((d) => d.id);
    assert.deepEqual(ids.filter((id) => id.startsWith('slow-')), ['slow-steady']);
    assertHealthyProcess(daemon);
    t.diagnostic(`closed: ${closeDelays.join('; ')}`);
  });
});
