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
    // JSON.parse makes each of these the integer 1, 6 or 8; GetInt32 / GetInt64 refuse how it is written.
    ['a type written with a fraction (1.0)', `{"type":1.0,"target":"Echo","arguments":[7]}${RS}`],
    ['a type written with an exponent (1e0)', `{"type":1e0,"target":"Echo","arguments":[7]}${RS}`],
    ['a Ping type written as 6E+0', `{ "type" : 6E+0 }${RS}`],
    ['a type written as 0.6e1 under an escaped name', `{"t\\u0079pe":0.6e1}${RS}`],
    ['an Ack whose id is written 1.0', `{"type":8,"sequenceId":1.0}${RS}`],
    ['an Ack whose id is past Int64 (2^63)', `{"type":8,"sequenceId":9223372036854775808}${RS}`],
    ['a Sequence whose id is below Int64 (-2^63 - 1)', `{"type":9,"sequenceId":-9223372036854775809}${RS}`],
    ['an Ack whose id has 400 digits', `{"type":8,"sequenceId":1${'0'.repeat(400)}}${RS}`],
    ['a Sequence whose id is written 1e0', `{"type":9,"sequenceId":1e0}${RS}`],
    // Written twice: ASP.NET reads each occurrence; JSON.parse would keep only the last.
    ['a type written twice, first as a string', `{"type":"x","type":1,"target":"Echo","arguments":[7]}${RS}`],
    ['a type written twice, first as 1.0', `{"type":1.0,"target":"Echo","arguments":[7],"type":1}${RS}`],
    ['a target written twice, first as a number', `{"type":1,"target":5,"target":"Echo","arguments":[7]}${RS}`],
    ['arguments written twice, first as an object', `{"type":1,"target":"Echo","arguments":{},"arguments":[7]}${RS}`],
  ];
  for (const [name, bad] of jsonClosing) {
    it(`JSON: ${name} closes the connection`, async () => {
      assert.deepEqual(await answersTo(hub, 'json', bad), [{ type: 7, error: CLOSE_ERROR, allowReconnect: true }]);
    });
  }

  const mpClosing: [string, number[]][] = [
    // [1.0, {}, "i", "Echo", [7], []]: would run Echo(7) if the float were taken for the type 1.
    ['a type written as a float', [0x96, ...float64(1), 0x80, 0xa1, 0x69, 0xa4, ...Buffer.from('Echo'), 0x91, 0x07, 0x90]],
    ['an unknown type written as a float', [0x91, ...float64(99)]],
    ['a type past Int32 (uint64 4294967297)', [0x91, 0xcf, 0, 0, 0, 1, 0, 0, 0, 1]],
    ['an Ack whose id is a float', [0x92, 0x08, ...float64(1)]],
    ['a Sequence whose id is a float', [0x92, 0x09, ...float64(1)]],
    ['an Ack whose id is past Int64 (uint64 2^63)', [0x92, 0x08, 0xcf, 0x80, 0, 0, 0, 0, 0, 0, 0]],
    ['a Completion whose result kind is a float', [0x95, 0x03, 0x80, 0xa1, 0x78, ...float64(3), 0x01]],
  ];
  for (const [name, bytes] of mpClosing) {
    it(`MessagePack: ${name} closes the connection`, async () => {
      assert.deepEqual(await answersTo(hub, 'messagepack', framed(bytes)), [[7, CLOSE_ERROR, true]]);
    });
  }

  it('JSON: integers written as integers read as before, whatever else in the message looks like a number', async () => {
    const echoes = [{ type: 3, invocationId: 'e', result: 1 }];
    // Ping: a negative zero is an integer to GetInt32 (type 0, unknown, ignored); 1.0 inside a string or an argument is no type.
    assert.deepEqual(await answersTo(hub, 'json', `{"type":-0}${RS}`), echoes);
    assert.deepEqual(await answersTo(hub, 'json', `{"headers":{"type":"1.0"},"type":6,"error":"type\\":1.0"}${RS}`), echoes);
    const invoked = await answersTo(hub, 'json', `{"arguments":[{"type":1.0,"n":[1e0,{"type":2.5}]}],"type":1,"invocationId":"a","target":"Echo"}${RS}`);
    assert.deepEqual(invoked, [{ type: 3, invocationId: 'a', result: { type: 1, n: [1, { type: 2.5 }] } }, ...echoes]);
  });

  it('sequence ids are read in all of Int64, past what a double holds exactly, as GetInt64 / ReadInt64 read them', async () => {
    const echoes = [{ type: 3, invocationId: 'e', result: 1 }];
    for (const id of ['9223372036854775807', '-9223372036854775808', '9007199254740993', '-5']) {
      assert.deepEqual(await answersTo(hub, 'json', `{"type":8,"sequenceId":${id}}${RS}`), echoes, id);
    }
    const mpEchoes = [[3, {}, 'e', 3, 1]];
    // [8, Int64.MaxValue as uint64], [8, Int64.MinValue as int64], [8, 2^53 + 1 as int64].
    for (const bytes of [[0x92, 0x08, 0xcf, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff], [0x92, 0x08, 0xd3, 0x80, 0, 0, 0, 0, 0, 0, 0], [0x92, 0x08, 0xd3, 0, 0x20, 0, 0, 0, 0, 0, 1]]) {
      assert.deepEqual(await answersTo(hub, 'messagepack', framed(bytes)), mpEchoes, Buffer.from(bytes).toString('hex'));
    }
  });

  it('an unknown integer type is ignored in both protocols, in any integer format', async () => {
    assert.deepEqual(await answersTo(hub, 'json', `{"type":2147483647}${RS}`), [{ type: 3, invocationId: 'e', result: 1 }]);
    assert.deepEqual(await answersTo(hub, 'messagepack', framed([0x91, 0xd2, 0x7f, 0xff, 0xff, 0xff])), [[3, {}, 'e', 3, 1]]);
    assert.deepEqual(await answersTo(hub, 'messagepack', framed([0x92, 0xcd, 0x00, 0x06, 0x01])), [[3, {}, 'e', 3, 1]], 'a Ping as uint16');
  });
});
