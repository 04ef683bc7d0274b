// A voice server restart drops every session's connection at once: each session writes that it lost the
// connection, its reconnect attempt and its reconnect, three lines. All sessions together write at most 60
// such lines a minute, the rest summed up in one line (a server that drops each connection just after it
// counts as stable did this again every ReconnectStableAfter, for ever).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { waitUntil } from '../support/wait.js';
import { loggedSessionService, loopbackUpstream } from './helpers.js';

const SESSIONS = 30;

test(`${SESSIONS} sessions whose voice server drops them all: at most 60 lines about the loss and the reconnects, then one line summing up the rest`, async (t) => {
  const { upstream, url } = await loopbackUpstream(t);
  const { service, lines } = loggedSessionService(url);
  for (let i = 0; i < SESSIONS; i++) await service.start({ deviceId: `dev-${i}`, userId: 'u' });
  let connections = 0;
  upstream.on('connection', () => connections++);
  for (const c of upstream.clients) c.terminate();
  await waitUntil(() => connections === SESSIONS, 'every session to reconnect', 20_000);
  const about = () => lines.filter((l) => /upstream connection lost|reconnect attempt|upstream reconnected/.test(l));
  await waitUntil(() => about().length === 60, 'the 60 lines the minute allows', 5000);
  await new Promise((resolve) => setTimeout(resolve, 200));
  assert.equal(about().length, 60, about().join('\n'));
  await service.shutdown();
  const summary = lines.filter((l) => l.includes('line(s) about lost upstream connections and reconnects left out'));
  assert.equal(summary.length, 1, lines.join('\n'));
  assert.match(summary[0]!, /^warn: App: 30 more line\(s\) about lost upstream connections and reconnects left out in the last 60 s; the last: session \S+: (upstream reconnected|reconnect attempt)/);
});
