// The tables and columns the migrations make, read from their SQL text rather than by running them on a
// second, in-memory database: that database cost every start with an existing file 1.5-3 MiB of
// resident memory (sql.js' heap grows and never gives back), on a service whose whole idle footprint is
// under 60 MiB. The migrations are our own plain DDL; a test holds this reading to what SQLite makes of
// them, so a migration it cannot read fails there, not on a user's board.

/** Table name to its column names, in the order the migrations make them. */
export type SchemaShape = Map<string, Set<string>>;

/** Words that start a table constraint, not a column, inside CREATE TABLE's parentheses. */
const CONSTRAINTS = new Set(['CONSTRAINT', 'PRIMARY', 'UNIQUE', 'CHECK', 'FOREIGN']);

/** An SQL name: quoted (which may hold spaces and commas) or a bare word. */
const NAME = String.raw`("[^"]*"|\`[^\`]*\`|\[[^\]]*\]|[^\s(]+)`;
const unquote = (name: string): string => (/^["`[]/.test(name) ? name.slice(1, -1) : name);
const LEADING_NAME = new RegExp(`^${NAME}`);
const CREATE_TABLE = new RegExp(String.raw`^CREATE\s+TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?${NAME}\s*\(([\s\S]*)\)\s*(?:WITHOUT\s+ROWID|STRICT|,|\s)*$`, 'i');
const ADD_COLUMN = new RegExp(String.raw`^ALTER\s+TABLE\s+${NAME}\s+ADD\s+(?:COLUMN\s+)?${NAME}`, 'i');
const DROP_TABLE = new RegExp(String.raw`^DROP\s+TABLE\s+(?:IF\s+EXISTS\s+)?${NAME}\s*$`, 'i');
const leadingName = (text: string): string => LEADING_NAME.exec(text)![1]!;

/** Splits at `separator` outside parentheses and quotes. */
function splitTopLevel(text: string, separator: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let quote: string | undefined;
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (quote) {
      if (c === quote) quote = undefined;
    } else if (c === "'" || c === '"' || c === '`') quote = c;
    else if (c === '(') depth++;
    else if (c === ')') depth--;
    else if (c === separator && depth === 0) {
      parts.push(text.slice(start, i));
      start = i + 1;
    }
  }
  parts.push(text.slice(start));
  return parts.map((p) => p.trim()).filter((p) => p !== '');
}

/** The shape the migrations give a new database. Throws on a statement about tables it cannot read. */
export function schemaShape(migrations: readonly string[]): SchemaShape {
  const shape: SchemaShape = new Map();
  for (const statement of migrations.flatMap((m) => splitTopLevel(m, ';'))) {
    const create = CREATE_TABLE.exec(statement);
    const add = ADD_COLUMN.exec(statement);
    const drop = DROP_TABLE.exec(statement);
    if (create) {
      const columns = splitTopLevel(create[2]!, ',')
        .map(leadingName)
        .filter((word) => !CONSTRAINTS.has(word.toUpperCase()))
        .map(unquote);
      shape.set(unquote(create[1]!), new Set(columns));
    } else if (add) {
      const columns = shape.get(unquote(add[1]!));
      if (!columns) throw new Error(`migration adds a column to ${add[1]}, which no earlier migration made`);
      columns.add(unquote(add[2]!));
    } else if (drop) {
      shape.delete(unquote(drop[1]!));
    } else if (/^(ALTER|DROP)\s+TABLE\b|^CREATE\s+(TEMP|TEMPORARY|VIRTUAL)\b/i.test(statement)) {
      throw new Error(`schemaShape cannot read this migration statement: ${statement.slice(0, 80)}`);
    }
  }
  return shape;
}
