// Empty ids, targets and header texts, on a real hub over a raw WebSocket, answered as ASP.NET Core
// answers them: its readers take an empty invocation id of a StreamInvocation, StreamItem, Completion
// or CancelInvocation for a missing one (JsonHubProtocol's string.IsNullOrEmpty checks, the
// MessagePack worker's ThrowIfNullOrEmpty), and the MessagePack reader does the same for an empty
// target, header name or value, or stream id: the connection is closed with an error. A MessagePack
// Completion whose error is nil is a completion without error text, not a broken message.
import { encode } from '@msgpack/msgpack';
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { writeBinaryMessage } from '../../src/hub/binary-format.js';
import { answersTo, startHub, type TestHub } from './helpers.js';

const RS = '\u001e';
const CLOSE_ERROR = 'Connection closed with an error.';
const pack = (items: unknown[]): Uint8Array => writeBinaryMessage(encode(items));



describe('empty ids and targets close the connection, as in ASP.NET Core', () => {
  let hub: TestHub;
  before(async () => {
    hub = await startHub();
  });
  after(() => hub.stop());

  const jsonCases: [string, string][] = [
    ['a StreamInvocation with an empty id', `{"type":4,"invocationId":"","target":"Echo","arguments":[1]}${RS}`],
    ['a StreamItem with an empty id', `{"type":2,"invocationId":"","item":1}${RS}`],
    ['a Completion with an empty id', `{"type":3,"invocationId":"","result":1}${RS}`],
    ['a CancelInvocation with an empty id', `{"type":5,"invocationId":""}${RS}`],
  ];
  for (const [name, bad] of jsonCases) {
    it(`JSON: ${name}`, async () => {
      assert.deepEqual(await answersTo(hub, 'json', bad), [{ type: 7, error: CLOSE_ERROR, allowReconnect: true }]);
    });
  }

  const mpCases: [string, unknown[]][] = [
    ['an Invocation with an empty target', [1, {}, 'i', '', [1], []]],
    ['a StreamInvocation with an empty id', [4, {}, '', 'Echo', [1], []]],
    ['a StreamInvocation with an empty target', [4, {}, 's', '', [1], []]],
    ['a StreamItem with an empty id', [2, {}, '', 1]],
    ['a Completion with an empty id', [3, {}, '', 3, 1]],
    ['a CancelInvocation with an empty id', [5, {}, '']],
    ['an empty header name', [1, { '': 'v' }, 'i', 'Echo', [1], []]],
    ['an empty header value', [1, { k: '' }, 'i', 'Echo', [1], []]],
    ['an empty stream id', [1, {}, 'i', 'Echo', [1], ['']]],
  ];
  for (const [name, items] of mpCases) {
    it(`MessagePack: ${name}`, async () => {
      assert.deepEqual(await answersTo(hub, 'messagepack', pack(items)), [[7, CLOSE_ERROR, true]]);
    });
  }

  it('MessagePack: a header name that is a number (not text) closes the connection, as ASP.NET reads names as strings', async () => {
    // [1, {1: "v"}, "i", "Echo", [1], []]: the decoder would make the key the property "1".
    const bytes = [0x96, 0x01, 0x81, 0x01, 0xa1, 0x76, 0xa1, 0x69, 0xa4, ...Buffer.from('Echo'), 0x91, 0x01, 0x90];
    assert.deepEqual(await answersTo(hub, 'messagepack', writeBinaryMessage(Uint8Array.from(bytes))), [[7, CLOSE_ERROR, true]]);
  });

  it('MessagePack: a Completion with a nil error is read, and ignored like any completion the hub did not ask for', async () => {
    assert.deepEqual(await answersTo(hub, 'messagepack', pack([3, {}, 'x', 1, null])), [[3, {}, 'e', 3, 1]]);
  });

  it('an Invocation with an empty id is still a non-blocking invocation in both protocols', async () => {
    assert.deepEqual(await answersTo(hub, 'json', `{"type":1,"invocationId":"","target":"Echo","arguments":[2]}${RS}`), [{ type: 3, invocationId: 'e', result: 1 }]);
    assert.deepEqual(await answersTo(hub, 'messagepack', pack([1, {}, '', 'Echo', [2], []])), [[3, {}, 'e', 3, 1]]);
  });
});
