// An upstream close reason is the voice server's own words, which the link passes on as the session's end
// reason: devices get it in SessionEnded, the log and the database keep it. Control characters in it
// (NUL, which the database read a text only up to; terminal escapes; line breaks; reordering marks) are
// written as escapes, the rest of the words as they came.
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { WebSocketServer } from 'ws';
import { UpstreamVoiceLink } from '../../src/upstream/link.js';
import { recordingLogger, testBudgets } from './helpers.js';
import { waitUntil } from '../support/wait.js';

const START = { sessionId: 's1', deviceId: 'd1', userId: 'u1', audioFormat: 'opus', sampleRate: 16000, channels: 1, autoMode: false };

for (const [reason, shown] of [
  ['bye\u0000 after NUL', 'bye\\u0000 after NUL'],
  ['\u001b[31mred\u001b[0m', '\\u001b[31mred\\u001b[0m'],
  ['two\nlines\u2028more', 'two\\u000alines\\u2028more'],
  ['gn\u202ekcab', 'gn\\u202ekcab'],
  ['Grüße, 4001 ✓', 'Grüße, 4001 ✓'],
] as const) {
  test(`a close reason ${JSON.stringify(reason)} is the end reason ${JSON.stringify(shown)}`, async (t) => {
    const wss = new WebSocketServer({ host: '127.0.0.1', port: 0 });
    await new Promise<void>((resolve) => wss.once('listening', resolve));
    wss.on('connection', (socket) => socket.close(4001, reason));
    t.after(() => new Promise<void>((resolve) => wss.close(() => resolve())));
    const { logger, lines } = recordingLogger();
    const failures: string[] = [];
    const link = new UpstreamVoiceLink({
      url: `ws://127.0.0.1:${(wss.address() as AddressInfo).port}`, apiKey: '', connectTimeoutMs: 2000, start: START, logger,
      onMessage: () => {}, onFailed: (r) => failures.push(r), reconnect: testBudgets({ 'VoiceService.ReconnectAttempts': '0' }).reconnect,
    });
    await link.connect();
    await waitUntil(() => failures.length === 1, 'the link to fail');
    assert.deepEqual(failures, [`upstream connection lost (closed with 4001 ${shown}); reconnecting is switched off`]);
    assert.ok(lines.some((line) => line.includes(`(closed with 4001 ${shown})`)), lines.join('\n'));
  });
}
