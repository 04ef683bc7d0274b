// The reader runs the first invocation of a frame straight from the bytes uWS lends for the call, and
// copies only the rest of the frame: what an invocation keeps of its frame (MessagePack bytes, alone
// or nested in its arguments) must survive the frames that come after it, in order, with the pings,
// non-blocking invocations and other messages around it, and with the per-turn message limit in force.
import { decode, encode } from '@msgpack/msgpack';
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { splitBinaryMessages, writeBinaryMessage } from '../../src/hub/binary-format.js';
import { RawClient, startHub, type RawFrame, type TestHub } from './helpers.js';
import { waitUntil } from '../support/wait.js';

const RS = '\u001e';
const wsUrl = (hub: TestHub): string => hub.url.replace(/^http/, 'ws');
const mp = (frame: RawFrame): unknown[] => splitBinaryMessages(frame.data, 1 << 30).messages.map((m) => decode(m));
const json = (frame: RawFrame): unknown[] => frame.data.toString('utf8').split(RS).filter(Boolean).map((s) => JSON.parse(s));

/** `count` distinct byte strings of `size` bytes. */
const packets = (count: number, size: number): Buffer[] =>
  Array.from({ length: count }, (_, i) => Buffer.from(Array.from({ length: size }, (_v, j) => (i * 31 + j * 7) & 0xff)));

const invoke = (args: unknown[], id?: string): Uint8Array => writeBinaryMessage(encode([1, {}, id ?? null, 'Record', args]));
const PING = writeBinaryMessage(encode([6]));

/** Reads frames until `count` MessagePack messages of type `type` came; returns them. */
async function collect(client: RawClient, count: number, type: number): Promise<unknown[][]> {
  const out: unknown[][] = [];
  while (out.length < count) for (const m of mp(await client.next()) as unknown[][]) if (m[0] === type) out.push(m);
  return out;
}

describe('invocations read from lent frames', () => {
  let hub: TestHub;
  before(async () => {
    // Two messages per turn: a frame of three messages spans turns.
    hub = await startHub({ messagesPerTurn: 2 });
  });
  after(() => hub.stop());

  it('MessagePack bytes arguments survive the frames after them, one invocation per frame', async () => {
    hub.recorded.length = 0;
    const c = await RawClient.connect(wsUrl(hub));
    await c.handshake('messagepack');
    const sent = packets(40, 160);
    // Sent back to back: the server reads the next frames into the same receive buffer.
    for (let i = 0; i < sent.length; i++) c.send(invoke([sent[i]], `${i}`));
    const completions = await collect(c, sent.length, 3);
    assert.deepEqual(completions.map((m) => m[2]), sent.map((_, i) => `${i}`));
    assert.equal(hub.recorded.length, sent.length);
    hub.recorded.forEach((got, i) => assert.deepEqual(Buffer.from(got as Uint8Array), sent[i], `packet ${i}`));
    c.ws.close();
  });

  it('bytes nested in an argument, and messages before and after the invocation in its frame', async () => {
    hub.recorded.length = 0;
    const c = await RawClient.connect(wsUrl(hub));
    await c.handshake('messagepack');
    const sent = packets(12, 64);
    for (let i = 0; i < sent.length; i += 3) {
      // A ping first (read from the lent frame), then a non-blocking invocation with its bytes nested
      // in an array, then two invocations with completions: three invocations in one frame, over the
      // two messages a turn.
      c.send(Buffer.concat([PING, invoke([[sent[i]]]), invoke([sent[i + 1]], `${i + 1}`), invoke([{ audio: sent[i + 2] }], `${i + 2}`)]));
    }
    const completions = await collect(c, (sent.length / 3) * 2, 3);
    assert.deepEqual(completions.map((m) => m[2]), sent.flatMap((_, i) => (i % 3 === 0 ? [] : [`${i}`])));
    await waitUntil(() => hub.recorded.length === sent.length, 'every invocation recorded', 3000);
    hub.recorded.forEach((got, i) => {
      const bytes = i % 3 === 0 ? (got as Uint8Array[])[0] : i % 3 === 1 ? got : (got as { audio: Uint8Array }).audio;
      assert.deepEqual(Buffer.from(bytes as Uint8Array), sent[i], `packet ${i}`);
    });
    c.ws.close();
  });

  it('JSON: the invocations of a frame run once each, in order, across turns', async () => {
    hub.recorded.length = 0;
    const c = await RawClient.connect(wsUrl(hub));
    await c.handshake('json');
    const ids = Array.from({ length: 9 }, (_, i) => `${i}`);
    for (let i = 0; i < ids.length; i += 3) {
      c.send(ids.slice(i, i + 3).map((id) => `{"type":1,"invocationId":"${id}","target":"Record","arguments":["${id}"]}${RS}`).join('') + `{"type":6}${RS}`);
    }
    const seen: string[] = [];
    while (seen.length < ids.length) for (const m of json(await c.next()) as { type: number; invocationId?: string }[]) if (m.type === 3) seen.push(m.invocationId!);
    assert.deepEqual(seen, ids);
    assert.deepEqual(hub.recorded, ids);
    c.ws.close();
  });
});
