// The bytes waiting for slow clients, bounded across all connections (Hub.MaximumUnsentBytes,
// unsent-account.ts) and not only per connection: each connection may leave 1 MiB unread before it is
// closed as too slow, and one address may hold 512 connections, so clients that never read could each
// stay under their own bound while together they held hundreds of MB. Here connections that never
// read are each made to hold about 200 KiB in uWS (well under their own 1 MiB), one after another:
// once all of them together hold more than the hub's bound (512 KiB), the one holding more than its
// fair share (64 KiB) is closed as too slow at its next send, with the Close, counter and log line of
// any slow client, and what waits stays bounded. Before, none was closed and the total grew.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createLogger } from '../../src/log/logger.js';
import { RawClient, startHub } from './helpers.js';
import { sleep, waitUntil } from '../support/wait.js';

const RS = '\u001e';
const BOUND = 512 * 1024;
/** What each connection is made to hold in uWS: under its own bound, over the fair share. */
const HOLD = 200 * 1024;
const CLIENTS = 5;

type Paused = { pause(): void; resume(): void };
const socketOf = (c: RawClient): Paused => (c.ws as unknown as { _socket: Paused })._socket;


describe('unsent bytes across connections', () => {
  it('past Hub.MaximumUnsentBytes a connection over its fair share is closed as too slow; the total stays bounded', async () => {
    const lines: string[] = [];
    const logger = createLogger({ levels: { Default: 'Trace' }, write: (l) => lines.push(l), journald: false, timestamps: false });
    const hub = await startHub({ maxUnsentBytes: BOUND, logger, authenticate: (token) => (token ? { sub: token } : undefined) });
    const stats = (): Record<string, number> => hub.server.stats();
    const clients: RawClient[] = [];
    let most = 0;
    try {
      for (let i = 0; i < CLIENTS; i++) {
        const c = await RawClient.connect(`${hub.url.replace(/^http/, 'ws')}?access_token=device${i}`);
        clients.push(c);
        await c.handshake();
        socketOf(c).pause();
        const from = stats().unsentBytes ?? 0;
        const closedBefore = stats().slowClientsClosed!;
        // 64 KiB at a time until uWS holds HOLD for it (the kernel's socket buffers fill first) or it is closed.
        for (let k = 0; k < 400 && (stats().unsentBytes ?? 0) - from < HOLD && stats().slowClientsClosed === closedBefore; k++) {
          c.send(`{"type":1,"target":"Flood","arguments":[1,65536]}${RS}`);
          await sleep(10);
          most = Math.max(most, stats().unsentBytes ?? 0);
        }
      }
      const closed = stats().slowClientsClosed!;
      assert.ok(closed >= 1, `no connection closed; ${stats().unsentBytes} bytes unsent for ${stats().connections} connections`);
      assert.equal(stats().connections, CLIENTS - closed);
      // One write (64 KiB frames, flushed every 64 KiB) past the bound at most before a connection is closed.
      assert.ok(most <= BOUND + 192 * 1024, `${most} bytes unsent at most`);
      const slow = lines.filter((l) => l.includes('closing the slow connection'));
      assert.equal(slow.length, closed, lines.join('\n'));
      for (const line of slow) {
        const m = /^warn: App: [\w-]+: \d+ bytes unsent \(over 65536 while all connections hold (\d+), more than Hub\.MaximumUnsentBytes: 524288\), closing the slow connection$/.exec(line);
        assert.ok(m, line);
        assert.ok(Number(m[1]) > BOUND, line);
      }
      // The closed client finds the Close after what it had not read.
      const gone = clients.find((c) => c.ws.readyState !== c.ws.OPEN) ?? clients[clients.length - 1]!;
      for (const c of clients) socketOf(c).resume();
      await waitUntil(() => clients.filter((c) => c.ws.readyState === c.ws.CLOSED).length === closed, `${closed} clients closed`, 15_000);
      const closedClient = clients.find((c) => c.ws.readyState === c.ws.CLOSED) ?? gone;
      const frames = await closedClient.untilClosed(15_000);
      const last = frames.at(-1)!.data.toString('utf8').split(RS).filter(Boolean).map((s) => JSON.parse(s) as unknown).at(-1);
      assert.deepEqual(last, { type: 7, error: 'Server closed the connection: client too slow to receive messages.', allowReconnect: true });
      // The clients that read again drain; every connection gives its share back when it ends.
      for (const c of clients) c.ws.close();
      await waitUntil(() => stats().connections === 0, 'every connection closed', 10_000);
      assert.equal(stats().unsentBytes, 0);
    } finally {
      for (const c of clients) c.ws.terminate();
      hub.stop();
    }
  });
});
