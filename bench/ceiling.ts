// The "ceiling": a bare Bun.serve + bun:sqlite program doing the same work as baas for each
// workload, with nothing else (no rules, catalog, validation, hooks). baas is measured as a
// ratio against it. `bun bench/ceiling.ts <db-file>` prints "listening on http://127.0.0.1:<port>".
import { Database } from "bun:sqlite";
import { monotonicFactory } from "ulid";

const db = new Database(process.argv[2], { create: true, strict: true });
db.exec("PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON; PRAGMA busy_timeout = 5000");
db.exec(`CREATE TABLE IF NOT EXISTS items (_id TEXT PRIMARY KEY, _created_at INTEGER NOT NULL, _updated_at INTEGER NOT NULL,
  _owner_id TEXT, _deleted_at INTEGER, title TEXT, category TEXT, score REAL, body TEXT)`);
db.exec(`CREATE INDEX IF NOT EXISTS items_cat_score ON items (category, score, _deleted_at)`);
db.exec(`CREATE VIRTUAL TABLE IF NOT EXISTS items_fts USING fts5(title, body, content='items', content_rowid='rowid', tokenize='porter unicode61')`);
db.exec(`CREATE TRIGGER IF NOT EXISTS items_ai AFTER INSERT ON items BEGIN
  INSERT INTO items_fts(rowid, title, body) VALUES (new.rowid, new.title, new.body); END`);
db.exec(`CREATE TABLE IF NOT EXISTS users (id TEXT PRIMARY KEY, email TEXT UNIQUE, hash TEXT)`);
db.exec(`CREATE TABLE IF NOT EXISTS sessions (id TEXT PRIMARY KEY, user_id TEXT, created_at INTEGER)`);

const ulid = monotonicFactory();
const cols = ["_id", "_created_at", "_updated_at", "_owner_id", "_deleted_at", "title", "category", "score", "body"];
const select = `SELECT ${cols.join(", ")} FROM items`;
const insert = db.query(`INSERT INTO items (${cols.join(", ")}) VALUES (?, ?, ?, NULL, NULL, ?, ?, ?, ?)`);
const byId = db.query(`${select} WHERE _id = ?`);
const list = db.query(`${select} WHERE _deleted_at IS NULL AND category = ? ORDER BY score DESC, _id ASC LIMIT 51`);
const count = db.query(`SELECT COUNT(*) AS n FROM items WHERE _deleted_at IS NULL AND category = ?`);
const search = db.query(
  `SELECT ${cols.map((c) => "i." + c).join(", ")} FROM items_fts JOIN items i ON i.rowid = items_fts.rowid
   WHERE items_fts MATCH ? AND i._deleted_at IS NULL ORDER BY bm25(items_fts), i._id LIMIT 51`,
);
const searchCount = db.query(
  `SELECT COUNT(*) AS n FROM items_fts JOIN items i ON i.rowid = items_fts.rowid WHERE items_fts MATCH ? AND i._deleted_at IS NULL`,
);
const userByEmail = db.query(`SELECT id, hash FROM users WHERE email = ?`);
const insertSession = db.query(`INSERT INTO sessions (id, user_id, created_at) VALUES (?, ?, ?)`);

function add(o: Record<string, unknown>) {
  const now = Date.now();
  const id = ulid(now);
  insert.run(id, now, now, (o.title as string) ?? null, (o.category as string) ?? null, (o.score as number) ?? null, (o.body as string) ?? null);
  return { _id: id, _created_at: now, _updated_at: now, _owner_id: null, _deleted_at: null, title: o.title ?? null, category: o.category ?? null, score: o.score ?? null, body: o.body ?? null };
}
const bulk = db.transaction((xs: Record<string, unknown>[]) => xs.map(add));

function hmac(data: string) {
  return new Bun.CryptoHasher("sha256", "ceiling-key").update(data).digest("base64url");
}

const server = Bun.serve({
  port: 0,
  hostname: "127.0.0.1",
  async fetch(req) {
    const url = new URL(req.url);
    const p = url.pathname;
    if (p === "/health") return Response.json({ status: "ok" });
    if (p === "/api/v1/items" && req.method === "POST") return Response.json(add((await req.json()) as Record<string, unknown>), { status: 201 });
    if (p === "/api/v1/items/bulk") return Response.json(bulk((await req.json()) as Record<string, unknown>[]), { status: 201 });
    if (p === "/api/v1/items" && req.method === "GET") {
      const q = url.searchParams.get("search");
      if (q) {
        const items = search.all(q) as Record<string, unknown>[];
        const more = items.length > 50;
        if (more) items.pop();
        return Response.json({ items, next_cursor: more ? items[49]._id : null, total: (searchCount.get(q) as { n: number }).n });
      }
      const cat = (url.searchParams.get("filter") ?? "").split(":")[2] ?? "";
      const items = list.all(cat) as Record<string, unknown>[];
      const more = items.length > 50;
      if (more) items.pop();
      return Response.json({ items, next_cursor: more ? items[49]._id : null, total: (count.get(cat) as { n: number }).n });
    }
    if (p.startsWith("/api/v1/items/")) {
      const row = byId.get(p.slice("/api/v1/items/".length));
      return row ? Response.json(row) : Response.json({ error: "not found" }, { status: 404 });
    }
    if (p === "/api/v1/auth/register") {
      const b = (await req.json()) as { email: string; password: string };
      db.query(`INSERT INTO users (id, email, hash) VALUES (?, ?, ?)`).run(ulid(), b.email, await Bun.password.hash(b.password, { algorithm: "argon2id" }));
      return Response.json({ ok: true }, { status: 201 });
    }
    if (p === "/api/v1/auth/login") {
      const b = (await req.json()) as { email: string; password: string };
      const u = userByEmail.get(b.email) as { id: string; hash: string } | null;
      if (!u || !(await Bun.password.verify(b.password, u.hash))) return Response.json({ error: "invalid" }, { status: 401 });
      const sid = ulid();
      insertSession.run(sid, u.id, Date.now());
      const body = Buffer.from(JSON.stringify({ sub: u.id, sid, exp: Math.floor(Date.now() / 1000) + 900 })).toString("base64url");
      return Response.json({ access_token: `h.${body}.${hmac(body)}`, refresh_token: sid, expires_in: 900, token_type: "Bearer" });
    }
    return new Response("not found", { status: 404 });
  },
});
process.stderr.write(`listening on http://127.0.0.1:${server.port}\n`);
