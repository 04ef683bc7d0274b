// Ack and Sequence, the two messages of stateful reconnect, read and written in both hub protocols:
// MessagePack bytes from ASP.NET Core's own protocol baselines (Base64 of one message, without its
// length prefix) and its error texts for a missing id; JSON as ASP.NET Core writes it.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { readBinaryMessage, writeBinaryMessage } from '../../src/hub/binary-format.js';
import { jsonProtocol } from '../../src/hub/json-protocol.js';
import { MessageType, type HubMessage } from '../../src/hub/messages.js';
import { createMessagePackProtocol, encodeMessagePackMessage } from '../../src/hub/msgpack-protocol.js';

const msgpack = createMessagePackProtocol(1 << 20);
const decodeBody = (body: Uint8Array): HubMessage | null => {
  const framed = writeBinaryMessage(body);
  const read = msgpack.read(framed, 0, 1 << 20);
  assert.ok(read);
  return msgpack.decode(read.body);
};

const CASES: ReadonlyArray<readonly [string, HubMessage, string, string]> = [
  ['Ack', { type: MessageType.Ack, sequenceId: 42 }, 'kggq', '{"type":8,"sequenceId":42}'],
  ['Sequence', { type: MessageType.Sequence, sequenceId: 146 }, 'kgnMkg==', '{"type":9,"sequenceId":146}'],
];

describe('Ack and Sequence: the bytes ASP.NET Core writes and reads', () => {
  for (const [name, message, base64, json] of CASES) {
    it(`${name} in MessagePack`, () => {
      const framed = encodeMessagePackMessage(message);
      const read = readBinaryMessage(framed, 0, 1 << 20);
      assert.ok(read);
      assert.equal(read.end, framed.length);
      assert.equal(Buffer.from(read.body).toString('base64'), base64);
      assert.deepEqual(decodeBody(Buffer.from(base64, 'base64')), message);
    });
    it(`${name} in JSON`, () => {
      assert.equal(jsonProtocol.encode(message), `${json}\u001e`);
      assert.deepEqual(jsonProtocol.decode(Buffer.from(json)), message);
    });
  }

  const INVALID_MSGPACK: ReadonlyArray<readonly [string, number[]]> = [
    ['Ack without its id', [0x91, 8]],
    ['Ack with a nil id', [0x92, 8, 0xc0]],
    ['Ack with a string id', [0x92, 8, 0xa1, 0x31]],
    ['Sequence without its id', [0x91, 9]],
    ['Sequence with a nil id', [0x92, 9, 0xc0]],
  ];
  for (const [name, bytes] of INVALID_MSGPACK) {
    it(`${name}: a protocol error with ASP.NET's text`, () => {
      assert.throws(() => decodeBody(new Uint8Array(bytes)), { name: 'InvalidDataError', message: "Reading 'sequenceId' as Int64 failed." });
    });
  }

  const INVALID_JSON: ReadonlyArray<readonly [string, string, string]> = [
    ['Ack without its id', '{"type":8}', "Missing required property 'sequenceId'."],
    ['Sequence with a string id', '{"type":9,"sequenceId":"1"}', "Expected 'sequenceId' to be of type Number."],
    ['Ack with a fraction', '{"type":8,"sequenceId":1.5}', "Expected 'sequenceId' to be of type Int64."],
  ];
  for (const [name, text, error] of INVALID_JSON) {
    it(`JSON ${name}: a protocol error`, () => {
      assert.throws(() => jsonProtocol.decode(Buffer.from(text)), { name: 'InvalidDataError', message: error });
    });
  }
});
