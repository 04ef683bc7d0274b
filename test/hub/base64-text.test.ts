// Base64Text arguments: the JSON protocol writes them without JSON.stringify's escape scan, and every
// frame must be byte for byte what the same message with the plain Base64 string gives, with either
// protocol, whatever the other arguments are; misplaced (nested), JSON still writes the string and
// MessagePack refuses rather than writing an object.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Base64Text } from '../../src/hub/base64-text.js';
import { jsonProtocol } from '../../src/hub/json-protocol.js';
import { invocation, MessageType, type HubMessage, type InvocationMessage } from '../../src/hub/messages.js';
import { createMessagePackProtocol } from '../../src/hub/msgpack-protocol.js';

const msgpack = createMessagePackProtocol(1024 * 1024);
/** The JSON protocol writes text. */
const json = (message: HubMessage): string => jsonProtocol.encode(message) as string;
const bytes = Uint8Array.from({ length: 700 }, (_, i) => (i * 37) & 0xff);
const text = Base64Text.of(bytes);
const plain = Buffer.from(bytes).toString('base64');

/** The same message with each top-level Base64Text replaced by its string. */
function withStrings(message: InvocationMessage): InvocationMessage {
  return { ...message, arguments: message.arguments.map((a) => (a instanceof Base64Text ? a.text : a)) };
}

test('Base64Text is the Base64 of its bytes, and reads as that string', () => {
  assert.equal(text.text, plain);
  assert.equal(String(text), plain);
  assert.equal(JSON.stringify({ nested: text }), JSON.stringify({ nested: plain }));
  // A view into a larger buffer: only its own bytes.
  assert.equal(Base64Text.of(Buffer.from([9, 1, 2, 3, 9]).subarray(1, 4)).text, 'AQID');
});

test('frames with Base64Text arguments are the frames of the same strings, with either protocol', () => {
  const messages = [
    invocation('AudioResponse', [text]),
    invocation('Mixed', [1, text, undefined, { a: [1, 'x"\\\n'], b: Uint8Array.of(1, 2) }, Uint8Array.of(255), null, text, 'é\u2028']),
    { type: MessageType.Invocation, target: 'WithId', invocationId: '7', headers: { h: 'v' }, arguments: [text] },
    invocation('Empty', [Base64Text.of(new Uint8Array(0))]),
  ] as InvocationMessage[];
  for (const message of messages) {
    assert.equal(jsonProtocol.encode(message), jsonProtocol.encode(withStrings(message)), `JSON ${message.target}`);
    assert.deepEqual(Buffer.from(msgpack.encode(message) as Uint8Array), Buffer.from(msgpack.encode(withStrings(message)) as Uint8Array), `MessagePack ${message.target}`);
    // And the JSON text parses back to the strings.
    assert.deepEqual(JSON.parse(json(message).slice(0, -1)).arguments, JSON.parse(json(withStrings(message)).slice(0, -1)).arguments);
  }
  assert.equal(jsonProtocol.encode(invocation('AudioResponse', [text])), `{"type":1,"target":"AudioResponse","arguments":["${plain}"]}\u001e`);
});

test('nested Base64Text: JSON writes its string, MessagePack refuses to write an object for it', () => {
  const nested = invocation('Nested', [{ data: text }]);
  assert.equal(jsonProtocol.encode(nested), `{"type":1,"target":"Nested","arguments":[{"data":"${plain}"}]}\u001e`);
  assert.throws(() => msgpack.encode(nested), /Base64Text is only sent as a top-level invocation argument/);
});
