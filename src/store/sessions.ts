// Voice sessions as history. State changes the caller marks durable go to disk at once; frequent
// updates (packet counters) keep only the latest record per session until the next flush, taken from
// the running session when the flush comes (saveLater). Only the latest `historyLimit` ended sessions
// are kept: every write rewrites the whole file, so an unbounded history would make each telemetry
// flush cost more SD-card writes as the months go by.
import type { Param, Row, SqlDb } from './database.js';
import type { StoreContext } from './context.js';
import type { SessionRecord, SessionRepository, SessionState } from './types.js';
import { copySessionRecord } from './session-record.js';

const COLUMNS = 'id, device_id, user_id, state, start_time, end_time, end_reason, config, audio_packets_sent';
const OPEN_STATES: readonly SessionState[] = ['Starting', 'Active'];
const ENDED = "state NOT IN ('Starting', 'Active')";

export class SqlSessionRepository implements SessionRepository {
  /** Latest record per session not yet written to SQL, or where to read it at the flush. */
  private readonly pending = new Map<string, SessionRecord | (() => SessionRecord)>();

  constructor(
    private readonly ctx: StoreContext,
    private readonly historyLimit: number,
  ) {}

  get pendingCount(): number {
    return this.pending.size;
  }

  get(id: string): SessionRecord | undefined {
    this.ctx.assertOpen();
    const queued = this.pending.get(id);
    if (queued) return current(queued);
    const row = this.ctx.db.one(`SELECT ${COLUMNS} FROM sessions WHERE id = ?`, [id]);
    return row ? toSession(row) : undefined;
  }

  listOpen(): SessionRecord[] {
    this.ctx.assertOpen();
    const byId = new Map<string, SessionRecord>();
    const rows = this.ctx.db.all(`SELECT ${COLUMNS} FROM sessions WHERE state IN ('Starting', 'Active') ORDER BY start_time, id`);
    for (const row of rows) byId.set(String(row.id), toSession(row));
    // Queued records are newer than SQL: they may open or close a session.
    for (const [id, s] of this.pending) byId.set(id, current(s));
    return [...byId.values()].filter((s) => OPEN_STATES.includes(s.state));
  }

  async save(session: SessionRecord, durable = false): Promise<void> {
    this.ctx.assertWritable();
    if (!durable) {
      // Re-queued at the end: records are written in the order of their latest change (see pruneSessionHistory).
      this.pending.delete(session.id);
      this.pending.set(session.id, copySessionRecord(session));
      this.ctx.queued();
      return;
    }
    const { db } = this.ctx;
    const undoRow = db.captureRow('sessions', 'id', session.id);
    // This record supersedes any queued older one, which must not overwrite it at the next flush; a
    // record that cannot be written supersedes nothing, so the undo queues it again.
    const queued = this.pending.get(session.id);
    this.pending.delete(session.id);
    write(this.ctx, session);
    if (!OPEN_STATES.includes(session.state)) this.pruneHistory();
    await this.ctx.commit(() => {
      undoRow();
      if (queued && !this.pending.has(session.id)) {
        this.pending.set(session.id, queued);
        this.ctx.queued();
      }
    });
  }

  /**
   * Removes every record of the device's sessions, stored or queued, as part of the caller's durable
   * change (the device's deletion); returns what undoes it. A deleted device's sessions go with it: a
   * device registered again under its id is another device, which must find none of them.
   */
  removeDevice(deviceId: string): () => void {
    const { db } = this.ctx;
    // With their rowids, their places in the history (see pruneSessionHistory): put back under new ones,
    // an undone deletion's records counted as the last to end, and the next prune kept them instead.
    const rows = db.all('SELECT rowid, * FROM sessions WHERE device_id = ? ORDER BY rowid', [deviceId]);
    const queued = [...this.pending].filter(([, s]) => current(s).deviceId === deviceId);
    for (const [id] of queued) this.pending.delete(id);
    db.run('DELETE FROM sessions WHERE device_id = ?', [deviceId]);
    return () => {
      for (const row of rows) db.restoreRow('sessions', 'id', row, true);
      for (const [id, s] of queued) if (!this.pending.has(id)) this.pending.set(id, s);
      if (queued.length > 0) this.ctx.queued();
    };
  }

  saveLater(id: string, latest: () => SessionRecord): void {
    // Never refused, unlike save: the change it records has happened (a packet went upstream). Once the
    // store is closing nothing queued is written any more, and the session's final record says it all.
    // A source already queued gives the latest record at the flush: nothing to do per change.
    if (typeof this.pending.get(id) === 'function') return;
    this.pending.delete(id);
    this.pending.set(id, latest);
    this.ctx.queued();
  }

  /** Moves queued records into SQL (inside the caller's transaction). */
  writePending(): void {
    let ended = false;
    for (const queued of this.pending.values()) {
      const s = current(queued);
      write(this.ctx, s);
      ended ||= !OPEN_STATES.includes(s.state);
    }
    this.pending.clear();
    // Most flushes carry only packet counters of open sessions: nothing to prune then.
    if (ended) this.pruneHistory();
  }

  private pruneHistory(): void {
    pruneSessionHistory(this.ctx.db, this.historyLimit);
  }
}

/**
 * Deletes the ended sessions beyond the `limit` that ended last; returns how many. "Last" is the order the
 * records were written in, not their end time: that is the wall clock's, which NTP may set back, and a
 * history ordered by it kept sessions dated in the future and deleted the newest, a session's own final
 * record among them the moment it was written. Every write of a record is an INSERT OR REPLACE, which
 * gives the row the next rowid, and VACUUM keeps their order.
 */
export function pruneSessionHistory(db: SqlDb, limit: number): number {
  // Counted first: mostly nothing is beyond the limit (every start asks), and a start then spares sql.js
  // compiling SQLite's DELETE with its subquery (2-10 ms on the bench machine) before the first request.
  if (Number(db.one(`SELECT count(*) AS n FROM sessions WHERE ${ENDED}`)?.n ?? 0) <= limit) return 0;
  return db.run(
    `DELETE FROM sessions WHERE id IN (SELECT id FROM sessions WHERE ${ENDED} ORDER BY rowid DESC LIMIT -1 OFFSET ?)`,
    [limit],
  );
}

function write(ctx: StoreContext, s: SessionRecord): void {
  const params: Param[] = [
    s.id, s.deviceId, s.userId, s.state, s.startTime, s.endTime, s.endReason, JSON.stringify(s.config),
    s.audioPacketsSent,
  ];
  ctx.db.run(`INSERT OR REPLACE INTO sessions (${COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`, params);
}

/** A queued record as it stands now: a copy, or what its source gives (a record of its own each call). */
function current(queued: SessionRecord | (() => SessionRecord)): SessionRecord {
  return typeof queued === 'function' ? queued() : copySessionRecord(queued);
}

function toSession(row: Row): SessionRecord {
  return {
    id: String(row.id),
    deviceId: String(row.device_id),
    userId: String(row.user_id),
    state: String(row.state) as SessionState,
    startTime: String(row.start_time),
    endTime: row.end_time === null ? null : String(row.end_time),
    endReason: row.end_reason === null ? null : String(row.end_reason),
    config: JSON.parse(String(row.config)) as SessionRecord['config'],
    audioPacketsSent: Number(row.audio_packets_sent),
  };
}
