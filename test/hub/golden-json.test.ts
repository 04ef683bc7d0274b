// The bytes voice-hub writes in the JSON hub protocol and the handshake, compared with the text ASP.NET
// Core's own protocol tests expect for the same messages (JsonHubProtocolTestsBase, HandshakeProtocol):
// property order, what is left out, the 0x1E after each message. Reading is checked against the same
// vectors, plus the tolerance ASP.NET Core's reader has: properties in any order, unknown ones ignored.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { handshakeResponse } from '../../src/hub/handshake.js';
import { decodeJsonMessage, encodeJsonMessage } from '../../src/hub/json-protocol.js';
import { MessageType, type HubMessage } from '../../src/hub/messages.js';

const RS = '\u001e';
const HEADERS = { Foo: 'Bar', 'KeyWith\nNew\r\nLines': 'Still Works', ValueWithNewLines: 'Also\nWorks\r\nFine' };
const SERIALIZED_HEADERS = '"headers":{"Foo":"Bar","KeyWith\\nNew\\r\\nLines":"Still Works","ValueWithNewLines":"Also\\nWorks\\r\\nFine"}';

const CASES: ReadonlyArray<readonly [string, HubMessage, string]> = [
  ['Invocation with an id', { type: MessageType.Invocation, invocationId: '123', target: 'Target', arguments: [1, 'Foo'] }, '{"type":1,"invocationId":"123","target":"Target","arguments":[1,"Foo"]}'],
  ['Invocation without an id, bool argument', { type: MessageType.Invocation, target: 'Target', arguments: [true] }, '{"type":1,"target":"Target","arguments":[true]}'],
  ['Invocation, null argument', { type: MessageType.Invocation, target: 'Target', arguments: [null] }, '{"type":1,"target":"Target","arguments":[null]}'],
  ['Invocation with a stream id', { type: MessageType.Invocation, target: 'Target', arguments: [], streamIds: ['__test_id__'] }, '{"type":1,"target":"Target","arguments":[],"streamIds":["__test_id__"]}'],
  ['Invocation with a stream id and an argument', { type: MessageType.Invocation, target: 'Target', arguments: [42], streamIds: ['__test_id__'] }, '{"type":1,"target":"Target","arguments":[42],"streamIds":["__test_id__"]}'],
  ['Invocation with two stream ids', { type: MessageType.Invocation, target: 'Target', arguments: [], streamIds: ['__test_id__', '__test_id2__'] }, '{"type":1,"target":"Target","arguments":[],"streamIds":["__test_id__","__test_id2__"]}'],
  ['StreamItem, integer', { type: MessageType.StreamItem, invocationId: '123', item: 1 }, '{"type":2,"invocationId":"123","item":1}'],
  ['StreamItem, string', { type: MessageType.StreamItem, invocationId: '123', item: 'Foo' }, '{"type":2,"invocationId":"123","item":"Foo"}'],
  ['StreamItem, bool', { type: MessageType.StreamItem, invocationId: '123', item: true }, '{"type":2,"invocationId":"123","item":true}'],
  ['StreamItem, null', { type: MessageType.StreamItem, invocationId: '123', item: null }, '{"type":2,"invocationId":"123","item":null}'],
  ['Completion, integer result', { type: MessageType.Completion, invocationId: '123', result: 1, hasResult: true }, '{"type":3,"invocationId":"123","result":1}'],
  ['Completion, string result', { type: MessageType.Completion, invocationId: '123', result: 'Foo', hasResult: true }, '{"type":3,"invocationId":"123","result":"Foo"}'],
  ['Completion, bool result', { type: MessageType.Completion, invocationId: '123', result: true, hasResult: true }, '{"type":3,"invocationId":"123","result":true}'],
  ['Completion, null result', { type: MessageType.Completion, invocationId: '123', result: null, hasResult: true }, '{"type":3,"invocationId":"123","result":null}'],
  ['Completion with an error', { type: MessageType.Completion, invocationId: '123', error: 'Whoops!', hasResult: false }, '{"type":3,"invocationId":"123","error":"Whoops!"}'],
  ['Completion with an error and headers', { type: MessageType.Completion, headers: HEADERS, invocationId: '123', error: 'Whoops!', hasResult: false }, `{"type":3,${SERIALIZED_HEADERS},"invocationId":"123","error":"Whoops!"}`],
  ['StreamInvocation', { type: MessageType.StreamInvocation, invocationId: '123', target: 'Target', arguments: [1, 'Foo'] }, '{"type":4,"invocationId":"123","target":"Target","arguments":[1,"Foo"]}'],
  ['StreamInvocation with a stream id', { type: MessageType.StreamInvocation, invocationId: '123', target: 'Target', arguments: [], streamIds: ['__test_id__'] }, '{"type":4,"invocationId":"123","target":"Target","arguments":[],"streamIds":["__test_id__"]}'],
  ['CancelInvocation', { type: MessageType.CancelInvocation, invocationId: '123' }, '{"type":5,"invocationId":"123"}'],
  ['CancelInvocation with headers', { type: MessageType.CancelInvocation, headers: HEADERS, invocationId: '123' }, `{"type":5,${SERIALIZED_HEADERS},"invocationId":"123"}`],
  ['Ping', { type: MessageType.Ping }, '{"type":6}'],
  ['Close', { type: MessageType.Close }, '{"type":7}'],
  ['Close with an error', { type: MessageType.Close, error: 'Error!' }, '{"type":7,"error":"Error!"}'],
  ['Close with an empty error', { type: MessageType.Close, error: '' }, '{"type":7,"error":""}'],
  ['Close allowing reconnect', { type: MessageType.Close, allowReconnect: true }, '{"type":7,"allowReconnect":true}'],
  ['Close with an error, allowing reconnect', { type: MessageType.Close, error: 'Error!', allowReconnect: true }, '{"type":7,"error":"Error!","allowReconnect":true}'],
];

/** What the reader yields for a case: the same message, with the optional fields the reader always sets. */
function asRead(message: HubMessage): HubMessage {
  if (message.type === MessageType.Invocation || message.type === MessageType.StreamInvocation) {
    return { headers: undefined, streamIds: undefined, ...message } as HubMessage;
  }
  if (message.type === MessageType.StreamItem || message.type === MessageType.CancelInvocation || message.type === MessageType.Completion) {
    return { headers: undefined, ...message } as HubMessage;
  }
  return message;
}

describe('JSON hub protocol: the text ASP.NET Core writes', () => {
  for (const [name, message, json] of CASES) {
    it(`writes: ${name}`, () => {
      assert.equal(encodeJsonMessage(message), json + RS);
    });
    it(`reads: ${name}`, () => {
      assert.deepEqual(decodeJsonMessage(json), asRead(message));
    });
  }

  it('writes the properties in ASP.NET Core order, however the message object was built', () => {
    const built: HubMessage = { arguments: [1], target: 'Target', invocationId: '7', type: MessageType.Invocation };
    assert.equal(encodeJsonMessage(built), '{"type":1,"invocationId":"7","target":"Target","arguments":[1]}' + RS);
    const completion: HubMessage = { hasResult: true, result: 2, invocationId: '7', type: MessageType.Completion };
    assert.equal(encodeJsonMessage(completion), '{"type":3,"invocationId":"7","result":2}' + RS);
  });

  it('leaves out what ASP.NET Core leaves out: empty headers, an empty invocation id, an empty completion error', () => {
    assert.equal(encodeJsonMessage({ type: MessageType.Invocation, headers: {}, invocationId: '', target: 'T', arguments: [] }), '{"type":1,"target":"T","arguments":[]}' + RS);
    assert.equal(encodeJsonMessage({ type: MessageType.Completion, invocationId: '1', error: '', hasResult: false }), '{"type":3,"invocationId":"1"}' + RS);
    assert.equal(encodeJsonMessage({ type: MessageType.Completion, invocationId: '1', hasResult: true }), '{"type":3,"invocationId":"1","result":null}' + RS, 'a void result is null');
  });

  it('an invocation the hub sends (no id, no headers) is the text JSON.stringify writes for it, whatever its arguments and target', () => {
    fc.assert(fc.property(fc.string(), fc.array(fc.jsonValue()), (target, args) => {
      const expected = JSON.stringify({ type: 1, target, arguments: args }) + RS;
      assert.equal(encodeJsonMessage({ type: MessageType.Invocation, target, arguments: args }), expected);
      // Twice: the second comes from the head written once per target.
      assert.equal(encodeJsonMessage({ type: MessageType.Invocation, target, arguments: args }), expected);
    }), { numRuns: 300 });
    assert.equal(encodeJsonMessage({ type: MessageType.Invocation, target: 'T', arguments: [undefined, () => 1, new Date(0)] }),
      '{"type":1,"target":"T","arguments":[null,null,"1970-01-01T00:00:00.000Z"]}' + RS);
  });

  it('writes bytes as Base64, as ASP.NET Core writes byte[]', () => {
    assert.equal(
      encodeJsonMessage({ type: MessageType.Invocation, target: 'AudioResponse', arguments: [Buffer.from([1, 2, 3])] }),
      '{"type":1,"target":"AudioResponse","arguments":["AQID"]}' + RS,
    );
  });
});

describe('JSON hub protocol: reading is as tolerant as ASP.NET Core', () => {
  // ASP.NET Core's out-of-order vectors: properties may come in any order.
  const OUT_OF_ORDER: ReadonlyArray<readonly [string, HubMessage]> = [
    ['{ "arguments": ["2016-05-10T13:51:20+12:34"], "type":1, "target": "Method" }', { type: MessageType.Invocation, target: 'Method', arguments: ['2016-05-10T13:51:20+12:34'] }],
    ['{ "arguments": [1,2], "type":1, "target": "Method" }', { type: MessageType.Invocation, target: 'Method', arguments: [1, 2] }],
    ['{ "type":4, "arguments": [1,2], "target": "Method", "invocationId": "3" }', { type: MessageType.StreamInvocation, invocationId: '3', target: 'Method', arguments: [1, 2] }],
    ['{ "type":3, "result": 10, "invocationId": "15" }', { type: MessageType.Completion, invocationId: '15', result: 10, hasResult: true }],
    ['{ "item": "foo", "invocationId": "1a", "type":2 }', { type: MessageType.StreamItem, invocationId: '1a', item: 'foo' }],
  ];
  for (const [json, message] of OUT_OF_ORDER) {
    it(`reads out of order: ${json}`, () => assert.deepEqual(decodeJsonMessage(json), asRead(message)));
  }

  it('ignores unknown properties', () => {
    assert.deepEqual(
      decodeJsonMessage('{"type":1,"invocationId":"42","target":"foo","arguments":[],"extraParameter":"1"}'),
      asRead({ type: MessageType.Invocation, invocationId: '42', target: 'foo', arguments: [] }),
    );
    assert.deepEqual(decodeJsonMessage('{"type":6,"extra":{"nested":[1]}}'), { type: MessageType.Ping });
  });

  it('ignores unknown message types', () => {
    assert.equal(decodeJsonMessage('{"type":99,"anything":true}'), null);
  });

  it('reads headers with the message', () => {
    assert.deepEqual(
      decodeJsonMessage(`{"type":5,${SERIALIZED_HEADERS},"invocationId":"123"}`),
      { type: MessageType.CancelInvocation, headers: HEADERS, invocationId: '123' },
    );
  });

  // ASP.NET Core's invalid-message vectors whose texts voice-hub shares.
  const INVALID: ReadonlyArray<readonly [string, string]> = [
    ['{}', "Missing required property 'type'."],
    ['{"type":1}', "Missing required property 'target'."],
    ['{"type":1,"invocationId":42}', "Expected 'invocationId' to be of type String."],
    ['{"type":1,"invocationId":"42","target":42}', "Expected 'target' to be of type String."],
    ['{"type":1,"invocationId":"42","target":"foo"}', "Missing required property 'arguments'."],
    ['{"type":1,"invocationId":"42","target":"foo","arguments":{}}', "Expected 'arguments' to be of type Array."],
    ['{"type":2}', "Missing required property 'invocationId'."],
    ['{"type":2,"invocationId":"42"}', "Missing required property 'item'."],
    ['{"type":3}', "Missing required property 'invocationId'."],
    ['{"type":3,"invocationId":"42","error":[]}', "Expected 'error' to be of type String."],
    ['{"type":4,"invocationId":"42","target":"foo"}', "Missing required property 'arguments'."],
  ];
  for (const [json, text] of INVALID) {
    it(`refuses ${json}`, () => assert.throws(() => decodeJsonMessage(json), { message: text }));
  }
});

describe('handshake response: the text ASP.NET Core writes', () => {
  it('success is {} and the record separator', () => assert.equal(handshakeResponse(), '{}' + RS));
  it('an error is {"error":...} and the record separator', () => {
    assert.equal(
      handshakeResponse("The protocol 'foo' is not supported."),
      '{"error":"The protocol \'foo\' is not supported."}' + RS,
    );
  });
});
