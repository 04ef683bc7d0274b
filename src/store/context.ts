// What the repositories need from the store around them (kept apart so they never import each other).
import type { SqlDb } from './database.js';

/** What repositories need from the store around them. */
export interface StoreContext {
  readonly db: SqlDb;
  /** Waits until a durable change (already applied) is on disk; runs `undo` if that fails. */
  commit(undo: () => void): Promise<void>;
  /** Something was queued for the next timed flush. */
  queued(): void;
  /** Throws when the store is closed (reads). */
  assertOpen(): void;
  /** Throws DomainError('unavailable') once the store is closing (writes). */
  assertWritable(): void;
}
