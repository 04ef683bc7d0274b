// The JSON that rows hold in text columns, checked once as a file is opened. SQLite's integrity check
// passes a file whose JSON text is cut short or made by hand, and each read of such a row threw from
// JSON.parse: every session start (which reads the `voice` category) answered 500, and `config check`
// printed a stack trace, for as long as the service ran.
import { StoreCorruptError, type SqlDb } from './database.js';

/** Column, its table's key column and the JSON type each row must hold there. */
const JSON_COLUMNS: ReadonlyArray<{ table: string; key: string; column: string; type: 'object' | 'array' }> = [
  { table: 'settings', key: 'category', column: 'json', type: 'object' },
  { table: 'devices', key: 'id', column: 'capabilities', type: 'array' },
  { table: 'sessions', key: 'id', column: 'config', type: 'object' },
];

/** Throws StoreCorruptError naming the first row whose JSON column does not hold what it must. */
export function assertRowsReadable(db: SqlDb, file: string): void {
  for (const { table, key, column, type } of JSON_COLUMNS) {
    // json_type() throws on text that is not JSON: asked only of valid text.
    const bad = db.one(
      `SELECT ${key} AS k FROM ${table} WHERE CASE WHEN json_valid(${column}) THEN json_type(${column}) IS NOT '${type}' ELSE 1 END LIMIT 1`,
    );
    if (bad) throw new StoreCorruptError(file, `${table} row ${JSON.stringify(String(bad.k))} has no JSON ${type} in ${column}`);
  }
}
