// A refused stateful reconnect is logged at Information, and the client that dropped its own stateful
// connection may retry the upgrade as fast as it likes while the hub keeps the connection (Hub.DisconnectTimeout):
// against the built service one loop of such upgrades wrote 0.9 MB of log a second at the shipped level.
// As every line a client can cause at will (docs/operations.md, "Logging"), the first 20 of a minute
// are written, the rest summed up in one line with their count and the last of them.
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { HubError } from '../../src/hub/index.js';
import { createLogger } from '../../src/log/logger.js';
import { waitUntil } from '../support/wait.js';
import { RawClient, upgrade, startHub, type TestHub } from './helpers.js';

const RS = '\u001e';

describe('refused stateful reconnects in the log', () => {
  const hubs: TestHub[] = [];
  after(() => hubs.forEach((h) => h.stop()));

  it('logs the first 20 of a minute one by one and the rest as one sum with their count', async () => {
    const lines: string[] = [];
    const logger = createLogger({ levels: { Default: 'Information' }, write: (l) => lines.push(l), timestamps: false, journald: false }).child('Hub');
    const h = await startHub({
      statefulReconnect: { bufferSize: 100_000, disconnectTimeoutMs: 30_000 },
      logger,
      authenticate: (token) => {
        if (token === undefined) return undefined;
        if (token === 'bad') throw new HubError('bad token');
        return { sub: token };
      },
    });
    hubs.push(h);
    const n = (await (await fetch(`${h.url}/negotiate?negotiateVersion=1&useStatefulReconnect=true&access_token=alice`, { method: 'POST' })).json()) as { connectionToken: string };
    const wsUrl = (q: string): string => `ws://127.0.0.1:${h.port}/voice-hub?${q}`;
    const client = await RawClient.connect(wsUrl(`id=${n.connectionToken}&access_token=alice`));
    client.send(`{"protocol":"json","version":2}${RS}`);
    assert.equal((await client.next()).data.toString(), `{}${RS}`);
    client.ws.terminate();
    await waitUntil(() => (h.server.stats().disconnects ?? 0) > 0, 'the hub to see the drop', 3000);

    const attempts = 100;
    for (let i = 0; i < attempts; i++) {
      // Half with another user's token (403), half with none (401): both are refusals a client repeats at will.
      const expected = i % 2 === 0 ? { status: 403, body: 'Forbidden' } : { status: 401, body: 'Unauthorized' };
      assert.deepEqual(await upgrade(wsUrl(i % 2 === 0 ? `id=${n.connectionToken}&access_token=mallory` : `id=${n.connectionToken}`)), expected);
    }
    assert.equal(h.server.stats().reconnectsRefused, attempts);
    const refused = (): string[] => lines.filter((l) => l.includes('reconnect refused'));
    assert.equal(refused().length, 20, refused().join('\n'));
    assert.match(refused()[0]!, /^info: Hub: \S+: reconnect refused: its token names another user$/);

    // The sum comes at the end of the minute, or when the hub closes, whichever is first.
    h.server.closeAll({ allowReconnect: false });
    const sums = lines.filter((l) => l.includes('more stateful reconnects refused'));
    assert.equal(sums.length, 1, lines.join('\n'));
    assert.match(sums[0]!, /^warn: Hub: 80 more stateful reconnects refused in the last 60 s; the last: \S+: reconnect refused: it carries no token, the connection was opened with one$/);
  });
});
