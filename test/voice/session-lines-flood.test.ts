// Sessions starting and stopping are logged at Information, and a device (any client: registration is open
// as shipped) can start sessions, each replacing the last, as fast as the upstream takes connections: ten
// devices so wrote 52 KB of log a second against the built service. As every line a client can cause at
// will (docs/operations.md, "Logging"), the first 60 of a minute are written, the rest summed up in one
// line with their count and the last of them; the session records keep each session.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { silentLogger } from '../../src/log/logger.js';
import { startEchoServer } from '../../src/upstream/echo-server.js';
import { VoiceSessionService } from '../../src/voice/sessions.js';
import { loggedSessionService } from './helpers.js';

describe('session start and stop lines under a storm of starts', () => {
  it('60 lines a minute, then one sum with the count; every session is still recorded', async (t) => {
    const echo = await startEchoServer({ host: '127.0.0.1', port: 0, logger: silentLogger });
    t.after(() => echo.close());
    const { service, lines } = loggedSessionService(`ws://127.0.0.1:${echo.port}/voice`);
    t.after(() => service.shutdown());
    const starts = 80;
    const ids: string[] = [];
    for (let i = 0; i < starts; i++) ids.push((await service.start({ deviceId: 'dev-1', userId: 'u' })).id);
    const sessionLines = (): string[] => lines.filter((l) => / started for device | stopped: /.test(l));
    assert.equal(sessionLines().length, 60, sessionLines().join('\n'));
    await service.shutdown();
    // 80 starts, 79 replaced and the last stopped by the shutdown: 160 lines, 100 of them summed up.
    const sums = lines.filter((l) => l.includes('more line(s) about sessions starting and stopping'));
    assert.equal(sums.length, 1, lines.join('\n'));
    assert.match(sums[0]!, new RegExp(`^warn: \\w+: 100 more line\\(s\\) about sessions starting and stopping left out in the last 60 s \\(the session history has each of them\\); the last: session ${ids.at(-1)} stopped: service shutdown`));
    for (const id of ids) assert.ok(service.get(id), `session ${id} is recorded`);
  });
});
