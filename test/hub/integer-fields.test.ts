// The integers of the hub protocol (the message type, an Ack's or Sequence's id, a Completion's result
// kind), on a real hub over a raw WebSocket, read as ASP.NET Core reads them: with GetInt32 / ReadInt32
// / ReadInt64, which refuse a fraction, a number past the type's range and, in MessagePack, any float
// (even 1.0). ASP.NET Core closes the connection with an error for those; only an integer type it does
// not know is a message to ignore.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { writeBinaryMessage } from '../../src/hub/binary-format.js';
import { answersTo, startHub, type TestHub } from './helpers.js';

const RS = '\u001e';
const CLOSE_ERROR = 'Connection closed with an error.';
/** A float64 (0xcb) MessagePack value, as a client that writes every number as a double sends it. */
const float64 = (n: number): number[] => {
  const b = Buffer.alloc(9);
  b[0] = 0xcb;
  b.writeDoubleBE(n, 1);
  return [...b];
};
const framed = (bytes: number[]): Uint8Array => writeBinaryMessage(Uint8Array.from(bytes));



describe('integer fields are read as ASP.NET Core reads them', () => {
  let hub: TestHub;
  before(async () => {
    hub = await startHub();
  });
  after(() => hub.stop());

  const jsonClosing: [string, string][] = [
    ['a fractional type', `{"type":1.5,"target":"Echo","arguments":[1]}${RS}`],
    ['a type past Int32', `{"type":2147483649,"target":"Echo","arguments":[1]}${RS}`],
  ];
  for (const [name, bad] of jsonClosing) {
    it(`JSON: ${name} closes the connection`, async () => {
      assert.deepEqual(await answersTo(hub, 'json', bad), [{ type: 7, error: CLOSE_ERROR }]);
    });
  }

  const mpClosing: [string, number[]][] = [
    // [1.0, {}, "i", "Echo", [7], []]: would run Echo(7) if the float were taken for the type 1.
    ['a type written as a float', [0x96, ...float64(1), 0x80, 0xa1, 0x69, 0xa4, ...Buffer.from('Echo'), 0x91, 0x07, 0x90]],
    ['an unknown type written as a float', [0x91, ...float64(99)]],
    ['a type past Int32 (uint64 4294967297)', [0x91, 0xcf, 0, 0, 0, 1, 0, 0, 0, 1]],
    ['an Ack whose id is a float', [0x92, 0x08, ...float64(1)]],
    ['a Sequence whose id is a float', [0x92, 0x09, ...float64(1)]],
    ['a Completion whose result kind is a float', [0x95, 0x03, 0x80, 0xa1, 0x78, ...float64(3), 0x01]],
  ];
  for (const [name, bytes] of mpClosing) {
    it(`MessagePack: ${name} closes the connection`, async () => {
      assert.deepEqual(await answersTo(hub, 'messagepack', framed(bytes)), [[7, CLOSE_ERROR, false]]);
    });
  }

  it('an unknown integer type is ignored in both protocols, in any integer format', async () => {
    assert.deepEqual(await answersTo(hub, 'json', `{"type":2147483647}${RS}`), [{ type: 3, invocationId: 'e', result: 1 }]);
    assert.deepEqual(await answersTo(hub, 'messagepack', framed([0x91, 0xd2, 0x7f, 0xff, 0xff, 0xff])), [[3, {}, 'e', 3, 1]]);
    assert.deepEqual(await answersTo(hub, 'messagepack', framed([0x92, 0xcd, 0x00, 0x06, 0x01])), [[3, {}, 'e', 3, 1]], 'a Ping as uint16');
  });
});
