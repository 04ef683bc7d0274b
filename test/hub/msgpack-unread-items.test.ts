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

const CLOSE = [7, 'Connection closed with an error.', true];
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

  // ASP.NET binds the arguments in a try: bytes there that do not hold together fail the invocation, and
  // an unknown method's are never read at all. Four items are an invocation without arguments.
  const invocationHead = (target: string, items = 5): Buffer => Buffer.concat([Uint8Array.from([0x90 + items]), encode(1), encode({}), encode('i'), encode(target)]);
  const failing: [string, Uint8Array, string][] = [
    ['a reserved byte in the arguments', writeBinaryMessage(Buffer.concat([invocationHead('Echo'), Uint8Array.from([0x92, 0xc1, 0x01])])), "Failed to invoke 'Echo' due to an error on the server."],
    ['arguments cut short', writeBinaryMessage(Buffer.concat([invocationHead('Echo'), Uint8Array.from([0x92, 0xa5, 0x61])])), "Failed to invoke 'Echo' due to an error on the server."],
    ['no arguments', writeBinaryMessage(invocationHead('Echo', 4)), "Failed to invoke 'Echo' due to an error on the server."],
    ['broken arguments of a method that does not exist', writeBinaryMessage(Buffer.concat([invocationHead('Nope'), Uint8Array.from([0x92, 0xc1, 0x01])])), "Failed to invoke 'Nope' due to an error on the server. HubException: Method does not exist."],
  ];
  for (const [name, frame, error] of failing) {
    it(`${name}: that invocation fails, the connection stays`, async () => {
      assert.deepEqual(await answersTo(hub, 'messagepack', frame), [[3, {}, 'i', 1, error], ECHOED]);
    });
  }

  it('bytes after a message\'s array are never read', async () => {
    assert.deepEqual(await answersTo(hub, 'messagepack', writeBinaryMessage(Buffer.concat([invocationHead('Echo'), encode([2]), encode([]), Uint8Array.from([0xc1])]))), [[3, {}, 'i', 3, 2], ECHOED]);
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
