// An upstream that sends garbage on every session: each link logs at most three lines a second about the
// frames it ignores, and all sessions together at most 20 a minute, the rest summed up in one line. Ten
// sessions of such a server wrote 30 lines a second (108,000 an hour) to a journal on an SD card.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { waitUntil } from '../support/wait.js';
import { loggedSessionService, loopbackUpstream } from './helpers.js';

const SESSIONS = 10;

test(`${SESSIONS} sessions of an upstream sending garbage: at most 20 lines about it, then one line summing up the rest`, async (t) => {
  const { upstream, url } = await loopbackUpstream(t);
  // Garbage every 50 ms on each connection, for as long as it is open.
  upstream.on('connection', (socket) => {
    const timer = setInterval(() => socket.send('not json'), 50);
    socket.on('close', () => clearInterval(timer));
  });
  const { service, lines } = loggedSessionService(url);
  for (let i = 0; i < SESSIONS; i++) await service.start({ deviceId: `dev-${i}`, userId: 'u' });
  const ignored = () => lines.filter((l) => l.includes('ignored upstream frame'));
  // 1.5 s: each link alone would write 3 a second, 45 in all.
  await new Promise((resolve) => setTimeout(resolve, 1500));
  assert.equal(ignored().length, 20, ignored().join('\n'));
  await service.shutdown();
  const summary = lines.filter((l) => l.includes('line(s) about ignored upstream frames left out'));
  assert.equal(summary.length, 1, lines.join('\n'));
  assert.match(summary[0]!, /^warn: App: \d+ more line\(s\) about ignored upstream frames left out in the last 60 s; the last: session .+: ignored upstream frame: malformed JSON; \d+ so far/);
  await waitUntil(() => upstream.clients.size === 0, 'the links to close');
});
