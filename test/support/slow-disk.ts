// A slow disk under a running service (in-process): every write of its database waits a while before it
// starts, as on an SD card whose fsync takes its time, and the next write can be made to fail as it does
// with the data dir gone (ENOTDIR: the dir is replaced by a file for that write alone). Lets a test act
// while a durable change (a deletion, a registration) is applied in memory and not yet on disk.
import { renameSync, unlinkSync, writeFileSync } from 'node:fs';
import type { TestService } from './service.js';
import { sleep } from './wait.js';

export interface SlowDisk {
  /** The next write of the database fails (ENOTDIR); the data dir is back right after it. */
  failNext(): void;
  /** Writes under way (waiting or writing). */
  readonly writing: number;
}

export function slowDisk(svc: TestService, delayMs: number): SlowDisk {
  const persister = (svc.app.store as unknown as { persister: { persistOnce: (waiters: unknown) => Promise<void> } }).persister;
  const original = persister.persistOnce.bind(persister);
  let fail = false;
  let writing = 0;
  persister.persistOnce = async (waiters) => {
    writing++;
    await sleep(delayMs);
    const broken = fail;
    fail = false;
    if (broken) {
      renameSync(svc.dataDir, `${svc.dataDir}-away`);
      writeFileSync(svc.dataDir, 'not a directory');
    }
    try {
      await original(waiters);
    } finally {
      if (broken) {
        unlinkSync(svc.dataDir);
        renameSync(`${svc.dataDir}-away`, svc.dataDir);
      }
      writing--;
    }
  };
  return {
    failNext: () => {
      fail = true;
    },
    get writing() {
      return writing;
    },
  };
}
