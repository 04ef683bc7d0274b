// The per-connection limits on a hub of its own (shipped budgets, 32 KiB messages): what arrives
// before the handshake, frames over the frame limit, bytes piling up behind a running invocation, and
// a frame of many invocations read over several event-loop turns without holding up other clients.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import WebSocket from 'ws';
import { HubWire, jsonFrame, msgpackFrame } from '../hardening/hub-wire.js';
import { shippedBudgets, startHub, type TestHub } from './helpers.js';
import { BYTES_PER_TURN } from '../../src/hub/reader.js';
import { writeBinaryMessage } from '../../src/hub/binary-format.js';
import { withTimeout } from '../support/wait.js';

let hub: TestHub;
let base: string;

before(async () => {
  hub = await startHub();
  base = `http://127.0.0.1:${hub.port}`;
});

after(() => hub.stop());

/** A raw, open socket that has not done the handshake: what it receives and how it closes. */
async function rawSocket(): Promise<{ ws: WebSocket; received: string[]; closed: Promise<number> }> {
  const ws = new WebSocket(`ws://127.0.0.1:${hub.port}/voice-hub`, { perMessageDeflate: false });
  ws.on('error', () => {});
  const received: string[] = [];
  ws.on('message', (d: Buffer) => received.push(d.toString()));
  const closed = withTimeout(new Promise<number>((resolve) => ws.on('close', resolve)), 5000, 'close');
  closed.catch(() => {}); // awaited by the caller; a rejection before that must not go unhandled
  await withTimeout(new Promise((resolve) => ws.once('open', resolve)), 5000, 'open');
  return { ws, received, closed };
}

/** One frame before the handshake: what came back and how the socket was closed. */
async function beforeHandshake(frame: string | Buffer): Promise<{ code: number; received: string[] }> {
  const { ws, received, closed } = await rawSocket();
  ws.send(frame, { binary: typeof frame !== 'string' });
  return { code: await closed, received };
}

describe('hub limits per connection', () => {
  it('before the handshake: 1 KiB at most, handshake included', async () => {
    const ok = await HubWire.connect(base, 'json');
    assert.ok(ok.open, 'a handshake is far below it');
    ok.close();
    const big = `{"protocol":"json","version":1,"pad":"${'x'.repeat(1000)}"}\u001e`;
    // ASP.NET Core's answer to a request over its size limit (HandshakeSizeLimitExceeded).
    assert.deepEqual(await beforeHandshake(big), { code: 1000, received: ['{"error":"Handshake was canceled."}\u001e'] });
    // One that ends within it and cannot be read is a failed handshake.
    assert.deepEqual(await beforeHandshake(`{"protocol":"json"}\u001e${'x'.repeat(1100)}`), { code: 1000, received: ['{"error":"An unexpected error occurred during connection handshake."}\u001e'] });
  });

  it('a handshake and its first messages in one frame: only the request counts against the 1 KiB', async () => {
    const { ws, received } = await rawSocket();
    const before = hub.recorded.length;
    const texts = Array.from({ length: 30 }, (_, i) => `first-${i}-${'x'.repeat(50)}`);
    const frame = `{"protocol":"json","version":1}\u001e${texts.map((t) => jsonFrame({ type: 1, target: 'Record', arguments: [t] })).join('')}`;
    assert.ok(frame.length > 2048);
    ws.send(frame);
    await withTimeout((async () => {
      while ((hub.recorded.length - before < texts.length || received.length === 0) && ws.readyState === WebSocket.OPEN) await new Promise((r) => setTimeout(r, 5));
    })(), 5000, 'the handshake answer and the records');
    assert.deepEqual(received[0], '{}\u001e');
    assert.deepEqual(hub.recorded.slice(before), texts);
    ws.close();
  });

  it('before the handshake, in pieces: the total counts', async () => {
    const { ws, received, closed } = await rawSocket();
    for (let i = 0; i < 3; i++) ws.send('{'.repeat(400));
    assert.equal(await closed, 1000);
    assert.deepEqual(received, ['{"error":"Handshake was canceled."}\u001e']);
  });

  it('a frame over the frame limit is dropped at its header (1006), nothing answered', async () => {
    const wire = await HubWire.connect(base, 'messagepack');
    wire.sendRaw(Buffer.alloc(shippedBudgets.maximumFrameSize + 1, 0));
    assert.equal((await withTimeout(wire.closed, 5000, 'close')).code, 1006);
    assert.deepEqual(wire.messages, []);
  });

  it('bytes piling up behind a running invocation: closed, told why, may reconnect', async () => {
    const wire = await HubWire.connect(base, 'json');
    wire.send('Slow', [2000, 'x']);
    // 3 frames of 200 KB while Slow runs: more than twice the frame limit waiting.
    const pings = jsonFrame({ type: 6 }).repeat(18_000);
    for (let i = 0; i < 3; i++) wire.sendRaw(pings);
    await withTimeout(wire.closed, 5000, 'close');
    assert.deepEqual(wire.messages.filter((m) => m.type === 7).map((m) => m.error), ['Server closed the connection: client sent data faster than it could be handled.']);
  });

  it('2000 invocations in one frame (an authenticated client) are all run, in order, while another client is served', async () => {
    const [busy, other] = [await HubWire.connect(base, 'messagepack'), await HubWire.connect(base, 'json')];
    assert.equal((await busy.invoke('Join', ['g'])).result, true, 'a group joined: the authenticated budget');
    const before = hub.recorded.length;
    busy.sendRaw(Buffer.concat(Array.from({ length: 1990 }, (_, i) => msgpackFrame([1, {}, null, 'Record', [i]]))));
    // The other client's call is answered before the busy one's frame is done: it is read in turns.
    await other.invoke('Echo', ['hi']);
    const doneWhenAnswered = hub.recorded.length - before;
    await busy.invoke('Echo', ['end'], 10_000);
    assert.deepEqual(hub.recorded.slice(before), Array.from({ length: 1990 }, (_, i) => i));
    assert.ok(doneWhenAnswered < 1990, `the other client waited for all ${doneWhenAnswered} invocations`);
    busy.close();
    other.close();
  });

  for (const protocol of ['json', 'messagepack'] as const) {
    it(`${protocol}: an anonymous client pays for each message by its size (a token per 4 KiB begun), before it is decoded`, async () => {
      const wire = await HubWire.connect(base, protocol);
      // 30 KB messages cost 8 tokens: the unauthenticated burst of 64 pays for 8, and the 9th finds
      // fewer than 8 (a token comes back every 100 ms). It does not decode, so had it been decoded the
      // close would have named a protocol error instead.
      const size = 30_000;
      const before = hub.recorded.length;
      for (let i = 0; i < 8; i++) {
        const text = `${i}:${'x'.repeat(size)}`;
        wire.sendRaw(protocol === 'json' ? jsonFrame({ type: 1, target: 'Record', arguments: [text] }) : msgpackFrame([1, {}, null, 'Record', [text]]));
      }
      wire.sendRaw(protocol === 'json' ? `${'x'.repeat(size)}\u001e` : writeBinaryMessage(new Uint8Array(size).fill(0xc1)));
      const closed = await withTimeout(wire.closed, 5000, 'close');
      assert.equal(closed.code, 1000);
      assert.deepEqual(wire.messages.filter((m) => m.type === 7).map((m) => m.error), [
        'Server closed the connection: too many messages (more than 64 at once or 10 per second, a message counting once per 4 KiB begun).',
      ]);
      assert.deepEqual(hub.recorded.slice(before).map((r) => Number(String(r).split(':')[0])), [0, 1, 2, 3, 4, 5, 6, 7]);
    });

    it(`${protocol}: an anonymous client's burst of 64 small invocations is served whole, each paid once`, async () => {
      const wire = await HubWire.connect(base, protocol);
      const before = hub.recorded.length;
      // A nested argument: MessagePack invocations with one are read from a lent frame, then again from a copy.
      for (let i = 0; i < 64; i++) wire.sendRaw(protocol === 'json' ? jsonFrame({ type: 1, target: 'Record', arguments: [[i]] }) : msgpackFrame([1, {}, null, 'Record', [[i]]]));
      await withTimeout((async () => {
        while (hub.recorded.length - before < 64 && wire.open) await new Promise((r) => setTimeout(r, 5));
      })(), 5000, 'the records');
      assert.deepEqual(wire.messages.filter((m) => m.type === 7), [], 'not closed for its budget');
      assert.deepEqual(hub.recorded.slice(before), Array.from({ length: 64 }, (_, i) => [i]));
      assert.ok(wire.open);
      wire.close();
    });

    it(`${protocol}: a frame of large messages is read ${BYTES_PER_TURN / 1024} KiB of them per turn, however few they are`, async () => {
      const wire = await HubWire.connect(base, protocol);
      const size = 20_000;
      const count = 8;
      const frame = (i: number): string | Uint8Array => (protocol === 'json' ? jsonFrame({ type: 1, target: 'Record', arguments: [`${i}:${'x'.repeat(size)}`] }) : msgpackFrame([1, {}, null, 'Record', [`${i}:${'x'.repeat(size)}`]]));
      const frames = Array.from({ length: count }, (_, i) => frame(i));
      const before = hub.recorded.length;
      // A mark in `recorded` at every turn of the event loop while the frame is read: the records between two marks were read in one turn.
      let marking = true;
      const mark = (): void => {
        if (!marking) return;
        hub.recorded.push('turn');
        setImmediate(mark);
      };
      setImmediate(mark);
      wire.sendRaw(protocol === 'json' ? (frames as string[]).join('') : Buffer.concat(frames as Uint8Array[]));
      try {
        await withTimeout((async () => {
          while (hub.recorded.slice(before).filter((r) => r !== 'turn').length < count) await new Promise((r) => setTimeout(r, 5));
        })(), 10_000, 'the records');
      } finally {
        marking = false;
      }
      const seen = hub.recorded.slice(before);
      const records = seen.filter((r): r is string => r !== 'turn');
      assert.deepEqual(records.map((r) => Number(r.slice(0, r.indexOf(':')))), Array.from({ length: count }, (_, i) => i));
      const perTurn = seen.join(',').split('turn').map((run) => run.split(',').filter(Boolean).length).filter((n) => n > 0);
      // Each message is about 20 KB: reading stops at the first that takes the turn to 64 KiB or past it.
      const most = Math.ceil(BYTES_PER_TURN / size);
      assert.ok(Math.max(...perTurn) <= most, `records per turn ${perTurn.join(' ')}: more than ${most} in one`);
      wire.close();
    });
  }
});
