// What clients send reaches the log only as visible text. A hub method name and a request path carrying
// a terminal escape sequence, a bidirectional override, NUL, a Unicode line separator and a newline are
// logged, by the built bundle on its real stderr, as one line each, with every hidden character written
// as an escape (`\x1b`, `\u202e`) and line ends as spaces: a technician's `journalctl` shows what came,
// and no client can colour, reorder, hide or forge a log entry.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startDaemon, type Daemon } from './daemon.js';
import { HubWire } from './hub-wire.js';
import { waitUntil } from '../support/wait.js';

const HOSTILE = 'ok\x1b[2J\x1b[31mred\u202eevil\x00nul\u2028fail: Hub: forged\nwarn: App: forged';
/** HOSTILE as the log must show it. */
const SHOWN = 'ok\\x1b[2J\\x1b[31mred\\u202eevil\\x00nul fail: Hub: forged warn: App: forged';
const HIDDEN_OR_BREAK = /[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]/;

let daemon: Daemon;

before(async () => {
  daemon = await startDaemon({
    settings: { Logging: { LogLevel: { Default: 'Debug', 'Microsoft.AspNetCore': 'Information' } } },
  });
});

after(async () => {
  await daemon?.stop();
});

/** The service's stderr, line by line. */
const lines = (): string[] => daemon.svc.output().split('\n');

describe('hidden characters from clients in the log', () => {
  it('a hub method name is logged as one line, its hidden characters escaped', async () => {
    const wire = await HubWire.connect(daemon.url, 'json');
    const answer = await wire.invoke(HOSTILE, []);
    assert.equal(answer.error, `Failed to invoke '${HOSTILE}' due to an error on the server. HubException: Method does not exist.`);
    wire.close();
    await waitUntil(() => lines().some((l) => l.includes('unknown hub method')), 'the unknown method in the log', 5000);
    const logged = lines().filter((l) => l.includes('unknown hub method'));
    assert.equal(logged.length, 1, logged.join('\n'));
    assert.match(logged[0]!, / dbug: Hub: unknown hub method '(.*)' from /);
    assert.equal(/unknown hub method '(.*)' from /.exec(logged[0]!)![1], SHOWN);
    assert.equal(lines().filter((l) => /^\S+ (fail|warn): (Hub|App): forged/.test(l)).length, 0);
  });

  it('a hub method name of 60,000 characters is logged cut short: journald would split the line and the rest be an entry of its own', async () => {
    const wire = await HubWire.connect(daemon.url, 'json');
    const name = `${'M'.repeat(60_000)} <3>fail: App: smuggled`;
    const answer = await wire.invoke(name, []);
    assert.equal(answer.error, `Failed to invoke '${name}' due to an error on the server. HubException: Method does not exist.`);
    wire.close();
    await waitUntil(() => lines().some((l) => l.includes(`unknown hub method 'MMMM`)), 'the long method in the log', 5000);
    const logged = lines().find((l) => l.includes(`unknown hub method 'MMMM`))!;
    assert.match(logged, /^\S+ dbug: Hub: unknown hub method 'M+\.\.\. \(\d+ more characters\)$/);
    assert.ok(Buffer.byteLength(logged) <= 8192 + 64, `${Buffer.byteLength(logged)} bytes`);
    assert.ok(!lines().some((l) => l.includes('smuggled')));
  });

  it('no line of the whole log carries a hidden character or a line break', async () => {
    const res = await fetch(`${daemon.url}/%1b%5b31m%e2%80%ae%00x`);
    assert.equal(res.status, 404);
    await waitUntil(() => lines().some((l) => l.includes(' 404 ')), 'the access log line of the 404', 5000);
    for (const line of lines()) assert.doesNotMatch(line, HIDDEN_OR_BREAK, JSON.stringify(line));
  });
});
