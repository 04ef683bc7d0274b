// The voice server's words are scrubbed of what the link sent it before they reach devices or the log.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SecretScrubber } from '../../src/upstream/secret-scrubber.js';

const KEY = 'k3y-0123456789abcdef';
const URL_WITH_SECRETS = 'wss://alice:pa55word@voice.example/voice?token=tok-98765&room=kitchen';

test('the API key and the URL\'s secret parts are masked wherever they appear in a text', () => {
  const scrub = new SecretScrubber(KEY, URL_WITH_SECRETS);
  assert.equal(scrub.text(`bad key ${KEY}, again ${KEY}`), 'bad key ***, again ***');
  assert.equal(scrub.text('no such path /voice?token=tok-98765&room=kitchen'), 'no such path /voice?***');
  assert.equal(scrub.text('token tok-98765 expired'), 'token *** expired');
  const basic = Buffer.from('alice:pa55word').toString('base64');
  assert.equal(scrub.text(`Authorization: Basic ${basic}`), 'Authorization: Basic ***');
  assert.equal(scrub.text('nothing secret here'), 'nothing secret here');
});

test('text and error messages are scrubbed field by field; audio passes as the same object', () => {
  const scrub = new SecretScrubber(KEY, 'ws://127.0.0.1:5050/voice');
  assert.deepEqual(scrub.message({ kind: 'text', text: `you sent ${KEY}`, final: false }), { kind: 'text', text: 'you sent ***', final: false });
  assert.deepEqual(
    scrub.message({ kind: 'error', message: `refused ${KEY}`, code: `E-${KEY}` }),
    { kind: 'error', message: 'refused ***', code: 'E-***' },
  );
  assert.deepEqual(scrub.message({ kind: 'error', message: 'busy', code: 503 }), { kind: 'error', message: 'busy', code: 503 });
  const audio = { kind: 'audio' as const, data: KEY, packet: Buffer.from(KEY) };
  assert.equal(scrub.message(audio), audio);
});

test('a close reason that ends in the start of a secret (cut at 123 bytes) has that start masked, down to 4 characters', () => {
  const scrub = new SecretScrubber(KEY, 'ws://127.0.0.1:5050/voice');
  assert.equal(scrub.closeReason(`rejected ${KEY.slice(0, 10)}`), 'rejected ***');
  assert.equal(scrub.closeReason(`rejected ${KEY.slice(0, 4)}`), 'rejected ***');
  assert.equal(scrub.closeReason(`rejected ${KEY.slice(0, 3)}`), `rejected ${KEY.slice(0, 3)}`);
  assert.equal(scrub.closeReason(`rejected ${KEY} now`), 'rejected *** now');
  // A start of the key inside the reason, not at its end, is ordinary text.
  assert.equal(scrub.closeReason(`${KEY.slice(0, 8)} rejected`), `${KEY.slice(0, 8)} rejected`);
});

test('with no key and a URL without secrets, everything passes unchanged', () => {
  const scrub = new SecretScrubber('', 'ws://127.0.0.1:5050/voice');
  const message = { kind: 'text' as const, text: 'hello', final: true };
  assert.equal(scrub.message(message), message);
  assert.equal(scrub.closeReason('going away'), 'going away');
});
