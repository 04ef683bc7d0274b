// Fragmented upstream messages: put together and delivered as one; a message in more fragments than any
// real server sends ends the connection before ws holds them all.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { UpstreamVoiceLink } from '../../src/upstream/link.js';
import type { UpstreamMessage } from '../../src/upstream/protocol.js';
import { recordingLogger, testBudgets, rawUpstream } from './helpers.js';
import { waitUntil } from '../support/wait.js';

const START = { sessionId: 's1', deviceId: 'd1', userId: 'u1', audioFormat: 'opus', sampleRate: 16000, channels: 1, autoMode: false };

/** `text` as a text message in fragments of `size` bytes (unmasked, as a server sends). */
function fragmented(text: string, size: number): Buffer {
  const payload = Buffer.from(text);
  const frames: Buffer[] = [];
  for (let at = 0; at < payload.length; at += size) {
    const part = payload.subarray(at, at + size);
    const last = at + size >= payload.length;
    frames.push(Buffer.from([(last ? 0x80 : 0) | (at === 0 ? 0x01 : 0x00), part.length]), part);
  }
  return Buffer.concat(frames);
}

function link(url: string) {
  const { logger, lines } = recordingLogger();
  const received: UpstreamMessage[] = [];
  const failures: string[] = [];
  const l = new UpstreamVoiceLink({
    url, apiKey: '', connectTimeoutMs: 2000, start: START, logger, onMessage: (m) => received.push(m), onFailed: (r) => failures.push(r),
    reconnect: testBudgets({ 'VoiceService.ReconnectAttempts': '0' }).reconnect,
  });
  return { l, lines, received, failures };
}

test('a text message in 4,096 fragments is delivered whole', async (t) => {
  const text = 'a'.repeat(4096 * 3 - 40);
  const frame = JSON.stringify({ type: 'text', text, final: true });
  assert.equal(Math.ceil(frame.length / 3), 4096);
  const bytes = fragmented(frame, 3);
  const server = await rawUpstream((s) => s.write(bytes));
  t.after(() => server.close());
  const { l, received } = link(server.url);
  await l.connect();
  await waitUntil(() => received.length === 1, 'the message');
  assert.deepEqual(received, [{ kind: 'text', text, final: true }]);
  assert.equal(l.state, 'Open');
  await l.close();
});

test('a message in a million one-byte fragments ends the connection with the reason', async (t) => {
  // Built before the link connects: two million buffers take about a second, inside its connect timeout.
  const bytes = fragmented(' '.repeat(1_000_000), 1);
  const server = await rawUpstream((s) => s.write(bytes));
  t.after(() => server.close());
  const { l, received, failures } = link(server.url);
  await l.connect();
  await waitUntil(() => failures.length === 1, 'the link to fail', 20_000);
  assert.deepEqual(failures, ['upstream connection lost (closed with 1006: a message came in more than 4096 fragments); reconnecting is switched off']);
  assert.deepEqual(received, []);
  assert.equal(l.stats.invalidFrames, 0);
});
