// The JSON and MessagePack hub protocols: the example bytes of SignalR's hub protocol, round trips through the official
// client's own protocol implementations in both directions, and garbage that must be refused.
import { encode } from '@msgpack/msgpack';
import { JsonHubProtocol, NullLogger, type HubMessage as ClientMessage } from '@microsoft/signalr';
import { MessagePackHubProtocol } from '@microsoft/signalr-protocol-msgpack';
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { writeBinaryMessage } from '../../src/hub/binary-format.js';
import { InvalidDataError } from '../../src/hub/errors.js';
import { jsonProtocol } from '../../src/hub/json-protocol.js';
import { MessageType, type HubMessage } from '../../src/hub/messages.js';
import { createMessagePackProtocol } from '../../src/hub/msgpack-protocol.js';

const msgpack = createMessagePackProtocol(64 * 1024);
const bytes = (s: string): Uint8Array => new TextEncoder().encode(s);
const hex = (s: string): Uint8Array => Uint8Array.from(s.split(' ').map((h) => parseInt(h, 16)));

/** Decodes every framed message of our own encoder's output. */
function decodeAll(protocol: typeof jsonProtocol, encoded: string | Uint8Array): (HubMessage | null)[] {
  const buffer = typeof encoded === 'string' ? bytes(encoded) : encoded;
  const out: (HubMessage | null)[] = [];
  let offset = 0;
  for (let next = protocol.read(buffer, 0, 1 << 20); next; next = protocol.read(buffer, offset, 1 << 20)) {
    out.push(protocol.decode(next.body));
    offset = next.end;
  }
  assert.equal(offset, buffer.length);
  return out;
}

describe("MessagePack: the examples of SignalR's hub protocol", () => {
  const examples: [string, string, Record<string, unknown>][] = [
    ['Invocation', '96 01 80 a3 78 79 7a a6 6d 65 74 68 6f 64 91 2a 90', { type: 1, invocationId: 'xyz', target: 'method', arguments: [42], streamIds: [] }],
    ['non-blocking Invocation', '96 01 80 c0 a6 6d 65 74 68 6f 64 91 2a 90', { type: 1, target: 'method', arguments: [42], streamIds: [] }],
    ['StreamInvocation', '96 04 80 a3 78 79 7a a6 6d 65 74 68 6f 64 91 2a 90', { type: 4, invocationId: 'xyz', target: 'method', arguments: [42] }],
    ['StreamItem', '94 02 80 a3 78 79 7a 2a', { type: 2, invocationId: 'xyz', item: 42 }],
    ['error Completion', '95 03 80 a3 78 79 7a 01 a5 45 72 72 6f 72', { type: 3, invocationId: 'xyz', error: 'Error' }],
    ['void Completion', '94 03 80 a3 78 79 7a 02', { type: 3, invocationId: 'xyz', hasResult: false }],
    ['result Completion', '95 03 80 a3 78 79 7a 03 2a', { type: 3, invocationId: 'xyz', result: 42, hasResult: true }],
    ['CancelInvocation', '93 05 80 a3 78 79 7a', { type: 5, invocationId: 'xyz' }],
    ['Ping', '91 06', { type: 6 }],
    ['Close', '92 07 a3 78 79 7a', { type: 7, error: 'xyz' }],
    ['Close allowing reconnect', '93 07 a3 78 79 7a c3', { type: 7, error: 'xyz', allowReconnect: true }],
    ['Ack', '92 08 cc 24', { type: 8, sequenceId: 36 }],
    ['Sequence', '92 09 cc 13', { type: 9, sequenceId: 19 }],
    ['headers', '96 01 82 a1 78 a1 79 a1 7a a1 7a a3 78 79 7a a6 6d 65 74 68 6f 64 91 2a 90', { headers: { x: 'y', z: 'z' }, target: 'method' }],
  ];
  for (const [name, body, expected] of examples) {
    it(name, () => {
      const message = msgpack.decode(hex(body)) as unknown as Record<string, unknown>;
      for (const [k, v] of Object.entries(expected)) assert.deepEqual(message[k], v, k);
    });
  }

  it('writes Ping as exactly 0x91 0x06', () => {
    assert.deepEqual([...(msgpack.encode({ type: MessageType.Ping }) as Uint8Array)], [0x02, 0x91, 0x06]);
  });
});

describe('round trips with the official client protocols', () => {
  const fromServer: HubMessage[] = [
    { type: 1, target: 'AudioResponse', arguments: [{ sessionId: 's1', data: 'AAEC' }, 3, null, true] },
    { type: 3, invocationId: '7', result: { a: [1, 'b'] }, hasResult: true },
    { type: 3, invocationId: '8', result: null, hasResult: true },
    { type: 3, invocationId: '9', error: 'An unexpected error occurred invoking \'X\' on the server.', hasResult: false },
    { type: 6 },
    { type: 7, error: 'Connection closed with an error.', allowReconnect: false },
    { type: 7, error: 'shutting down', allowReconnect: true },
  ];
  const clients = [
    { name: 'json', ours: jsonProtocol, theirs: new JsonHubProtocol() },
    { name: 'messagepack', ours: msgpack, theirs: new MessagePackHubProtocol() },
  ];
  for (const { name, ours, theirs } of clients) {
    it(`${name}: the client parses what we write`, () => {
      for (const message of fromServer) {
        const encoded = ours.encode(message);
        assert.equal(typeof encoded === 'string', name === 'json', 'JSON is text, MessagePack is binary');
        const input = typeof encoded === 'string' ? encoded : encoded.slice().buffer;
        const [parsed] = theirs.parseMessages(input as never, NullLogger.instance) as unknown as Record<string, unknown>[];
        assert.equal(parsed?.type, message.type);
        if (message.type === 1) assert.deepEqual(parsed?.arguments, message.arguments);
        if (message.type === 3) assert.deepEqual([parsed?.result ?? null, parsed?.error], [message.result ?? null, message.error]);
        if (message.type === 7) assert.deepEqual([parsed?.error, parsed?.allowReconnect ?? false], [message.error, message.allowReconnect]);
      }
    });

    it(`${name}: we parse what the client writes`, () => {
      const fromClient: ClientMessage[] = [
        { type: 1, invocationId: '1', target: 'SendAudioData', arguments: ['s1', 'AAEC'] } as ClientMessage,
        { type: 1, target: 'JoinSession', arguments: ['s1', 'token'] } as ClientMessage,
        { type: 1, invocationId: '2', target: 'Up', arguments: [], streamIds: ['3'] } as ClientMessage,
        { type: 6 } as ClientMessage,
        { type: 5, invocationId: '2' } as ClientMessage,
      ];
      for (const message of fromClient) {
        const written = theirs.writeMessage(message);
        const [parsed] = decodeAll(ours, typeof written === 'string' ? written : new Uint8Array(written as ArrayBuffer));
        const expected = message as unknown as Record<string, unknown>;
        assert.equal(parsed?.type, expected.type);
        for (const key of ['invocationId', 'target', 'arguments', 'streamIds']) {
          assert.deepEqual((parsed as unknown as Record<string, unknown>)[key], expected[key], key);
        }
      }
    });
  }

  it('MessagePack carries bytes as Uint8Array, JSON as Base64', () => {
    const audio = Uint8Array.from([0, 1, 2, 250]);
    const viaMsgpack = new MessagePackHubProtocol().writeMessage({ type: 1, target: 'SendAudioData', arguments: ['s', audio] } as ClientMessage);
    const [decoded] = decodeAll(msgpack, new Uint8Array(viaMsgpack as ArrayBuffer));
    const arg = decoded?.type === 1 ? decoded.arguments[1] : undefined;
    assert.ok(arg instanceof Uint8Array);
    assert.deepEqual([...arg], [0, 1, 2, 250]);

    const json = jsonProtocol.encode({ type: 1, target: 'AudioData', arguments: [audio, Buffer.from([1, 2])] }) as string;
    assert.equal(json, '{"type":1,"target":"AudioData","arguments":["AAEC+g==","AQI="]}\u001e');
  });

  it('writes JSON completions and closes as ASP.NET does', () => {
    assert.equal(jsonProtocol.encode({ type: 3, invocationId: '1', result: undefined, hasResult: true }), '{"type":3,"invocationId":"1","result":null}\u001e');
    assert.equal(jsonProtocol.encode({ type: 3, invocationId: '1', hasResult: false }), '{"type":3,"invocationId":"1"}\u001e');
    assert.equal(jsonProtocol.encode({ type: 7 }), '{"type":7}\u001e');
    assert.equal(jsonProtocol.encode({ type: 7, error: 'e', allowReconnect: true }), '{"type":7,"error":"e","allowReconnect":true}\u001e');
  });
});

describe('garbage', () => {
  const badJson: [string, string][] = [
    ['not JSON', 'hello'],
    ['a JSON array', '[1,2]'],
    ['null', 'null'],
    ['no type', '{"target":"x","arguments":[]}'],
    ['type as a string', '{"type":"1","target":"x","arguments":[]}'],
    ['Invocation without target', '{"type":1,"arguments":[]}'],
    ['Invocation without arguments', '{"type":1,"target":"x"}'],
    ['arguments not an array', '{"type":1,"target":"x","arguments":{}}'],
    ['invocationId a number', '{"type":1,"invocationId":1,"target":"x","arguments":[]}'],
    ['headers with a number', '{"type":1,"headers":{"a":1},"target":"x","arguments":[]}'],
    ['streamIds with a number', '{"type":1,"target":"x","arguments":[],"streamIds":[1]}'],
    ['Completion with error and result', '{"type":3,"invocationId":"1","error":"e","result":1}'],
    ['Close with allowReconnect a string', '{"type":7,"allowReconnect":"yes"}'],
    ['Ack without sequenceId', '{"type":8}'],
    ['deep nesting', '['.repeat(100_000)],
    // ASP.NET's reader takes EF BB BF for an invalid start of a value; a decoder's default drops it.
    ['a UTF-8 byte order mark before the object', '\ufeff{"type":6}'],
  ];
  for (const [name, input] of badJson) {
    it(`JSON: ${name}`, () => assert.throws(() => jsonProtocol.decode(bytes(input)), InvalidDataError));
  }

  it('JSON: invalid UTF-8', () => {
    assert.throws(() => jsonProtocol.decode(Uint8Array.from([0x7b, 0xff, 0x7d])), InvalidDataError);
  });

  it('JSON and MessagePack: unknown message types are ignored', () => {
    assert.equal(jsonProtocol.decode(bytes('{"type":99,"whatever":[1]}')), null);
    assert.equal(msgpack.decode(encode([99, 'x'])), null);
  });

  const badMsgpack: [string, Uint8Array][] = [
    ['empty body', new Uint8Array(0)],
    ['reserved byte 0xc1', Uint8Array.from([0xc1])],
    ['truncated array', Uint8Array.from([0x96, 0x01])],
    ['not an array', encode({ type: 1 })],
    ['empty array', encode([])],
    ['type as a string', encode(['1'])],
    ['Invocation without a target', encode([1, {}, null])],
    ['target not a string', encode([1, {}, null, 5, []])],
    ['headers not a map', encode([1, [], null, 'x', []])],
    ['header value not a string', encode([1, { a: 1 }, null, 'x', []])],
    ['invocationId a number', encode([1, {}, 5, 'x', []])],
    ['unknown result kind', encode([3, {}, '1', 7])],
    ['error completion without error', encode([3, {}, '1', 1])],
    ['Close error a number', encode([7, 5])],
    ['string length beyond the limit', Uint8Array.from([0xdb, 0x7f, 0xff, 0xff, 0xff])],
  ];
  for (const [name, body] of badMsgpack) {
    it(`MessagePack: ${name}`, () => assert.throws(() => msgpack.decode(body), InvalidDataError));
  }

  // ASP.NET reads the envelope, then binds the arguments on their own: arguments that cannot be read
  // fail that invocation (a completion error), they do not close the connection.
  const head = [...encode([1, {}, '7', 'JoinSession'])].slice(1);
  const withArguments = (...args: number[]): Uint8Array => Uint8Array.from([0x95, ...head, ...args]);
  const unreadable: [string, Uint8Array, RegExp][] = [
    ['arguments not an array', encode([1, {}, '7', 'JoinSession', 'y']), /Reading array length for 'arguments' failed/],
    // ASP.NET's own test vector (InvocationArgumentArrayMissing): four items are a binding failure.
    ['no arguments at all', encode([1, {}, '7', 'JoinSession']), /Reading array length for 'arguments' failed/],
    // Bytes that do not hold together in the arguments: ASP.NET binds them in a try, and never reads on.
    ['a reserved byte in the arguments', withArguments(0x92, 0xc1, 0xa1, 0x78), /Invalid MessagePack in 'arguments'/],
    ['arguments announcing more items than bytes', withArguments(0xdd, 0xff, 0xff, 0xff, 0xff, 0xa1, 0x78), /Invalid MessagePack in 'arguments'/],
    ['arguments truncated', withArguments(0x92, 0xa1), /Invalid MessagePack in 'arguments'/],
    ['broken arguments before broken stream ids', Uint8Array.from([0x96, ...head, 0x91, 0xc1, 0xc1]), /Invalid MessagePack in 'arguments'/],
    ['a map key that is an array', withArguments(0x92, 0x81, 0x90, 0x01, 0xa1, 0x78), /Invalid MessagePack in 'arguments'/],
    ['a map key that is bytes', withArguments(0x92, 0x81, 0xc4, 0x01, 0x00, 0x01, 0xa1, 0x78), /Invalid MessagePack in 'arguments'/],
    ['a malformed timestamp', withArguments(0x92, 0xd4, 0xff, 0x00, 0xa1, 0x78), /Invalid MessagePack in 'arguments'/],
  ];
  for (const [name, body, why] of unreadable) {
    it(`MessagePack: ${name} is a binding failure of the invocation`, () => {
      const message = msgpack.decode(body);
      assert.ok(message?.type === 1);
      assert.deepEqual([message.invocationId, message.target, message.arguments, message.streamIds], ['7', 'JoinSession', [], undefined]);
      assert.match(message.bindingFailure ?? '', why);
    });
  }

  it('MessagePack: a broken structure where the reader reads it is a protocol error', () => {
    assert.throws(() => msgpack.decode(Uint8Array.from([0x95, 0x01, 0x80, 0xa1, 0x37, 0xc1, 0x90])), InvalidDataError, 'in the target');
    // Read once the arguments were (in ASP.NET, once they bound to the method).
    assert.throws(() => msgpack.decode(Uint8Array.from([0x96, ...head, 0x90, 0xc1])), InvalidDataError, 'in streamIds');
    assert.throws(() => msgpack.decode(Uint8Array.from([0x93, 0x03, 0x80, 0xc1])), InvalidDataError, 'in a completion\'s id');
    // More items announced than bytes are left: the array header itself is refused, as MessagePack-CSharp's is.
    assert.throws(() => msgpack.decode(Uint8Array.from([0x95, 0x06, 0x92, 0xc1])), InvalidDataError, 'not an invocation');
  });

  it('MessagePack: a break is named once, whether it closes the connection or fails the invocation', () => {
    const closes: [Uint8Array, string][] = [
      [Uint8Array.from([0x92, 0x01]), 'Invalid MessagePack: the message ends inside a value.'],
      [Uint8Array.from([0x95, 0x01, 0x80, 0xa1, 0x37, 0xc1, 0x90]), 'Invalid MessagePack: byte 0xc1 is not a format.'],
      [Uint8Array.from([0x95, 0x01, 0x80, 0xa1, 0x37, 0xa5, 0x4a]), 'Invalid MessagePack: the message ends inside a value.'],
    ];
    for (const [body, text] of closes) {
      assert.throws(() => msgpack.decode(body), (e: unknown) => e instanceof InvalidDataError && e.message === text, text);
    }
    const failures: [Uint8Array, string][] = [
      [withArguments(0x92, 0xa1), "Invalid MessagePack in 'arguments': the message ends inside a value."],
      [withArguments(0x92, 0xc1, 0xa1, 0x78), "Invalid MessagePack in 'arguments': byte 0xc1 is not a format."],
    ];
    for (const [body, text] of failures) {
      const message = msgpack.decode(body);
      assert.ok(message?.type === 1);
      assert.equal(message.bindingFailure, text);
    }
  });

  it('MessagePack: what the reader never reads is never judged, broken or not (items past a type\'s, bytes after the array)', () => {
    assert.deepEqual(msgpack.decode(Uint8Array.from([0x91, 0x06, 0x06])), { type: 6 }, 'a Ping and a byte after it');
    assert.deepEqual(msgpack.decode(Uint8Array.from([0x92, 0x06, 0xc1])), { type: 6 }, 'a Ping with a broken second item');
    assert.deepEqual(msgpack.decode(Uint8Array.from([0x93, 0x08, 0x07, 0xc1])), { type: 8, sequenceId: 7 }, 'an Ack with a broken third item');
    assert.deepEqual(msgpack.decode(Uint8Array.from([0x94, 0x02, 0x80, 0xa1, 0x78, 0xc1])), { type: 2, headers: {}, invocationId: 'x', item: null }, 'a StreamItem whose item is broken (bound on its own)');
    const invocation = msgpack.decode(Uint8Array.from([0x95, ...head, 0x90, 0x06, 0xc1]));
    assert.ok(invocation?.type === 1);
    assert.deepEqual([invocation.target, invocation.arguments, invocation.bindingFailure], ['JoinSession', [], undefined], 'an invocation and bytes after it');
  });

  it('MessagePack: a framed garbage body fails in decode, not in framing', () => {
    const framed = msgpack.read(writeBinaryMessage(Uint8Array.from([0xc1, 0xc1])), 0, 1024);
    assert.ok(framed);
    assert.throws(() => msgpack.decode(framed.body), InvalidDataError);
  });
});
