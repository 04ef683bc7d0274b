// Argument binding is the same for JSON and MessagePack (issue 12, class 10): one table of bad
// argument shapes, sent in both protocols over a raw client, gets ASP.NET's binding-failure
// completion with the exact text, and the connection lives on (the next invocation is answered).
// MessagePack can also carry values JSON cannot (map keys that are arrays or bytes, malformed
// timestamps): they are a binding failure of that invocation too, not a protocol error.
import assert from 'node:assert/strict';
import { encode } from '@msgpack/msgpack';
import { after, before, describe, it } from 'node:test';
import { writeBinaryMessage } from '../../src/hub/binary-format.js';
import { HubWire, type Protocol } from '../hardening/hub-wire.js';
import { startHub, type TestHub } from './helpers.js';

const BINDING_FAILURE = "Failed to invoke 'JoinSession' due to an error on the server.";

let hub: TestHub;
let base: string;

before(async () => {
  hub = await startHub();
  base = `http://127.0.0.1:${hub.port}`;
});

after(() => hub.stop());

/** The same table for both protocols: arguments of JoinSession(string, string). */
const BAD_SHAPES: [string, unknown[]][] = [
  ['no arguments', []],
  ['one argument', ['s']],
  ['three arguments', ['s', 't', 'x']],
  ['a number for the session id', [1, 't']],
  ['a number for the token', ['s', 2]],
  ['a fraction', [1.5, 't']],
  ['a boolean', [true, 't']],
  ['an object', [{ id: 's' }, 't']],
  ['an array', [['s'], 't']],
  ['an empty object and an empty array', [{}, []]],
];

async function expectBindingFailure(wire: HubWire, args: unknown[]): Promise<void> {
  const completion = await wire.invoke('JoinSession', args);
  assert.deepEqual({ error: completion.error, result: completion.result }, { error: BINDING_FAILURE, result: undefined });
}

/** The connection still works after the failure. */
async function assertStillServes(wire: HubWire): Promise<void> {
  assert.equal((await wire.invoke('Echo', ['still here'])).result, 'still here');
  assert.ok(wire.open);
}

for (const protocol of ['json', 'messagepack'] as Protocol[]) {
  describe(`${protocol}: binding JoinSession(string, string)`, () => {
    for (const [name, args] of BAD_SHAPES) {
      it(`${name}: the completion error, the connection stays`, async () => {
        const wire = await HubWire.connect(base, protocol);
        try {
          await expectBindingFailure(wire, args);
          await assertStillServes(wire);
        } finally {
          wire.close();
        }
      });
    }

    it('valid arguments bind, null included (a .NET string parameter takes null)', async () => {
      const wire = await HubWire.connect(base, protocol);
      try {
        assert.equal((await wire.invoke('JoinSession', ['s', 't'])).result, 's:t');
        assert.equal((await wire.invoke('JoinSession', [null, 't'])).result, 'null:t');
      } finally {
        wire.close();
      }
    });
  });
}

describe('messagepack: argument values that do not decode', () => {
  const head = [...encode([1, {}, 'raw', 'JoinSession'])].slice(1);
  const raw: [string, number[]][] = [
    ['a map key that is an array', [0x92, 0x81, 0x90, 0x01, 0xa1, 0x78]],
    ['a map key that is bytes', [0x92, 0x81, 0xc4, 0x01, 0x00, 0x01, 0xa1, 0x78]],
    ['a malformed timestamp', [0x92, 0xd4, 0xff, 0x00, 0xa1, 0x78]],
    ['arguments that are not an array', [0xa1, 0x78]],
    // Bytes that are not UTF-8 are no text, however short the str (a lenient reader makes an overlong
    // C1 8A the letter J, and FF the letter ÿ) or long (a CESU-8 surrogate past 200 bytes, once U+FFFD).
    ['a str holding an overlong form of J (C1 8A)', [0x92, 0xa2, 0xc1, 0x8a, 0xa1, 0x78]],
    ['a str holding a byte that begins no character (FF)', [0x92, 0xa1, 0xff, 0xa1, 0x78]],
    ['a str of 300 bytes ending in a CESU-8 surrogate', [0x92, 0xda, 0x01, 0x2c, ...Buffer.alloc(297, 0x61), 0xed, 0xa0, 0x80, 0xa1, 0x78]],
  ];
  for (const [name, args] of raw) {
    it(`${name}: the same completion error, the connection stays`, async () => {
      const wire = await HubWire.connect(base, 'messagepack');
      try {
        wire.sendRaw(writeBinaryMessage(Uint8Array.from([0x95, ...head, ...args])));
        const completion = await wire.waitFor((m) => m.type === 3 && m.invocationId === 'raw', 5000, 'the completion');
        assert.equal(completion.error, BINDING_FAILURE);
        await assertStillServes(wire);
      } finally {
        wire.close();
      }
    });
  }
});
