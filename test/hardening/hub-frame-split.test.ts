// The transport is a byte stream (issue 12): however a client's legitimate traffic is cut into
// WebSocket frames (many messages per frame, a message across several frames, 1-byte frames, within
// the connection's message budget), the
// service processes it exactly as when each message has a frame of its own. fast-check cuts the
// same traffic (JoinSession, pings, real Opus packets, a final JoinSession as a marker) at random
// points, in JSON and MessagePack, against the built bundle with the echo upstream.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import { speechPackets, startEchoRig, type Daemon, type EchoRig, type StartedSession } from './daemon.js';
import { HubWire, jsonFrame, msgpackFrame, type Protocol, type WireMessage } from './hub-wire.js';
import { checkProperty } from './property.js';

const PACKETS = speechPackets().slice(0, 30);

let rig: EchoRig | undefined;
let daemon: Daemon;
let session: StartedSession;

before(async () => {
  rig = await startEchoRig();
  ({ daemon, session } = rig);
});

after(() => rig?.stop());

/** The client's messages, each framed: join, then audio with a ping every 10 packets, then the marker. */
function traffic(protocol: Protocol): Buffer[] {
  const invocation = (target: string, args: unknown[], id?: string): Buffer =>
    protocol === 'json'
      ? Buffer.from(jsonFrame({ type: 1, ...(id ? { invocationId: id } : {}), target, arguments: args }))
      : Buffer.from(msgpackFrame([1, {}, id ?? null, target, args]));
  const ping = protocol === 'json' ? Buffer.from(jsonFrame({ type: 6 })) : Buffer.from(msgpackFrame([6]));
  const out = [invocation('JoinSession', [session.sessionId, session.token], 'join')];
  PACKETS.forEach((p, i) => {
    out.push(invocation('SendAudioData', [session.sessionId, protocol === 'json' ? p.toString('base64') : p]));
    if (i % 10 === 9) out.push(ping);
  });
  out.push(invocation('JoinSession', [session.sessionId, session.token], 'end'));
  return out;
}

/** What the server did with the traffic, in order, without what varies between runs (sequence numbers, echo timing). */
function trace(messages: WireMessage[]): string[] {
  const out: string[] = [];
  let firstSequence: number | undefined;
  for (const m of messages) {
    if (m.type === 3) out.push(`completion ${m.invocationId} ${m.error ?? JSON.stringify(m.result)}`);
    else if (m.type === 1 && m.target === 'AudioProcessed') {
      const p = m.arguments?.[0] as { sequence: number; bytes: number; durationMs: number };
      firstSequence ??= p.sequence;
      out.push(`AudioProcessed +${p.sequence - firstSequence} ${p.bytes} B ${p.durationMs} ms`);
    } else if (m.type === 1 && m.target !== 'AudioResponse' && m.target !== 'AudioData') out.push(`${m.target} ${JSON.stringify(m.arguments)}`);
    else if (m.type === 7) out.push(`close ${m.error ?? ''}`);
  }
  return out;
}

/** Sends the bytes as the given frames and returns the trace once the marker's completion arrived. */
async function run(protocol: Protocol, frames: Buffer[]): Promise<string[]> {
  const wire = await HubWire.connect(daemon.url, protocol);
  try {
    for (const f of frames) wire.sendRaw(protocol === 'json' ? f.toString('latin1') : f);
    await wire.waitFor((m) => m.type === 3 && m.invocationId === 'end', 10_000, 'the marker completion');
    return trace(wire.messages);
  } finally {
    wire.close();
  }
}

/** Cuts `stream` at the given points (duplicates and out-of-range points ignored). */
function cut(stream: Buffer, points: number[]): Buffer[] {
  const at = [...new Set(points.map((p) => p % stream.length).filter((p) => p > 0))].sort((a, b) => a - b);
  const frames: Buffer[] = [];
  let start = 0;
  for (const p of at) {
    frames.push(stream.subarray(start, p));
    start = p;
  }
  frames.push(stream.subarray(start));
  return frames;
}

for (const protocol of ['json', 'messagepack'] as Protocol[]) {
  describe(`${protocol}: frame splits of legitimate traffic`, () => {
    let reference: string[] = [];

    it('one message per frame: the reference', async () => {
      reference = await run(protocol, traffic(protocol));
      assert.equal(reference.filter((l) => l.startsWith('AudioProcessed')).length, PACKETS.length);
      assert.deepEqual(reference.filter((l) => l.startsWith('completion')), ['completion join null', 'completion end null']);
      assert.ok(!reference.some((l) => l.startsWith('Error') || l.startsWith('close')), reference.join('\n'));
    });

    it('all in one frame', async () => {
      assert.deepEqual(await run(protocol, [Buffer.concat(traffic(protocol))]), reference);
    });

    // A frame that completes no message costs one message of the budget (joining it to the next is a
    // copy), so before JoinSession is done at most 64 of them fit: 50 here.
    it('the first 50 bytes one byte per frame, the rest in one', async () => {
      const stream = Buffer.concat(traffic(protocol));
      assert.deepEqual(await run(protocol, cut(stream, Array.from({ length: 50 }, (_, i) => i + 1))), reference);
    });

    it('any cut of the byte stream into frames', async () => {
      const stream = Buffer.concat(traffic(protocol));
      await checkProperty(fc.asyncProperty(fc.array(fc.nat({ max: stream.length - 1 }), { maxLength: 40 }), async (points) => {
        assert.deepEqual(await run(protocol, cut(stream, points)), reference);
      }), 25);
    });
  });
}
