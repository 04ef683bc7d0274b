// The hub bridge's mapping, table-driven: every session event -> the SignalR target and the bytes the
// hub sends for it with each protocol (the same bytes as before sessions emitted typed events), every
// payload valid against the schema the API document publishes, and the live bridge sending to the
// session's group only.
import { decode } from '@msgpack/msgpack';
import { Ajv } from 'ajv';
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { HUB_EVENTS, hubEventNames, type HubEvent } from '../../src/api/hub-events.js';
import { hubEventOf, hubSessionBridge } from '../../src/api/hub-session-bridge.js';
import { Base64Text } from '../../src/hub/base64-text.js';
import { jsonProtocol } from '../../src/hub/json-protocol.js';
import { invocation } from '../../src/hub/messages.js';
import { createMessagePackProtocol } from '../../src/hub/msgpack-protocol.js';
import type { SessionEvent, SessionEventType } from '../../src/voice/session-events.js';

const RS = '\u001e';
const at = new Date('2025-01-02T03:04:05.000Z');
// A view into the middle of a larger buffer: only its own bytes may be encoded.
const pcm = Buffer.from([9, 9, 1, 2, 3, 4, 9]).subarray(2, 6);
const packet = Uint8Array.from([0xfc, 0xff, 0xfe]);

interface Row {
  event: SessionEvent;
  /** What the hub sends, or undefined when devices get nothing. */
  target?: string;
  payload?: unknown;
  /** The whole JSON protocol frame. */
  json?: string;
}

const ROWS: Record<SessionEventType, Row[]> = {
  started: [{ event: { type: 'started', sessionId: 's1', deviceId: 'd1', userId: 'u1', at } }],
  audioProcessed: [{
    event: { type: 'audioProcessed', sessionId: 's1', sequence: 3, bytes: 5, durationMs: 20 },
    target: 'AudioProcessed',
    payload: { sessionId: 's1', sequence: 3, bytes: 5, durationMs: 20 },
    json: '{"type":1,"target":"AudioProcessed","arguments":[{"sessionId":"s1","sequence":3,"bytes":5,"durationMs":20}]}',
  }],
  decodedAudio: [{
    event: { type: 'decodedAudio', sessionId: 's1', pcm, format: { sampleRate: 16000, channels: 1 } },
    target: 'AudioResponse',
    payload: 'AQIDBA==',
    json: '{"type":1,"target":"AudioResponse","arguments":["AQIDBA=="]}',
  }],
  upstreamAudio: [{
    event: { type: 'upstreamAudio', sessionId: 's1', packet, base64: '/P/+', format: { sampleRate: 48000, channels: 2 } },
    target: 'AudioData',
    payload: { sessionId: 's1', format: 'opus', sampleRate: 48000, channels: 2, data: '/P/+' },
    json: '{"type":1,"target":"AudioData","arguments":[{"sessionId":"s1","format":"opus","sampleRate":48000,"channels":2,"data":"/P/+"}]}',
  }],
  text: [{
    event: { type: 'text', sessionId: 's1', text: 'héllo "x"', final: false },
    target: 'TextResponse',
    payload: { sessionId: 's1', text: 'héllo "x"', final: false },
    json: '{"type":1,"target":"TextResponse","arguments":[{"sessionId":"s1","text":"héllo \\"x\\"","final":false}]}',
  }],
  upstreamError: [
    { event: { type: 'upstreamError', sessionId: 's1', message: 'boom' }, target: 'Error', payload: 'boom', json: '{"type":1,"target":"Error","arguments":["boom"]}' },
    { event: { type: 'upstreamError', sessionId: 's1', message: 'boom', code: 42 }, target: 'Error', payload: 'boom (code 42)', json: '{"type":1,"target":"Error","arguments":["boom (code 42)"]}' },
    { event: { type: 'upstreamError', sessionId: 's1', message: 'boom', code: 'E_QUOTA' }, target: 'Error', payload: 'boom (code E_QUOTA)', json: '{"type":1,"target":"Error","arguments":["boom (code E_QUOTA)"]}' },
  ],
  framesDropped: [{
    event: { type: 'framesDropped', sessionId: 's1', reason: 'queue', message: 'upstream audio dropped: the decode queue is full' },
    target: 'Error',
    payload: 'upstream audio dropped: the decode queue is full',
    json: '{"type":1,"target":"Error","arguments":["upstream audio dropped: the decode queue is full"]}',
  }],
  upstreamLink: [
    { event: { type: 'upstreamLink', sessionId: 's1', state: 'reconnecting' } },
    { event: { type: 'upstreamLink', sessionId: 's1', state: 'open' } },
    { event: { type: 'upstreamLink', sessionId: 's1', state: 'unreachable' } },
  ],
  deviceAway: [{ event: { type: 'deviceAway', sessionId: 's1', deviceId: 'd1', graceMs: 30_000, at } }],
  deviceReturned: [{ event: { type: 'deviceReturned', sessionId: 's1', deviceId: 'd1', awayMs: 1200, at } }],
  ended: [{
    event: { type: 'ended', sessionId: 's1', deviceId: 'd1', state: 'Failed', reason: 'upstream connection lost', at },
    target: 'SessionEnded',
    payload: { sessionId: 's1', reason: 'upstream connection lost' },
    json: '{"type":1,"target":"SessionEnded","arguments":[{"sessionId":"s1","reason":"upstream connection lost"}]}',
  }],
};

const msgpack = createMessagePackProtocol(64 * 1024);
const ajv = new Ajv({ strict: false });
const validators = new Map(hubEventNames.map((name) => [name, ajv.compile(HUB_EVENTS[name].schema)]));

/** The items of a framed MessagePack message (one length-prefixed body). */
function messagePackItems(frame: Uint8Array): unknown[] {
  const read = msgpack.read(frame, 0, 1 << 20);
  assert.ok(read, 'one whole message');
  assert.equal(read.end, frame.length, 'and nothing after it');
  return decode(read.body) as unknown[];
}

describe('hub bridge: session event -> target and bytes', () => {
  for (const [type, rows] of Object.entries(ROWS)) {
    rows.forEach((row, i) => {
      it(`${type}${rows.length > 1 ? ` #${i + 1}` : ''}`, () => {
        const out = hubEventOf(row.event);
        if (row.target === undefined) {
          assert.equal(out, undefined, 'devices are not sent this event');
          return;
        }
        assert.ok(out);
        assert.equal(out.target, row.target);
        // Base64Text (decoded audio) is the Base64 string devices read.
        const payload = out.payload instanceof Base64Text ? out.payload.text : out.payload;
        assert.deepEqual(payload, row.payload);
        const validate = validators.get(out.target)!;
        assert.ok(validate(payload), `payload fits the published schema: ${ajv.errorsText(validate.errors)}`);

        const message = invocation(out.target, [out.payload]);
        assert.equal(jsonProtocol.encode(message), row.json + RS);
        // MessagePack: the same payload, strings staying strings (audio is Base64 text in both protocols).
        const items = messagePackItems(msgpack.encode(message) as Uint8Array);
        assert.deepEqual(items.slice(0, 5), [1, {}, null, row.target, [row.payload]]);
      });
    });
  }

  it('the live bridge sends to the session group only, and nothing for events devices do not get', () => {
    const sent: unknown[][] = [];
    const bridge = hubSessionBridge({ sendToGroup: (group, target, ...args) => void sent.push([group, target, ...args]) });
    bridge({ type: 'started', sessionId: 's/2', deviceId: 'd1', userId: 'u', at });
    bridge({ type: 'text', sessionId: 's/2', text: 'hi', final: true });
    bridge({ type: 'ended', sessionId: 's/2', deviceId: 'd1', state: 'Stopped', reason: 'stopped', at });
    assert.deepEqual(sent, [
      ['session-s/2', 'TextResponse', { sessionId: 's/2', text: 'hi', final: true }],
      ['session-s/2', 'SessionEnded', { sessionId: 's/2', reason: 'stopped' }],
    ]);
  });

  it('every event the map documents is sent by someone: the bridge, or the hub methods (SessionJoined)', () => {
    const bridged = new Set(Object.values(ROWS).flat().map((r) => r.target).filter(Boolean));
    const targets: HubEvent['target'][] = hubEventNames.filter((n) => !bridged.has(n));
    assert.deepEqual(targets, ['SessionJoined']);
  });
});
