// An upstream server that breaks the WebSocket protocol (a frame over the size limit, an opcode that
// does not exist): the connection ends, and the log and the devices' reason say why, not just 1006.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { UpstreamVoiceLink } from '../../src/upstream/link.js';
import { recordingLogger, testBudgets, rawUpstream } from './helpers.js';
import { waitUntil } from '../support/wait.js';

const START = { sessionId: 's1', deviceId: 'd1', userId: 'u1', audioFormat: 'opus', sampleRate: 16000, channels: 1, autoMode: false };

async function lostWith(t: { after: (fn: () => void) => void }, bytes: Buffer, maxFrameBytes?: number) {
  const server = await rawUpstream((s) => s.write(bytes));
  t.after(() => server.close());
  const { logger, lines } = recordingLogger();
  const failures: string[] = [];
  const l = new UpstreamVoiceLink({
    url: server.url, apiKey: '', connectTimeoutMs: 2000, start: START, logger, onMessage: () => {}, onFailed: (r) => failures.push(r),
    reconnect: testBudgets({ 'VoiceService.ReconnectAttempts': '0' }).reconnect, ...(maxFrameBytes ? { maxFrameBytes } : {}),
  });
  await l.connect();
  await waitUntil(() => failures.length === 1, 'the link to fail');
  return { failures, lost: lines.filter((line) => line.includes('upstream connection lost')) };
}

test('a frame over the size limit: the reason names it', async (t) => {
  // The header of a 2 MiB text frame is enough: ws refuses it before reading the payload.
  const { failures, lost } = await lostWith(t, Buffer.from([0x81, 127, 0, 0, 0, 0, 0, 0x20, 0, 0]), 1024 * 1024);
  assert.deepEqual(failures, ['upstream connection lost (closed with 1006: Max payload size exceeded); reconnecting is switched off']);
  assert.equal(lost.length, 1);
  assert.match(lost[0]!, /^warn: App: session s1: upstream connection lost \(closed with 1006: Max payload size exceeded\) after [\d.]+ m?s; reconnecting$/);
});

test('a frame with a reserved opcode: the reason names it', async (t) => {
  const { failures } = await lostWith(t, Buffer.from([0x83, 0]));
  assert.deepEqual(failures, ['upstream connection lost (closed with 1006: Invalid WebSocket frame: invalid opcode 3); reconnecting is switched off']);
});
