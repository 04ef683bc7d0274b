// The upstream JSON frames: encoders produce what docs/protocol.md lists; parsers return a typed union or
// `invalid` for anything else and never throw.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  encodeAudio, encodeStart, encodeStop, encodeText, encodeUpstreamError,
  parseServiceFrame, parseUpstreamMessage,
} from '../../src/upstream/protocol.js';

test('encoded service frames carry exactly the fields of the upstream protocol, in order', () => {
  const start = { sessionId: 's1', deviceId: 'd1', userId: 'u1', audioFormat: 'opus', sampleRate: 16000, channels: 1, autoMode: false };
  assert.equal(encodeStart(start),
    '{"type":"start","sessionId":"s1","deviceId":"d1","userId":"u1","audioFormat":"opus","sampleRate":16000,"channels":1,"autoMode":false}');
  assert.equal(encodeAudio('s1', 7, Uint8Array.from([1, 2, 3]), 48000, 2),
    '{"type":"audio","sessionId":"s1","sequence":7,"format":"opus","sampleRate":48000,"channels":2,"data":"AQID"}');
  assert.equal(encodeText('s1', 'hi "there"', 'text'), '{"type":"text","sessionId":"s1","text":"hi \\"there\\"","messageType":"text"}');
  assert.equal(encodeStop('s1'), '{"type":"stop","sessionId":"s1"}');
  assert.equal(encodeUpstreamError('boom', 42), '{"type":"error","message":"boom","code":42}');
});

test('audio of a subarray encodes only its own bytes', () => {
  const backing = Uint8Array.from([9, 9, 1, 2, 3, 9]);
  const frame = JSON.parse(encodeAudio('s', 1, backing.subarray(2, 5), 16000, 1)) as { data: string };
  assert.equal(frame.data, 'AQID');
});

test('parseUpstreamMessage table', () => {
  const rows: [string, unknown][] = [
    ['{"type":"audio","data":"AQID","sampleRate":16000,"channels":1}',
      { kind: 'audio', data: 'AQID', packet: Buffer.from([1, 2, 3]), sampleRate: 16000, channels: 1 }],
    ['{"type":"audio","data":"AQID"}', { kind: 'audio', data: 'AQID', packet: Buffer.from([1, 2, 3]) }],
    // Padding bits that are not zero: the same bytes, passed on as the text every encoder writes for them.
    ['{"type":"audio","data":"AB=="}', { kind: 'audio', data: 'AA==', packet: Buffer.from([0]) }],
    ['{"type":"audio","data":"AQJ="}', { kind: 'audio', data: 'AQI=', packet: Buffer.from([1, 2]) }],
    ['{"type":"text","text":"hello","final":false}', { kind: 'text', text: 'hello', final: false }],
    ['{"type":"text","text":"hello"}', { kind: 'text', text: 'hello', final: true }],
    ['{"type":"error","message":"quota exceeded","code":"E42"}', { kind: 'error', message: 'quota exceeded', code: 'E42' }],
    ['{"type":"error","message":"m","code":7}', { kind: 'error', message: 'm', code: 7 }],
    ['{"type":"error","message":"m"}', { kind: 'error', message: 'm' }],
    ['not json', { kind: 'invalid', reason: 'malformed JSON' }],
    ['', { kind: 'invalid', reason: 'malformed JSON' }],
    ['[1,2]', { kind: 'invalid', reason: 'not a JSON object' }],
    ['null', { kind: 'invalid', reason: 'not a JSON object' }],
    ['"text"', { kind: 'invalid', reason: 'not a JSON object' }],
    ['{}', { kind: 'invalid', reason: 'missing type' }],
    ['{"kind":"invalid","reason":"x"}', { kind: 'invalid', reason: 'missing type' }],
    ['{"type":"video"}', { kind: 'invalid', reason: "unknown type 'video'" }],
    ['{"type":7}', { kind: 'invalid', reason: 'missing type' }],
    ['{"type":"audio"}', { kind: 'invalid', reason: 'audio without data' }],
    ['{"type":"audio","data":""}', { kind: 'invalid', reason: 'audio without data' }],
    ['{"type":"audio","data":"A*=="}', { kind: 'invalid', reason: 'audio data is not Base64' }],
    ['{"type":"audio","data":"AQI"}', { kind: 'invalid', reason: 'audio data is not Base64' }],
    ['{"type":"audio","data":"AQID","sampleRate":44100}', { kind: 'invalid', reason: 'audio with an unsupported sampleRate' }],
    ['{"type":"audio","data":"AQID","channels":3}', { kind: 'invalid', reason: 'audio with an unsupported channel count' }],
    ['{"type":"text"}', { kind: 'invalid', reason: 'text without a text string' }],
    ['{"type":"text","text":"a","final":"yes"}', { kind: 'invalid', reason: 'text with a non-boolean final' }],
    ['{"type":"error"}', { kind: 'invalid', reason: 'error without a message string' }],
    ['{"type":"error","message":"m","code":{}}', { kind: 'invalid', reason: 'error with a code that is not a string or number' }],
    // Relayed to devices: text with a lone surrogate has no UTF-8 form (MessagePack clients would get invalid bytes).
    ['{"type":"text","text":"a\\ud800b"}', { kind: 'invalid', reason: 'text: the text must be well-formed Unicode text (it holds a lone UTF-16 surrogate)' }],
    ['{"type":"error","message":"\\udfff"}', { kind: 'invalid', reason: 'error: the message must be well-formed Unicode text (it holds a lone UTF-16 surrogate)' }],
    ['{"type":"error","message":"m","code":"E\\ud800"}', { kind: 'invalid', reason: 'error: the code must be well-formed Unicode text (it holds a lone UTF-16 surrogate)' }],
    ['{"type":"text","text":"\\ud83d\\ude00"}', { kind: 'text', text: '\u{1F600}', final: true }],
    // `null` for an optional property, as a .NET server's serializer writes one left unset: absent.
    ['{"type":"text","text":"hi","final":null}', { kind: 'text', text: 'hi', final: true }],
    ['{"type":"error","message":"m","code":null}', { kind: 'error', message: 'm' }],
    ['{"type":"audio","data":"AQID","sampleRate":null,"channels":null}', { kind: 'audio', data: 'AQID', packet: Buffer.from([1, 2, 3]) }],
    ['{"type":"audio","data":"AQID","sampleRate":null,"channels":2}', { kind: 'audio', data: 'AQID', packet: Buffer.from([1, 2, 3]), channels: 2 }],
    // ... and not for a required one.
    ['{"type":"text","text":null}', { kind: 'invalid', reason: 'text without a text string' }],
    ['{"type":"audio","data":null}', { kind: 'invalid', reason: 'audio without data' }],
  ];
  for (const [text, expected] of rows) assert.deepEqual(parseUpstreamMessage(text), expected, text);
});

test('parseServiceFrame table', () => {
  const rows: [string, unknown][] = [
    ['{"type":"start","sessionId":"s","deviceId":"d","userId":"u","audioFormat":"opus","sampleRate":16000,"channels":1,"autoMode":true}',
      { type: 'start', sessionId: 's', deviceId: 'd', userId: 'u', audioFormat: 'opus', sampleRate: 16000, channels: 1, autoMode: true }],
    ['{"type":"audio","sessionId":"s","sequence":1,"format":"opus","sampleRate":16000,"channels":1,"data":"AQID"}',
      { type: 'audio', sessionId: 's', sequence: 1, format: 'opus', sampleRate: 16000, channels: 1, data: 'AQID' }],
    ['{"type":"text","sessionId":"s","text":"t","messageType":"text"}', { type: 'text', sessionId: 's', text: 't', messageType: 'text' }],
    ['{"type":"stop","sessionId":"s"}', { type: 'stop', sessionId: 's' }],
    ['{"type":"stop"}', { kind: 'invalid', reason: 'missing sessionId' }],
    ['{"type":"audio","sessionId":"s","sequence":1.5,"format":"opus","sampleRate":16000,"channels":1,"data":"AQID"}',
      { kind: 'invalid', reason: 'audio without an integer sequence' }],
    ['{"type":"audio","sessionId":"s","sequence":1,"format":"pcm","sampleRate":16000,"channels":1,"data":"AQID"}',
      { kind: 'invalid', reason: 'audio format is not opus' }],
    ['{"type":"start","sessionId":"s","deviceId":"d","userId":"u","audioFormat":"opus","sampleRate":16000,"channels":1}',
      { kind: 'invalid', reason: 'start without autoMode' }],
    ['{"type":"ping","sessionId":"s"}', { kind: 'invalid', reason: "unknown type 'ping'" }],
    ['{', { kind: 'invalid', reason: 'malformed JSON' }],
  ];
  for (const [text, expected] of rows) assert.deepEqual(parseServiceFrame(text), expected, text);
});

test('parsers never throw, whatever the input', () => {
  const inputs = ['{"type":"audio","data":null}', '{"__proto__":{"type":"text"}}', '1e999', '\u0000', '{"type":"text","text":{}}',
    '{"type":"audio","data":"' + 'A'.repeat(100_000) + '"}', '{"type":"constructor"}', '{"type":"toString"}'];
  for (const input of inputs) {
    assert.doesNotThrow(() => parseUpstreamMessage(input), input.slice(0, 40));
    assert.doesNotThrow(() => parseServiceFrame(input), input.slice(0, 40));
  }
  assert.equal(parseUpstreamMessage('{"type":"toString"}').kind, 'invalid');
});
