// MQTT messages a clean stop could not hand to the broker, kept in the database until a broker has them:
// without them a session that ended while the broker was away never had its `ended` event.
import type { Param } from './database.js';
import type { StoreContext } from './context.js';
import type { BrokerMessage, BrokerMessageRepository } from './types.js';

export class SqlBrokerMessageRepository implements BrokerMessageRepository {
  /**
   * The highest `seq` take() has handed out, 0 for none: those rows stay in the file until delivered() or
   * keep() settles them. Removed when taken, they left the file at the next flush (a registration, the
   * telemetry timer), and a start killed before its broker came back lost them for good.
   */
  private taken = 0;

  constructor(private readonly ctx: StoreContext) {}

  async keep(messages: readonly BrokerMessage[]): Promise<void> {
    this.ctx.assertWritable();
    const { db } = this.ctx;
    // What this run took is either delivered by now or among `messages` (the queue it went to is drained
    // into them): it is replaced, not kept twice.
    const settled = this.taken;
    if (messages.length === 0 && settled === 0) return;
    const removed = settled > 0 ? db.all('SELECT * FROM broker_messages WHERE seq <= ? ORDER BY seq', [settled]) : [];
    const first = Number(db.one('SELECT coalesce(max(seq), 0) + 1 AS next FROM broker_messages')?.next);
    db.transaction(() => {
      if (settled > 0) db.run('DELETE FROM broker_messages WHERE seq <= ?', [settled]);
      messages.forEach((m, i) => db.run('INSERT INTO broker_messages (seq, topic, payload, retain) VALUES (?, ?, ?, ?)', [first + i, m.topic, m.payload, m.retain ? 1 : 0]));
    });
    this.taken = 0;
    await this.ctx.commit(() => {
      db.run('DELETE FROM broker_messages WHERE seq >= ?', [first]);
      for (const row of removed) {
        const columns = Object.keys(row);
        db.run(`INSERT INTO broker_messages (${columns.join(', ')}) VALUES (${columns.map(() => '?').join(', ')})`, columns.map((c) => row[c] as Param));
      }
      this.taken = Math.max(this.taken, settled);
    });
  }

  take(): BrokerMessage[] {
    this.ctx.assertWritable();
    const { db } = this.ctx;
    const rows = db.all('SELECT seq, topic, payload, retain FROM broker_messages WHERE seq > ? ORDER BY seq', [this.taken]);
    if (rows.length === 0) return [];
    this.taken = Number(rows[rows.length - 1]!.seq);
    return rows.map((r) => ({ topic: String(r.topic), payload: String(r.payload), retain: Number(r.retain) === 1 }));
  }

  delivered(): void {
    this.ctx.assertWritable();
    if (this.taken === 0) return;
    // Not a durable write of its own: should the process die before the next flush, the next start sends
    // them again, which a subscriber of QoS 1 messages must expect anyway.
    this.ctx.db.run('DELETE FROM broker_messages WHERE seq <= ?', [this.taken]);
    this.taken = 0;
    this.ctx.queued();
  }
}
