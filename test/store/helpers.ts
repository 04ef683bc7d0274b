// Shared helpers for the storage tests: opening a store, reading what is on disk, sample records, file hashes.
import { createHash } from 'node:crypto';
import { cp, readFile, rename, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createLogger, silentLogger } from '../../src/log/logger.js';
import { openStore, type OpenedStore } from '../../src/store/index.js';
import { loadSqlEngine, openDatabaseFile } from '../../src/store/database.js';
import { scratchDir } from '../support/tmp.js';
import type { DeviceRecord, SessionRecord } from '../../src/store/types.js';

export function open(dataDir: string, flushIntervalMs = 60_000): Promise<OpenedStore> {
  return openStore({ dataDir, flushIntervalMs, logger: silentLogger });
}

/**
 * A store opened on `dir` (a scratch folder when not given) whose log lines are kept; when the test ends
 * it is closed before its folder is removed: a close after would find its file gone and write it again.
 */
export async function openLogged(t: { after(fn: () => unknown): void }, dir?: { path: string; cleanup(): Promise<void> }): Promise<{ store: OpenedStore; dir: string; lines: string[] }> {
  const folder = dir ?? (await scratchDir());
  const lines: string[] = [];
  const logger = createLogger({ levels: { Default: 'Information' }, write: (line: string) => lines.push(line), journald: false, timestamps: false });
  const store = await openStore({ dataDir: folder.path, flushIntervalMs: 60_000, logger });
  t.after(async () => {
    await store.close();
    await folder.cleanup();
  });
  return { store, dir: folder.path, lines };
}

/**
 * Opens a copy of the database file as it is on disk now, so a test sees only what was persisted
 * (the store under test keeps running untouched).
 */
export async function onDisk<T>(dataDir: string, read: (store: OpenedStore) => T): Promise<T> {
  const copy = await scratchDir();
  try {
    await cp(join(dataDir, 'voice-hub.db'), join(copy.path, 'voice-hub.db'));
    const store = await open(copy.path);
    try {
      return read(store);
    } finally {
      await store.close();
    }
  } finally {
    await copy.cleanup();
  }
}

/** Rows per table of a database file, read with SQLite itself (no migration runs). */
export async function tableRows(file: string): Promise<Record<string, number>> {
  const { db } = await openDatabaseFile(await loadSqlEngine(), file);
  try {
    const tables = db.all("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name");
    return Object.fromEntries(tables.map((t) => [String(t.name), Number(db.one(`SELECT count(*) AS n FROM "${String(t.name)}"`)?.n)]));
  } finally {
    db.close();
  }
}

export async function sha256(file: string): Promise<string> {
  return createHash('sha256').update(await readFile(file)).digest('hex');
}

export function device(id: string, overrides: Partial<DeviceRecord> = {}): DeviceRecord {
  return {
    id,
    name: `Device ${id}`,
    type: 'speaker',
    capabilities: ['audio', 'wake-word'],
    location: 'kitchen',
    status: 'online',
    registeredAt: '2024-05-01T10:00:00.000Z',
    lastSeen: '2024-05-01T10:00:00.000Z',
    batteryLevel: null,
    temperature: null,
    memoryUsage: null,
    cpuUsage: null,
    tokenGeneration: 1,
    ...overrides,
  };
}

export function session(id: string, overrides: Partial<SessionRecord> = {}): SessionRecord {
  return {
    id,
    deviceId: 'dev-1',
    userId: 'user-1',
    state: 'Active',
    startTime: '2024-05-01T10:00:00.000Z',
    endTime: null,
    endReason: null,
    config: { audioFormat: 'opus', sampleRate: 16000, channels: 1, autoMode: true, serverUrl: 'ws://127.0.0.1:1/' },
    audioPacketsSent: 0,
    ...overrides,
  };
}

/**
 * The data folder lost the way an unmounted or replaced folder is: `lose()` puts a file where it was, so
 * every write fails (ENOTDIR) until `mend()` brings it back; `cleanup()` mends whatever the test left.
 */
export function folderLoss(path: string): { lose(): Promise<void>; mend(): Promise<void>; cleanup(): Promise<void> } {
  const away = `${path}-away`;
  return {
    async lose() {
      await rename(path, away);
      await writeFile(path, 'not a directory');
    },
    async mend() {
      await unlink(path);
      await rename(away, path);
    },
    async cleanup() {
      await unlink(path).catch(() => {});
      await rename(away, path).catch(() => {});
    },
  };
}
