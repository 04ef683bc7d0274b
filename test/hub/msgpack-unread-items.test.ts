// MessagePack items that do not decode here (a map with a boolean key: @msgpack/msgpack makes objects,
// whose keys are text), on a real hub over a raw WebSocket, judged as ASP.NET Core judges them: its
// reader takes each message type's items by position and never decodes the rest, only binds an
// invocation's arguments (a failure is that invocation's completion error) and skips a stream item or
// the result of a completion nobody asked for. Only an item it reads closes the connection.
import { decode, encode } from '@msgpack/msgpack';
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { writeBinaryMessage } from '../../src/hub/binary-format.js';
import { answersTo, startHub, type TestHub } from './helpers.js';

const CLOSE = [7, 'Connection closed with an error.', false];
const ECHOED = [3, {}, 'e', 3, 1];
/** `{true: 1}`: valid MessagePack that this decoder cannot turn into an object. */
const BOOL_KEY_MAP = Symbol('bool-key map');
/** `[{true: 1}]`: arguments holding such a map. */
const ARGS_WITH_BOOL_KEY_MAP = Symbol('arguments with a bool-key map');
const RAW = new Map<symbol, Uint8Array>([
  [BOOL_KEY_MAP, Uint8Array.from([0x81, 0xc3, 0x01])],
  [ARGS_WITH_BOOL_KEY_MAP, Uint8Array.from([0x91, 0x81, 0xc3, 0x01])],
]);

/** A message (fixarray) whose items are encoded as usual, the symbols above as their raw bytes. */
function message(items: unknown[]): Uint8Array {
  const parts = items.map((item) => (typeof item === 'symbol' ? RAW.get(item)! : encode(item)));
  return writeBinaryMessage(Buffer.concat([Uint8Array.from([0x90 + items.length]), ...parts]));
}


describe('MessagePack: items ASP.NET Core never decodes do not break a message', () => {
  let hub: TestHub;
  before(async () => {
    hub = await startHub();
  });
  after(() => hub.stop());

  const ignored: [string, unknown[]][] = [
    ['a Ping with an extra item', [6, BOOL_KEY_MAP]],
    ['an unknown type with an extra item', [99, BOOL_KEY_MAP]],
    ['an Ack with an extra item', [8, 1, BOOL_KEY_MAP]],
    ['a CancelInvocation with an extra item', [5, {}, 'x', BOOL_KEY_MAP]],
    ['a StreamItem whose item does not decode', [2, {}, 'x', BOOL_KEY_MAP]],
    ['a Completion whose result does not decode', [3, {}, 'x', 3, BOOL_KEY_MAP]],
  ];
  for (const [name, items] of ignored) {
    it(`${name} is read and ignored`, async () => {
      assert.deepEqual(await answersTo(hub, 'messagepack', message(items)), [ECHOED]);
    });
  }

  it('an Invocation with a seventh item that does not decode runs', async () => {
    assert.deepEqual(await answersTo(hub, 'messagepack', message([1, {}, 'i', 'Echo', [2], [], BOOL_KEY_MAP])), [[3, {}, 'i', 3, 2], ECHOED]);
  });

  it('arguments that do not decode fail that invocation only', async () => {
    assert.deepEqual(await answersTo(hub, 'messagepack', message([1, {}, 'i', 'Echo', ARGS_WITH_BOOL_KEY_MAP, [], BOOL_KEY_MAP])), [
      [3, {}, 'i', 1, "Failed to invoke 'Echo' due to an error on the server."],
      ECHOED,
    ]);
  });

  const closing: [string, unknown[]][] = [
    ['the headers of an Invocation', [1, BOOL_KEY_MAP, 'i', 'Echo', [2], []]],
    ['the stream ids of an Invocation', [1, {}, 'i', 'Echo', [2], BOOL_KEY_MAP]],
    ['the error of a Completion', [3, {}, 'x', 1, BOOL_KEY_MAP]],
    ['the id of an Ack', [8, BOOL_KEY_MAP]],
    ['the error of a Close', [7, BOOL_KEY_MAP]],
  ];
  for (const [name, items] of closing) {
    it(`closes when an item it reads does not decode: ${name}`, async () => {
      assert.deepEqual(await answersTo(hub, 'messagepack', message(items)), [CLOSE]);
    });
  }
});
