// Table tests for the handshake request parser, protocol choice and response writer.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { InvalidDataError, MessageTooLargeError } from '../../src/hub/errors.js';
import { chooseProtocol, handshakeResponse, parseHandshakeRequest } from '../../src/hub/handshake.js';

const bytes = (s: string): Uint8Array => new TextEncoder().encode(s);

describe('handshake request', () => {
  it('parses a request and returns what follows it', () => {
    const parsed = parseHandshakeRequest(bytes('{"protocol":"json","version":1}\u001e{"type":6}\u001e'), 1024);
    assert.equal(parsed.kind, 'request');
    if (parsed.kind !== 'request') return;
    assert.deepEqual(parsed.request, { protocol: 'json', version: 1 });
    assert.equal(new TextDecoder().decode(parsed.rest), '{"type":6}\u001e');
  });

  it('ignores unknown properties', () => {
    const parsed = parseHandshakeRequest(bytes('{"protocol":"messagepack","version":1,"extra":true}\u001e'), 1024);
    assert.equal(parsed.kind === 'request' && parsed.request.protocol, 'messagepack');
  });

  it('waits for the separator', () => {
    assert.deepEqual(parseHandshakeRequest(bytes('{"protocol":"json"'), 1024), { kind: 'incomplete' });
  });

  const NOT_JSON = 'The handshake request is not valid JSON.';
  const NO_PROTOCOL = "Missing required property 'protocol'.";
  const NO_VERSION = "Missing required property 'version'.";
  const bad: [string, string, string][] = [
    ['not JSON', 'hello\u001e', NOT_JSON],
    ['a JSON array', '[1]\u001e', 'Unexpected JSON Token Type. Expected a JSON Object.'],
    ['no protocol', '{"version":1}\u001e', NO_PROTOCOL],
    ['protocol not a string', '{"protocol":1,"version":1}\u001e', NO_PROTOCOL],
    ['no version', '{"protocol":"json"}\u001e', NO_VERSION],
    ['fractional version', '{"protocol":"json","version":1.5}\u001e', NO_VERSION],
    ['a version past Int32', '{"protocol":"json","version":2147483648}\u001e', NO_VERSION],
    // JSON.parse makes these 1; ASP.NET's GetInt32 refuses how they are written.
    ['a version written 1.0', '{"protocol":"json","version":1.0}\u001e', NO_VERSION],
    ['a version written 1e0', '{"protocol":"json","version":1e0}\u001e', NO_VERSION],
    // Each occurrence is read as ASP.NET reads it, not only the last one JSON.parse keeps.
    ['a version written twice, first as a string', '{"protocol":"json","version":"1","version":1}\u001e', NO_VERSION],
    ['a protocol written twice, first as a number', '{"protocol":1,"protocol":"json","version":1}\u001e', NO_PROTOCOL],
    ['invalid UTF-8', '\u00ff', NOT_JSON],
    ['a UTF-8 byte order mark before the object', '\ufeff{"protocol":"json","version":1}\u001e', NOT_JSON],
  ];
  for (const [name, input, message] of bad) {
    it(`rejects ${name}: ${message}`, () => {
      const data = name === 'invalid UTF-8' ? Uint8Array.from([0xc3, 0x28, 0x1e]) : bytes(input);
      assert.throws(() => parseHandshakeRequest(data, 1024), (e) => e instanceof InvalidDataError && e.message === message);
    });
  }

  it('rejects a handshake that cannot end within the message size limit', () => {
    assert.throws(() => parseHandshakeRequest(bytes('x'.repeat(100)), 64), MessageTooLargeError);
    assert.throws(() => parseHandshakeRequest(bytes(`{"protocol":"${'j'.repeat(100)}","version":1}\u001e`), 64), MessageTooLargeError);
  });
});

describe('protocol choice', () => {
  const table: [string, number, string][] = [
    ['json', 1, 'json'],
    ['messagepack', 1, 'messagepack'],
    ['json', 2, 'json'],
    ['xml', 1, "The protocol 'xml' is not supported."],
    // ASP.NET Core: names ignore case, any version up to 2 is taken (IsVersionSupported is `version <= 2`).
    ['JSON', 1, 'json'],
    ['MessagePack', 2, 'messagepack'],
    ['messagepack', -1, 'messagepack'],
    ['json', 0, 'json'],
    ['messagepac\u212A', 1, "The protocol 'messagepac\u212A' is not supported."],
    ['jsoN', 3, "The server does not support version 3 of the 'jsoN' protocol."],
    ['json', 3, "The server does not support version 3 of the 'json' protocol."],
  ];
  for (const [protocol, version, expected] of table) {
    it(`${protocol} v${version}`, () => {
      const choice = chooseProtocol({ protocol, version });
      assert.equal('protocol' in choice ? choice.protocol : choice.error, expected);
    });
  }
});

describe('handshake response', () => {
  it('is {} on success and {"error"} on failure, both terminated', () => {
    assert.equal(handshakeResponse(), '{}\u001e');
    assert.equal(handshakeResponse('no "way"'), '{"error":"no \\"way\\""}\u001e');
  });
});
