// What the service writes before it goes on is on disk, name and all, in that order, seen in the
// system calls of the built bundle (strace): the backup of a database it upgrades (fsynced, renamed into
// place, its directory fsynced) before the upgraded file replaces the old one, and a signing key it
// generates (fsynced under a temporary name, linked to its own, its directory fsynced) before the service
// listens. Neither was: a power cut could
// lose the backup of the file it had just replaced, or the key every token out there was signed with.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { loadSqlEngine, openDatabaseFile } from '../../src/store/database.js';
import { migrate, MIGRATIONS } from '../../src/store/migrations.js';
import { call } from '../support/http.js';
import { spawnService } from '../support/service.js';
import { tmpDir } from '../support/tmp.js';


interface Call { readonly name: string; readonly args: string; readonly result: string }

/** The calls in an `strace -f` log, a call split by another thread's (`<unfinished ...>`) joined again. */
function calls(log: string): Call[] {
  const pending = new Map<string, string>();
  const out: Call[] = [];
  for (const line of log.split('\n')) {
    const m = /^(\d+)\s+(.*)$/.exec(line);
    if (!m) continue;
    const [, pid, text] = m as unknown as [string, string, string];
    let whole = text;
    if (text.endsWith('<unfinished ...>')) {
      pending.set(pid, text.slice(0, -'<unfinished ...>'.length).trimEnd());
      continue;
    }
    const resumed = /^<\.\.\. \w+ resumed>(.*)$/.exec(text);
    if (resumed) {
      whole = (pending.get(pid) ?? '') + resumed[1];
      pending.delete(pid);
    }
    const call = /^(\w+)\((.*)\)\s+=\s+(-?\d+)/.exec(whole);
    if (call) out.push({ name: call[1]!, args: call[2]!, result: call[3]! });
  }
  return out;
}

/** Index of the first call from `from` on that `match` accepts; fails naming `what` when there is none. */
function next(list: Call[], from: number, what: string, match: (c: Call) => boolean): number {
  for (let i = from; i < list.length; i++) if (match(list[i]!)) return i;
  assert.fail(`no ${what} after call ${from}:\n${list.slice(from).map((c) => `${c.name}(${c.args}) = ${c.result}`).join('\n')}`);
}

const opened = (file: string) => (c: Call): boolean => c.name === 'openat' && c.args.includes(`"${file}"`) && Number(c.result) >= 0;
const synced = (fd: string) => (c: Call): boolean => (c.name === 'fsync' || c.name === 'fdatasync') && c.args === fd;

/** The file opened at `from` on is fsynced, and its directory opened and fsynced after `after`; returns where that ended. */
function fileThenDirSynced(list: Call[], from: number, file: string, dir: string, after = (i: number) => i): number {
  const open = next(list, from, `openat of ${file}`, opened(file));
  const sync = next(list, open, `fsync of ${file}`, synced(list[open]!.result));
  const dirOpen = next(list, after(sync), `openat of ${dir}`, opened(dir));
  return next(list, dirOpen, `fsync of ${dir}`, synced(list[dirOpen]!.result));
}

describe('durable writes at start, in system-call order', { timeout: 60_000 }, () => {
  it('the upgrade backup and a new signing key are on disk, their names too, before the service goes on', async () => {
    // make test installs strace (TEST_DEBS): a missing one fails here rather than passing unchecked.
    execFileSync('strace', ['-V'], { stdio: 'ignore' });
    const dataDir = tmpDir();
    const file = path.join(dataDir, 'voice-hub.db');
    const engine = await loadSqlEngine();
    const { db } = await openDatabaseFile(engine, path.join(dataDir, 'none.db'));
    migrate(db, 'none.db', MIGRATIONS.slice(0, 1));
    writeFileSync(file, db.export());
    db.close();
    const log = path.join(tmpDir(), 'strace.log');
    const prefix = ['strace', '-f', '-e', 'trace=openat,fsync,fdatasync,rename,link,linkat', '-o', log, '--'];
    const svc = await spawnService(['--data-dir', dataDir, '--Mqtt.BrokerAddress', ''], {}, 30_000, prefix);
    // A write, so that the upgraded file replaces the old one.
    const registered = await call(svc.url, 'POST', '/api/device/register', { body: { deviceId: 'dev-1', deviceName: 'dev-1', deviceType: 'speaker' } });
    assert.equal(registered.status, 200, registered.text);
    // The service itself, not strace (which holds on to it): its pid heads the log.
    process.kill(Number(/^\d+/.exec(readFileSync(log, 'utf8'))![0]), 'SIGTERM');
    assert.equal(await svc.exited, 0, svc.output());
    const list = calls(readFileSync(log, 'utf8'));

    const key = path.join(dataDir, 'signing.key');
    // Written and fsynced under a temporary name, linked to its own, then the directory synced: the name
    // never shows an empty or partial key (to a reader, or after a kill).
    const temp = (c: Call): string | undefined => /^AT_FDCWD, "([^"]+\.tmp-\d+)"/.exec(c.args)?.[1];
    const keyTemp = next(list, 0, 'the key\'s temporary file', (c) => c.name === 'openat' && temp(c)?.startsWith(`${key}.tmp-`) === true);
    const keyTempName = temp(list[keyTemp]!)!;
    const linked = (c: Call): boolean => (c.name === 'link' && c.args === `"${keyTempName}", "${key}"`) || (c.name === 'linkat' && c.args.startsWith(`AT_FDCWD, "${keyTempName}", AT_FDCWD, "${key}"`));
    assert.equal(next(list, 0, 'an open of the key', opened(key)) > next(list, 0, 'the key\'s link', linked), true, 'the key was opened under its name before it was linked there');
    const keySynced = fileThenDirSynced(list, keyTemp, keyTempName, dataDir, (sync) => next(list, sync, 'the key\'s link', linked));
    // Read back (to sign with it) only once it is on disk.
    const readBack = next(list, keySynced, 'the key read back', opened(key));
    assert.ok(readBack > keySynced, `the key was read back to sign with (call ${readBack}) before its directory was synced (call ${keySynced})`);

    const backup = `${file}.v1.bak`;
    const backupTemp = next(list, 0, 'the backup\'s temporary file', (c) => c.name === 'openat' && temp(c)?.startsWith(`${backup}.tmp-`) === true);
    const tempName = temp(list[backupTemp]!)!;
    const renamed = (from: string, to: string) => (c: Call): boolean => c.name === 'rename' && c.args === `"${from}", "${to}"`;
    const backupDone = fileThenDirSynced(list, backupTemp + 1, tempName, dataDir, (sync) => next(list, sync, 'the backup\'s rename', renamed(tempName, backup)));
    const replaced = next(list, 0, 'the upgraded file\'s rename', (c) => c.name === 'rename' && c.args.endsWith(`, "${file}"`));
    assert.ok(replaced > backupDone, `the upgraded file replaced the old one (call ${replaced}) before the backup was on disk (call ${backupDone})`);
  });
});
