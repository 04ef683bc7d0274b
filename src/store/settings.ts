// Configuration categories written through the API: one JSON object per category, replaced whole.
import type { StoreContext } from './context.js';
import type { SettingsRepository } from './types.js';

export class SqlSettingsRepository implements SettingsRepository {
  constructor(private readonly ctx: StoreContext) {}

  get(category: string): Record<string, unknown> {
    this.ctx.assertOpen();
    const row = this.ctx.db.one('SELECT json FROM settings WHERE category = ?', [category]);
    return row ? (JSON.parse(String(row.json)) as Record<string, unknown>) : {};
  }

  async put(category: string, values: Record<string, unknown>): Promise<void> {
    this.ctx.assertWritable();
    const { db } = this.ctx;
    const undo = db.captureRow('settings', 'category', category);
    db.run('INSERT OR REPLACE INTO settings (category, json) VALUES (?, ?)', [category, JSON.stringify(values)]);
    await this.ctx.commit(undo);
  }
}
