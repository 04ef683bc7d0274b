// The bytes voice-hub writes in the MessagePack hub protocol, compared with the baselines ASP.NET Core's
// own protocol tests hold for the same messages (Base64 of one message, without its length prefix). A
// client written against ASP.NET Core (Python's signalrcore indexes an Invocation's sixth item) must
// read exactly what it would read from ASP.NET Core. Float and header cases are left out: voice-hub
// writes neither (JavaScript numbers that are integers encode as integers).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { readBinaryMessage } from '../../src/hub/binary-format.js';
import { decodeMessagePackItems, encodeMessagePackMessage } from '../../src/hub/msgpack-protocol.js';
import { MessageType, type HubMessage } from '../../src/hub/messages.js';

const CASES: ReadonlyArray<readonly [string, HubMessage, string]> = [
  ['Invocation, id, no args', { type: MessageType.Invocation, invocationId: 'xyz', target: 'method', arguments: [] }, 'lgGAo3h5eqZtZXRob2SQkA=='],
  ['Invocation, no id, no args', { type: MessageType.Invocation, target: 'method', arguments: [] }, 'lgGAwKZtZXRob2SQkA=='],
  ['Invocation, no id, one int', { type: MessageType.Invocation, target: 'method', arguments: [42] }, 'lgGAwKZtZXRob2SRKpA='],
  ['Invocation, no id, int and string', { type: MessageType.Invocation, target: 'method', arguments: [42, 'string'] }, 'lgGAwKZtZXRob2SSKqZzdHJpbmeQ'],
  ['Invocation with a stream id', { type: MessageType.Invocation, target: 'Target', arguments: [], streamIds: ['__test_id__'] }, 'lgGAwKZUYXJnZXSQkatfX3Rlc3RfaWRfXw=='],
  ['Invocation with a stream id and an argument', { type: MessageType.Invocation, target: 'Target', arguments: [42], streamIds: ['__test_id__'] }, 'lgGAwKZUYXJnZXSRKpGrX190ZXN0X2lkX18='],
  ['StreamInvocation, no args', { type: MessageType.StreamInvocation, invocationId: 'xyz', target: 'method', arguments: [] }, 'lgSAo3h5eqZtZXRob2SQkA=='],
  ['StreamItem, int', { type: MessageType.StreamItem, invocationId: 'xyz', item: 42 }, 'lAKAo3h5eio='],
  ['StreamItem, string', { type: MessageType.StreamItem, invocationId: 'xyz', item: 'string' }, 'lAKAo3h5eqZzdHJpbmc='],
  ['StreamItem, bool', { type: MessageType.StreamItem, invocationId: 'xyz', item: true }, 'lAKAo3h5esM='],
  ['Completion with an error', { type: MessageType.Completion, invocationId: 'xyz', error: 'Error not found!', hasResult: false }, 'lQOAo3h5egGwRXJyb3Igbm90IGZvdW5kIQ=='],
  ['Completion, no result', { type: MessageType.Completion, invocationId: 'xyz', hasResult: false }, 'lAOAo3h5egI='],
  ['Completion, int result', { type: MessageType.Completion, invocationId: 'xyz', result: 42, hasResult: true }, 'lQOAo3h5egMq'],
  ['Completion, string result', { type: MessageType.Completion, invocationId: 'xyz', result: 'string', hasResult: true }, 'lQOAo3h5egOmc3RyaW5n'],
  ['Completion, bool result', { type: MessageType.Completion, invocationId: 'xyz', result: true, hasResult: true }, 'lQOAo3h5egPD'],
  ['CancelInvocation', { type: MessageType.CancelInvocation, invocationId: 'xyz' }, 'kwWAo3h5eg=='],
  ['Ping', { type: MessageType.Ping }, 'kQY='],
  ['Close', { type: MessageType.Close }, 'kwfAwg=='],
  ['Close with an error', { type: MessageType.Close, error: 'Error!' }, 'kwemRXJyb3Ihwg=='],
  ['Close allowing reconnect', { type: MessageType.Close, allowReconnect: true }, 'kwfAww=='],
  ['Close with an error, allowing reconnect', { type: MessageType.Close, error: 'Error!', allowReconnect: true }, 'kwemRXJyb3Ihww=='],
];

describe('MessagePack hub protocol: the bytes ASP.NET Core writes', () => {
  for (const [name, message, base64] of CASES) {
    it(name, () => {
      const framed = encodeMessagePackMessage(message);
      const read = readBinaryMessage(framed, 0, 1 << 20);
      assert.ok(read, 'one whole, length-prefixed message');
      assert.equal(read.end, framed.length, 'nothing after it');
      assert.equal(Buffer.from(read.body).toString('base64'), base64);
    });
  }
});

describe('MessagePack hub protocol: reading is as tolerant as ASP.NET Core', () => {
  // ASP.NET Core reads the items it knows by position and skips the rest; an Invocation without the
  // stream ids (older clients), a Close without allowReconnect (older servers) and unknown types pass.
  const TOLERATED: ReadonlyArray<readonly [string, unknown[], HubMessage | null]> = [
    ['Invocation without stream ids', [1, {}, 'x', 'T', [1]], { type: MessageType.Invocation, headers: {}, invocationId: 'x', target: 'T', arguments: [1], streamIds: undefined }],
    ['Invocation with an extra item', [1, {}, 'x', 'T', [1], [], 'extra'], { type: MessageType.Invocation, headers: {}, invocationId: 'x', target: 'T', arguments: [1], streamIds: [] }],
    ['Completion with an extra item', [3, {}, 'x', 3, 5, 'extra'], { type: MessageType.Completion, headers: {}, invocationId: 'x', result: 5, hasResult: true }],
    ['Ping with an extra item', [6, 'extra'], { type: MessageType.Ping }],
    ['Close without allowReconnect', [7, 'err'], { type: MessageType.Close, error: 'err' }],
    ['an unknown message type', [99, 1], null],
  ];
  for (const [name, items, expected] of TOLERATED) {
    it(name, () => assert.deepEqual(decodeMessagePackItems(items), expected));
  }
});
