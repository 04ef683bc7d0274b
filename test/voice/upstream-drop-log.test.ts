// An upstream that sends one corrupt packet a little more than a second apart on every session: each is a
// burst of its own, two lines (its start, its end). All sessions together write at most 20 such lines a
// minute, the rest summed up in one line; each session's end line still has its totals. Twenty sessions
// of such a server wrote 34 lines a second to the journal from 200 bytes a second of traffic.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { waitUntil } from '../support/wait.js';
import { loggedSessionService, loopbackUpstream } from './helpers.js';

const SESSIONS = 10;
const CORRUPT = JSON.stringify({ type: 'audio', data: Buffer.from([0xff, 0xff, 0xff]).toString('base64') });

test(`${SESSIONS} sessions dropping a corrupt upstream packet every 1.05 s: at most 20 lines about the bursts, then one line summing up the rest`, async (t) => {
  const { upstream, url } = await loopbackUpstream(t);
  upstream.on('connection', (socket) => {
    socket.send(CORRUPT);
    const timer = setInterval(() => socket.send(CORRUPT), 1050);
    socket.on('close', () => clearInterval(timer));
  });
  const { service, lines } = loggedSessionService(url);
  for (let i = 0; i < SESSIONS; i++) await service.start({ deviceId: `dev-${i}`, userId: 'u' });
  const about = () => lines.filter((l) => /upstream audio could not be decoded|upstream drop burst over/.test(l));
  // 2.3 s: two bursts per session, four lines each, 40 in all.
  await new Promise((resolve) => setTimeout(resolve, 2300));
  assert.equal(about().length, 20, about().join('\n'));
  await service.shutdown();
  const summary = lines.filter((l) => l.includes('line(s) about dropped upstream frames left out'));
  assert.equal(summary.length, 1, lines.join('\n'));
  assert.match(summary[0]!, /^warn: App: \d+ more line\(s\) about dropped upstream frames left out in the last 60 s \(each session's end line has its totals\); the last: session .+: upstream/);
  const ends = lines.filter((l) => / stopped: service shutdown \(\d+ upstream frames dropped \(queue full 0, format 0, corrupt \d+, decoder thread failed 0\)\)$/.test(l));
  assert.equal(ends.length, SESSIONS, lines.join('\n'));
  await waitUntil(() => upstream.clients.size === 0, 'the links to close');
});
