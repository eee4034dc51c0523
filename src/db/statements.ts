import type { Database, Statement } from "bun:sqlite";

/**
 * Most statements kept per connection. The SQL text of baas comes from a bounded set of shapes (system
 * tables, and per collection its reads and writes), so the cache rarely fills; when it does, it starts over.
 */
export const MAX_STATEMENTS = 2000;

/**
 * The prepared statements of one bun:sqlite connection, by SQL text. bun:sqlite's own `query()` cache keeps
 * 20 statements and searches them in a list, so a server using more than 20 distinct statements (each
 * collection has its own) prepared them again and again; here each is prepared once and found by one
 * hash lookup. `clear` finalizes them: call it before closing the connection, which stays open otherwise.
 * A `get` that finds the cache full clears it too, so run a statement as soon as it is got: one kept
 * across any other `get` (a later turn, another read) may be finalized by then.
 */
export class StatementCache {
  private readonly byText = new Map<string, Statement>();

  constructor(private readonly db: Database) {}

  get(sql: string): Statement {
    let statement = this.byText.get(sql);
    if (statement === undefined) {
      statement = this.db.prepare(sql);
      if (this.byText.size >= MAX_STATEMENTS) this.clear();
      this.byText.set(sql, statement);
    }
    return statement;
  }

  get size(): number {
    return this.byText.size;
  }

  clear(): void {
    for (const statement of this.byText.values()) statement.finalize();
    this.byText.clear();
  }
}
