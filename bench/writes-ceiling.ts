// The bare ceiling for the writes benchmark: Bun.serve + bun:sqlite inserting the same records
// into the same table as baas (system columns, the record's fields, the owner index), with nothing else:
// no rules, catalog, validation, hooks or full-text index. `bun bench/writes-ceiling.ts <db-file>`
// prints "listening on http://127.0.0.1:<port>".
import { Database } from "bun:sqlite";
import { monotonicFactory } from "ulid";

const db = new Database(process.argv[2], { create: true, strict: true });
db.exec("PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON; PRAGMA busy_timeout = 5000");
// The same table as baas creates for a collection: system columns, one column per field, the owner index.
db.exec(`CREATE TABLE IF NOT EXISTS items (_id TEXT PRIMARY KEY NOT NULL, _created_at INTEGER NOT NULL, _updated_at INTEGER NOT NULL,
  _owner_id TEXT, _deleted_at INTEGER, title TEXT, category TEXT, score REAL, body TEXT)`);
db.exec(`CREATE INDEX IF NOT EXISTS _idx_items_owner ON items (_owner_id, _id)`);

const ulid = monotonicFactory();
const insert = db.query(
  `INSERT INTO items (_id, _created_at, _updated_at, _owner_id, _deleted_at, title, category, score, body) VALUES (?, ?, ?, NULL, NULL, ?, ?, ?, ?)`,
);

function add(o: Record<string, unknown>) {
  const now = Date.now();
  const id = ulid(now);
  insert.run(id, now, now, (o.title as string) ?? null, (o.category as string) ?? null, (o.score as number) ?? null, (o.body as string) ?? null);
  return { _id: id, _created_at: now, _updated_at: now, _owner_id: null, _deleted_at: null, title: o.title ?? null, category: o.category ?? null, score: o.score ?? null, body: o.body ?? null };
}
const one = db.transaction((o: Record<string, unknown>) => add(o));
const bulk = db.transaction((xs: Record<string, unknown>[]) => xs.map(add));

const server = Bun.serve({
  port: 0,
  hostname: "127.0.0.1",
  async fetch(req) {
    const p = new URL(req.url).pathname;
    if (p === "/health") return Response.json({ status: "ok" });
    if (p === "/api/v1/items" && req.method === "POST") return Response.json(one.immediate((await req.json()) as Record<string, unknown>), { status: 201 });
    if (p === "/api/v1/items/bulk" && req.method === "POST")
      return Response.json(bulk.immediate((await req.json()) as Record<string, unknown>[]), { status: 201 });
    return new Response("not found", { status: 404 });
  },
});
process.stderr.write(`listening on http://127.0.0.1:${server.port}\n`);
