// MQTT messages a clean stop could not hand to the broker, kept in the database until the next start
// takes them: without them a session that ended while the broker was away never had its `ended` event.
import type { StoreContext } from './context.js';
import type { BrokerMessage, BrokerMessageRepository } from './types.js';

export class SqlBrokerMessageRepository implements BrokerMessageRepository {
  constructor(private readonly ctx: StoreContext) {}

  async keep(messages: readonly BrokerMessage[]): Promise<void> {
    this.ctx.assertWritable();
    if (messages.length === 0) return;
    const { db } = this.ctx;
    const first = Number(db.one('SELECT coalesce(max(seq), 0) + 1 AS next FROM broker_messages')?.next);
    db.transaction(() => {
      messages.forEach((m, i) => db.run('INSERT INTO broker_messages (seq, topic, payload, retain) VALUES (?, ?, ?, ?)', [first + i, m.topic, m.payload, m.retain ? 1 : 0]));
    });
    await this.ctx.commit(() => db.run('DELETE FROM broker_messages WHERE seq >= ?', [first]));
  }

  take(): BrokerMessage[] {
    this.ctx.assertWritable();
    const { db } = this.ctx;
    const rows = db.all('SELECT topic, payload, retain FROM broker_messages ORDER BY seq');
    if (rows.length === 0) return [];
    // Not a durable write of its own: should the process die before the next flush, the next start sends
    // them again, which a subscriber of QoS 1 messages must expect anyway.
    db.run('DELETE FROM broker_messages');
    this.ctx.queued();
    return rows.map((r) => ({ topic: String(r.topic), payload: String(r.payload), retain: Number(r.retain) === 1 }));
  }
}
