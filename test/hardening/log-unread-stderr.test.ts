// The service's stderr read by nobody for a while (journald stalled, a pipe into a program that stopped
// reading), against the built bundle. Node writes to a pipe without blocking and kept every line the
// reader had not taken: with the access log on, a client's requests grew the service by 7 MB a second
// (98 MB to 442 MB in 40 s). Now at most 1 MiB of lines waits; the rest are dropped, and once the
// reader has caught up one warning says how many (src/log/bounded-output.ts).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { assertHealthyProcess, startDaemon, type Daemon } from './daemon.js';
import { sleep, waitUntil } from '../support/wait.js';

let daemon: Daemon;

before(async () => {
  daemon = await startDaemon({ settings: { Logging: { LogLevel: { 'Microsoft.AspNetCore': 'Information' } } } });
});

after(async () => {
  await daemon?.stop();
});

/** A path that makes an access-log line of about 1 KB. */
const PATH = `/api/${'x'.repeat(1000)}`;
const REQUESTS = 3000;
const DROPPED = /warn: App: (\d+) log line\(s\) dropped: whatever reads stderr \(the journal\) took nothing while 1048576 bytes of log waited/;

describe('a log reader that stops reading', () => {
  it('keeps at most 1 MiB of lines waiting, and counts the lines it dropped in one warning once the reader is back', async () => {
    const stderr = daemon.svc.proc.stderr!;
    stderr.pause();
    let sent = 0;
    const loop = async (): Promise<void> => {
      while (sent < REQUESTS) {
        sent++;
        const res = await fetch(`${daemon.url}${PATH}`);
        assert.equal(res.status, 404);
        await res.arrayBuffer();
      }
    };
    await Promise.all(Array.from({ length: 4 }, loop));
    // Each access line is written once its answer went out; give the last ones a moment.
    await sleep(300);
    assert.doesNotMatch(daemon.svc.output(), DROPPED, 'the warning waits for the reader');

    stderr.resume();
    await waitUntil(() => DROPPED.test(daemon.svc.output()), 'the warning counting the dropped lines');
    const lines = daemon.svc.output().split('\n');
    const dropped = Number(DROPPED.exec(daemon.svc.output())![1]);
    const written = lines.filter((l) => l.includes(`info: Microsoft.AspNetCore: GET ${PATH} 404 `)).length;
    assert.ok(dropped > 0 && written > 0, `${written} written, ${dropped} dropped`);
    assert.equal(written + dropped, REQUESTS);
    // What was written before the warning came in order, whole lines, the warning after them all.
    const warningAt = lines.findIndex((l) => DROPPED.test(l));
    assert.equal(lines.slice(warningAt + 1).filter((l) => l.includes('Microsoft.AspNetCore')).length, 0);

    // Logging goes on as before once the reader is back.
    const res = await fetch(`${daemon.url}${PATH}`);
    assert.equal(res.status, 404);
    await waitUntil(() => daemon.svc.output().split('\n').filter((l) => l.includes(`GET ${PATH} 404 `)).length === written + 1, 'the next access line');
    assertHealthyProcess(daemon);
  });
});
