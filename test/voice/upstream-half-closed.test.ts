// An upstream server that closes the WebSocket (its close frame, or a frame that breaks the protocol)
// but keeps its TCP connection open: the link cuts it off within its close grace of 1 s and reconnects,
// instead of refusing every packet as "closing" for the 30 s `ws` would wait for the server's FIN.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DomainError } from '../../src/errors.js';
import { UpstreamVoiceLink } from '../../src/upstream/link.js';
import { recordingLogger, testBudgets, rawUpstream } from './helpers.js';
import { waitUntil } from '../support/wait.js';

const START = { sessionId: 's1', deviceId: 'd1', userId: 'u1', audioFormat: 'opus', sampleRate: 16000, channels: 1, autoMode: false };

/** Accepts the upgrade, writes `bytes` once the client's `start` arrived, and never ends a connection (it ignores FIN). */
function halfOpenUpstream(bytes: Buffer) {
  return rawUpstream((s) => {
    s.once('data', () => s.write(bytes));
    s.on('data', () => {});
    s.on('end', () => {}); // the client's FIN: not answered
  }, true);
}

async function failsWithin(t: { after: (fn: () => void) => void }, bytes: Buffer, expected: string) {
  const server = await halfOpenUpstream(bytes);
  t.after(() => server.close());
  const { logger } = recordingLogger();
  const failures: string[] = [];
  const link = new UpstreamVoiceLink({
    url: server.url, apiKey: '', connectTimeoutMs: 2000, start: START, logger, onMessage: () => {}, onFailed: (r) => failures.push(r),
    reconnect: testBudgets({ 'VoiceService.ReconnectAttempts': '0' }).reconnect,
  });
  t.after(() => link.close());
  await link.connect();
  const started = performance.now();
  await waitUntil(() => {
    try {
      link.sendAudio(1, Buffer.from([0xf8, 0xff, 0xfe]), 16000, 1);
      return false;
    } catch (e) {
      return e instanceof DomainError;
    }
  }, 'the link to refuse audio once the server closed');
  await waitUntil(() => failures.length === 1, 'the link to notice the drop', 5000);
  const ms = performance.now() - started;
  assert.ok(ms < 2500, `the drop was noticed after ${Math.round(ms)} ms`);
  assert.deepEqual(failures, [expected]);
}

test('a close frame from a server that then keeps its TCP connection open: the drop is noticed within the close grace', async (t) => {
  await failsWithin(t, Buffer.from([0x88, 6, 0x0f, 0xa0, ...Buffer.from('busy')]), 'upstream connection lost (closed with 4000 busy); reconnecting is switched off');
});

test('a protocol violation from a server that then keeps its TCP connection open: the drop is noticed within the close grace', async (t) => {
  await failsWithin(t, Buffer.from([0x81, 3, 0x7b, 0xff, 0x7d]), 'upstream connection lost (closed with 1006: Invalid WebSocket frame: invalid UTF-8 sequence); reconnecting is switched off');
});
