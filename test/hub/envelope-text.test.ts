// A hub message's envelope text (ids, target, headers, stream ids, an error) holding a lone UTF-16
// surrogate is a protocol error in both protocols (in MessagePack, whose str is UTF-8, any bytes that are
// not UTF-8, CESU-8 surrogates included); arguments holding one fail binding instead (see
// test/hardening/ill-formed-text.test.ts). Before, such an id or target was echoed in the completion,
// in MessagePack as bytes that are not UTF-8.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { InvalidDataError } from '../../src/hub/errors.js';
import { jsonProtocol } from '../../src/hub/json-protocol.js';
import { createMessagePackProtocol } from '../../src/hub/msgpack-protocol.js';

const msgpack = createMessagePackProtocol(64 * 1024);
/** MessagePack str of the CESU-8 bytes of U+D800, which the decoder reads as a lone surrogate. */
const CESU = [0xa3, 0xed, 0xa0, 0x80];
const str = (s: string): number[] => [0xa0 | s.length, ...Buffer.from(s)];

const json = (text: string): Uint8Array => Buffer.from(text);
const refused = (field: string) => (e: unknown): boolean =>
  e instanceof InvalidDataError && e.message === `Invalid text in '${field}': a lone UTF-16 surrogate.`;

describe('envelope text must be well-formed', () => {
  const jsonCases: Array<[string, string]> = [
    ['invocationId', '{"type":1,"invocationId":"a\\ud800","target":"T","arguments":[]}'],
    ['target', '{"type":1,"invocationId":"1","target":"T\\udc00","arguments":[]}'],
    ['headers', '{"type":1,"headers":{"k\\ud800":"v"},"target":"T","arguments":[]}'],
    ['headers', '{"type":3,"headers":{"k":"\\ud800"},"invocationId":"1"}'],
    ['streamIds', '{"type":1,"target":"T","arguments":[],"streamIds":["\\ud800"]}'],
    ['error', '{"type":7,"error":"\\ud800"}'],
    ['invocationId', '{"type":5,"invocationId":"\\ud800"}'],
  ];
  for (const [field, text] of jsonCases) {
    it(`JSON: ${text}`, () => assert.throws(() => jsonProtocol.decode(json(text)), refused(field)));
  }

  const msgpackCases: Array<[string, number[]]> = [
    ['invocationId', [0x95, 1, 0x80, ...CESU, ...str('T'), 0x90]],
    ['target', [0x95, 1, 0x80, ...str('1'), ...CESU, 0x90]],
    ['headers', [0x95, 1, 0x81, ...str('k'), ...CESU, 0xc0, ...str('T'), 0x90]],
    ['error', [0x93, 7, ...CESU, 0xc2]],
  ];
  // CESU-8 is no UTF-8: the bytes are refused before any text is made of them.
  const notUtf8 = (e: unknown): boolean => e instanceof InvalidDataError && e.message === 'Invalid MessagePack: a str holds bytes that are not UTF-8';
  for (const [field, bytes] of msgpackCases) {
    it(`MessagePack: ${field}`, () => {
      assert.throws(() => msgpack.decode(Buffer.from(bytes)), notUtf8);
    });
  }

  it('MessagePack: envelope bytes that are not UTF-8 are a protocol error, not the text a lenient reader makes of them', () => {
    // A target whose J is the overlong C1 8A: read leniently, it was JoinSession.
    const target = [0xab, 0xc1, 0x8a, ...Buffer.from('oinSession')];
    assert.throws(() => msgpack.decode(Buffer.from([0x95, 1, 0x80, ...str('1'), ...target, 0x90])), notUtf8);
    assert.throws(() => msgpack.decode(Buffer.from([0x95, 1, 0x80, 0xa1, 0xff, ...str('T'), 0x90])), notUtf8);
    assert.throws(() => msgpack.decode(Buffer.from([0x95, 1, 0x81, 0xa2, 0xc1, 0x8a, ...str('v'), ...str('1'), ...str('T'), 0x90])), notUtf8);
  });

  it('well-formed text, astral characters included, passes in both', () => {
    const message = jsonProtocol.decode(json('{"type":1,"invocationId":"\\ud83d\\ude00","target":"T","arguments":["\\ud800"]}'));
    assert.equal((message as { invocationId: string }).invocationId, '\u{1F600}');
    const body = Buffer.from([0x95, 1, 0x80, ...str('1'), ...str('T'), 0x91, ...CESU]);
    assert.equal((msgpack.decode(body) as { target: string }).target, 'T');
  });
});
