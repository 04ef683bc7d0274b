// The simulator's drop relay (src/cli/drop-relay.ts) against a real TCP echo server on 127.0.0.1: bytes pass
// untouched both ways; dropAll cuts every relayed connection; during the outage a new connection is
// accepted but nothing passes until it ends; close() cuts everything and stops listening.
import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, describe, it } from 'node:test';
import { startDropRelay, type DropRelay } from '../../src/cli/drop-relay.js';
import { withTimeout } from '../support/wait.js';

let echo: net.Server;
let echoPort: number;
before(async () => {
  echo = net.createServer((s) => s.on('error', () => undefined).pipe(s));
  await new Promise<void>((resolve) => echo.listen(0, '127.0.0.1', resolve));
  echoPort = (echo.address() as net.AddressInfo).port;
});
after(() => new Promise<void>((resolve) => echo.close(() => resolve())));

/** A client of the relay that collects what it receives and notes when it closed. */
async function client(relay: DropRelay): Promise<{ socket: net.Socket; received: () => string; closed: Promise<void> }> {
  const socket = net.connect({ host: '127.0.0.1', port: relay.port });
  let data = '';
  socket.on('data', (d) => { data += d.toString(); });
  const closed = new Promise<void>((resolve) => socket.on('close', () => resolve()));
  socket.on('error', () => undefined);
  await withTimeout(new Promise<void>((resolve) => socket.once('connect', () => resolve())), 2000, 'connect to the relay');
  return { socket, received: () => data, closed };
}

async function echoed(c: { socket: net.Socket; received: () => string }, text: string, ms = 2000): Promise<number> {
  const t0 = Date.now();
  const before = c.received().length;
  c.socket.write(text);
  while (c.received().length < before + text.length) {
    if (Date.now() - t0 > ms) throw new Error(`no echo of ${JSON.stringify(text)} within ${ms} ms (have ${JSON.stringify(c.received())})`);
    await new Promise((r) => setTimeout(r, 5));
  }
  return Date.now() - t0;
}

describe('drop relay', () => {
  it('relays bytes both ways, cuts every connection on dropAll, and holds new ones for the outage', async () => {
    const relay = await startDropRelay({ host: '127.0.0.1', port: echoPort });
    try {
      const a = await client(relay);
      const b = await client(relay);
      await echoed(a, 'hello');
      await echoed(b, 'world');
      assert.equal(a.received(), 'hello');

      relay.dropAll(1500);
      await withTimeout(Promise.all([a.closed, b.closed]), 2000, 'both relayed connections cut');
      assert.equal(relay.dropped, 2);

      // The outage is real: a new connection opens, but nothing passes until the outage is over.
      const c = await client(relay);
      const waited = await echoed(c, 'later', 5000);
      assert.ok(waited >= 1000, `echoed after ${waited} ms, during a 1500 ms outage`);
      // After it, connections relay at once again.
      const d = await client(relay);
      assert.ok((await echoed(d, 'now')) < 1000, 'at once (well within an outage)');
      relay.dropAll(); // no outage: cut, and new connections pass at once
      await withTimeout(Promise.all([c.closed, d.closed]), 2000, 'cut again');
      const e = await client(relay);
      assert.ok((await echoed(e, 'again')) < 1000);
      assert.equal(relay.dropped, 4);
      await relay.close();
      await withTimeout(e.closed, 2000, 'close() cuts what is relayed');
    } finally {
      await relay.close(); // idempotent
    }
    const refused = net.connect({ host: '127.0.0.1', port: relay.port });
    const error = await new Promise<NodeJS.ErrnoException>((resolve) => refused.once('error', resolve));
    assert.equal(error.code, 'ECONNREFUSED', 'no longer listening');
  });

  it('a connection held during an outage and closed by its client is forgotten; close() cuts the held ones', async () => {
    const relay = await startDropRelay({ host: '127.0.0.1', port: echoPort });
    relay.dropAll(5000);
    const gone = await client(relay);
    gone.socket.destroy();
    const held = await client(relay);
    await relay.close();
    await withTimeout(held.closed, 2000, 'held connection cut by close()');
    assert.equal(held.received(), '');
  });
});
